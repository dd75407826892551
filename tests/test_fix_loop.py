"""The fix loop with rules defined in the tests: safe fixes, overlapping fixes resolved
in a fixed order, shared edits applied once, fixes that break the file dropped and
reported, and a loop that does not settle."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import HAZARD, check
from synthetic_rules import use_synthetic_rules

from ddplint.engine import lint_source
from ddplint.fix import choose_fixes
from ddplint.fixer import MAX_PASSES, fix_source
from ddplint.settings import LintOptions


@pytest.fixture(autouse=True)
def synthetic(monkeypatch: pytest.MonkeyPatch) -> None:
    use_synthetic_rules(monkeypatch)


def options(*codes: str) -> LintOptions:
    return LintOptions(selected=codes, project_root=".")


def test_same_start_overlap_is_decided_by_rule_code_not_rule_order() -> None:
    raw = b"x = wrap(1)\n"
    findings = lint_source("a.py", raw, options("TST004", "TST002")).findings
    assert sorted(f.rule for f in findings) == ["TST002", "TST004"]
    for ordered in (findings, list(reversed(findings))):
        chosen, edits = choose_fixes(ordered, unsafe=False)
        assert [f.rule for f in chosen] == ["TST002"]
        assert [e.content for e in edits] == ["1"]


def test_overlapping_fixes_wait_for_the_next_pass() -> None:
    raw = b"y = wrap(old_api(1))  # keep me\n"
    fixed = fix_source("a.py", raw, options("TST001", "TST002"), unsafe=False)
    # Pass 1: the outer fix (earlier in the file) wins; pass 2 renames what is left.
    assert [f.rule for f in fixed.fixed] == ["TST002", "TST001"]
    assert fixed.after == "y = new_api(1)  # keep me\n"
    assert fixed.remaining.findings == [] and fixed.errors == []


def test_shared_import_edit_is_applied_once() -> None:
    raw = b"import torch\n\nsetup(timeout=60)\nother(timeout=1800)\n"
    findings = lint_source("a.py", raw, options("TST006")).findings
    assert len(findings) == 2
    assert findings[0].fix is not None and findings[1].fix is not None
    shared = set(findings[0].fix.edits) & set(findings[1].fix.edits)
    assert [e.content for e in shared] == ["from datetime import timedelta\n"]
    chosen, edits = choose_fixes(findings, unsafe=False)
    assert len(chosen) == 2 and len(edits) == 3
    fixed = fix_source("a.py", raw, options("TST006"), unsafe=False)
    assert fixed.after == (
        "import torch\nfrom datetime import timedelta\n\n"
        "setup(timeout=timedelta(seconds=60))\nother(timeout=timedelta(seconds=1800))\n"
    )
    assert fixed.remaining.findings == []


def test_fix_that_breaks_the_file_is_dropped_others_kept() -> None:
    raw = b"old_api()\nmarker()\n"
    fixed = fix_source("a.py", raw, options("TST001", "TST005"), unsafe=False)
    assert fixed.after == "new_api()\nmarker()\n"
    (error,) = fixed.errors
    assert error.rule == "TST005" and (error.line, error.column) == (2, 1)
    assert "fix for TST005 dropped: the result does not parse" in error.message
    assert [f.rule for f in fixed.remaining.findings] == ["TST005"]


def test_fixes_that_never_settle_stop_with_an_error() -> None:
    fixed = fix_source("a.py", b"n = 1\n", options("TST007"), unsafe=False)
    assert fixed.after == f"n = {1 + MAX_PASSES}\n"
    (error,) = fixed.errors
    assert error.rule == "TST007" and "did not settle" in error.message


def test_cli_breaking_fix_leaves_the_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "job.py"
    original = b"import os\r\n\r\nmarker()  # keep\r\n"
    path.write_bytes(original)
    code, out, err = check("--fix", "--select", "TST005", "job.py")
    assert code == 2
    assert path.read_bytes() == original
    assert "job.py:3:1: error: fix for TST005 dropped: the result does not parse" in err
    assert "job.py:3:1: TST005 [*] warning: `marker()` called" in out


def test_cli_fix_then_second_run_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "job.py"
    path.write_text('"""Job."""\n\nrun(timeout=30)\nwrap(old_api(2))\n')
    args = ("--fix", "--select", "TST001,TST002,TST006", "job.py")
    code, out, _ = check(*args)
    assert (code, out.strip()) == (0, "Found 3 findings (3 fixed, 0 remaining).")
    first = path.read_bytes()
    assert first == (
        b'"""Job."""\nfrom datetime import timedelta\n\n'
        b"run(timeout=timedelta(seconds=30))\nnew_api(2)\n"
    )
    code, out, _ = check(*args)
    assert (code, out.strip(), path.read_bytes()) == (0, "All checks passed.", first)


def test_cli_diff_of_a_file_without_final_newline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "job.py").write_bytes(b"x = 1\nold_api()")
    code, out, err = check("--diff", "--select", "TST001", "job.py")
    assert code == 1 and err == "Would fix 1 finding in 1 file.\n"
    assert out == (
        "--- a/job.py\n+++ b/job.py\n@@ -1,2 +1,2 @@\n x = 1\n"
        "-old_api()\n\\ No newline at end of file\n"
        "+new_api()\n\\ No newline at end of file\n"
    )
    assert (tmp_path / "job.py").read_bytes() == b"x = 1\nold_api()"


def test_fix_the_file_encoding_cannot_hold_is_dropped() -> None:
    raw = "# -*- coding: latin-1 -*-\n# café\nlegacy()\nold_api()\n".encode("latin-1")
    fixed = fix_source("a.py", raw, options("TST001", "TST003"), unsafe=False)
    assert fixed.raw_after == raw.replace(b"old_api", b"new_api")
    (error,) = fixed.errors
    assert error.rule == "TST003"
    assert error.message == (
        "fix for TST003 dropped: the result cannot be written as iso-8859-1 ('новый')"
    )
    utf8 = raw.decode("latin-1").replace("latin-1", "utf-8").encode("utf-8")
    fixed = fix_source("a.py", utf8, options("TST003"), unsafe=False)
    assert fixed.errors == [] and "новый()" in fixed.after


def test_per_file_ignores_hold_during_fix_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ddplint]\nper-file-ignores = { "net.py" = ["DDP101"] }\n'
    )
    path = tmp_path / "net.py"
    path.write_text(HAZARD.replace("return x", "return old_api(x)"))
    code, out, _ = check("--fix", "--unsafe-fixes", "--select", "DDP101,TST001", "net.py")
    assert (code, out.strip()) == (0, "Found 1 finding (1 fixed, 0 remaining).")
    assert path.read_text() == HAZARD.replace("return x", "return new_api(x)")
