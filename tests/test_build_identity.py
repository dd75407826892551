"""The cache key names the code that made a result: a checkout whose sources change
under the same version does not reuse results made by other code."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ddplint import __version__
from ddplint.build_identity import build_identity, sources_digest
from ddplint.settings import LintOptions


def _package(tmp_path: Path) -> Path:
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "sub" / "rule.py").write_text("X = 1\n")
    return root


def test_a_rewritten_source_changes_the_digest(tmp_path: Path) -> None:
    root = _package(tmp_path)
    before = sources_digest([root])
    rule = root / "sub" / "rule.py"
    rule.write_text("X = 2\n")
    stat = rule.stat()
    os.utime(rule, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert sources_digest([root]) != before


def test_an_added_or_renamed_source_changes_the_digest(tmp_path: Path) -> None:
    root = _package(tmp_path)
    before = sources_digest([root])
    (root / "sub" / "rule.py").rename(root / "sub" / "other.py")
    renamed = sources_digest([root])
    (root / "new.py").write_text("")
    assert len({before, renamed, sources_digest([root])}) == 3


def test_byte_compiled_caches_and_other_files_do_not_change_it(tmp_path: Path) -> None:
    root = _package(tmp_path)
    before = sources_digest([root])
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "rule.cpython-311.pyc").write_bytes(b"\0")
    (root / "notes.txt").write_text("x")
    assert sources_digest([root]) == before


def test_the_settings_fingerprint_changes_with_the_running_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    identity = build_identity()
    assert identity.startswith(f"{__version__}+") and len(identity) > len(__version__) + 8
    options = LintOptions(selected=("DDP201",), project_root="/p")
    same = options.fingerprint()
    monkeypatch.setattr("ddplint.settings.build_identity", lambda: f"{__version__}+other")
    assert options.fingerprint() != same
