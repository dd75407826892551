"""Discovery's shortcuts answer as the slow forms do: the compiled excludes as
``fnmatch`` pattern by pattern, the ``Resolver`` as ``Path.resolve()``."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

import pytest

from ddplint.discover import Resolver, display_path, is_excluded
from ddplint.settings import Settings

PATTERNS = (*Settings(project_root=Path(".")).all_excludes, "a/b/*.py", "[xy]*", "?emo", "t*/x")
PATHS = ("build/x.py", "src/pkg/a.py", "a/b/c.py", "a/b/c/d.py", "x/y.py", "demo/z.py", "tt/x")


def excluded_one_by_one(relative: str, patterns: tuple[str, ...], named_depth: int) -> bool:
    parts = relative.split("/")
    for depth in range(named_depth, len(parts)):
        leading = "/".join(parts[: depth + 1])
        for pattern in patterns:
            if fnmatch.fnmatchcase(leading, pattern):
                return True
            if "/" not in pattern and fnmatch.fnmatchcase(parts[depth], pattern):
                return True
    return False


@pytest.mark.parametrize("patterns", [PATTERNS, (), ("*.py",)])
def test_compiled_excludes_match_as_fnmatch_does(patterns: tuple[str, ...]) -> None:
    for relative in PATHS:
        for depth in range(3):
            expected = excluded_one_by_one(relative, patterns, depth)
            assert is_excluded(relative, patterns, depth) == expected, (relative, depth)


def test_the_resolver_answers_as_resolve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "a.py").write_text("")
    (tmp_path / "linked").symlink_to(tmp_path / "real", target_is_directory=True)
    (tmp_path / "real" / "b.py").symlink_to(tmp_path / "real" / "a.py")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    monkeypatch.chdir(tmp_path / "real")
    resolver = Resolver()
    for path in (
        Path("a.py"),
        Path("b.py"),
        tmp_path / "linked" / "a.py",
        tmp_path / "linked" / "b.py",
        Path("../linked/a.py"),
        Path("missing.py"),
        tmp_path / "loop",
        Path("."),
    ):
        expected = os.path.abspath(path) if path.name == "loop" else str(path.resolve())
        assert resolver.file(path) == expected, path
        assert display_path(path, resolver) == display_path(path), path
    assert display_path(tmp_path / "linked" / "a.py") == "a.py"
