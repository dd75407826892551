"""The command line a ruff user expects: fix flags, concise lines, summaries that count
errors, skipped and binary files, noqa hints, --show-settings / --show-files."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import HAZARD
from cli_support import check as run
from click.testing import CliRunner

from ddplint.cli import cli

#: DDP404 (safe fix) on line 4 and DDP101 (unsafe fix) on line 9.
MIXED = """\
import torch
from torch.utils.data import DataLoader

loader = DataLoader(range(3), persistent_workers=True)


class Net(torch.nn.Module):
    def forward(self, x):
        torch.cuda.synchronize()
        return x
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("DDPLINT_OUTPUT_FORMAT", raising=False)
    (tmp_path / "net.py").write_text(MIXED)
    return tmp_path


def test_unsafe_fixes_alone_writes_nothing_and_shows_them_fixable(project: Path) -> None:
    code, out, _ = run("--unsafe-fixes")
    assert code == 1 and (project / "net.py").read_text() == MIXED
    assert "net.py:9:9: DDP101 [*] warning:" in out
    assert "Found 2 findings. (2 fixable with --fix)" in out
    code, out, _ = run()
    assert "net.py:4:31: DDP404 [*] `persistent_workers=True`" in out
    assert "net.py:9:9: DDP101 warning:" in out  # no [*]: unsafe, not enabled
    assert "(1 fixable with --fix; 1 more fixable with --fix --unsafe-fixes)" in out


def test_fix_with_unsafe_fixes_writes_both(project: Path) -> None:
    code, out, _ = run("--fix", "--unsafe-fixes")
    assert (code, out.strip()) == (0, "Found 2 findings (2 fixed, 0 remaining).")
    text = (project / "net.py").read_text()
    assert "persistent_workers=False" in text and "synchronize" not in text


def test_no_fix_overrides_fix(project: Path) -> None:
    code, _, _ = run("--fix", "--no-fix")
    assert code == 1 and (project / "net.py").read_text() == MIXED


def test_show_fixes_lists_what_was_fixed(project: Path) -> None:
    code, out, _ = run("--fix", "--show-fixes")
    assert code == 1
    assert (
        "Fixed 1 finding:\n- net.py:\n    1 \u00d7 DDP404 (dataloader-persistent-no-workers)\n"
        in out
    )
    assert out.rstrip().endswith(
        "Found 2 findings (1 fixed, 1 remaining; 1 fixable with --fix --unsafe-fixes)."
    )


def test_fix_only_reports_nothing_left(project: Path) -> None:
    code, out, _ = run("--fix-only")
    assert (code, out) == (0, "Fixed 1 finding.\n")
    assert "persistent_workers=False" in (project / "net.py").read_text()
    code, out, _ = run("--fix-only", "--exit-non-zero-on-fix")
    assert (code, out) == (0, "No fixes applied.\n")  # the safe fix is done; DDP101 stays


def test_fix_only_exit_non_zero_on_fix(project: Path) -> None:
    code, out, _ = run("--fix-only", "--exit-non-zero-on-fix", "--show-fixes")
    assert code == 1 and out.startswith("Fixed 1 finding:\n- net.py:\n")


def test_exit_non_zero_on_fix_when_nothing_is_left(project: Path) -> None:
    (project / "net.py").write_text(MIXED.split("\n\nclass")[0] + "\n")
    code, out, _ = run("--fix", "--exit-non-zero-on-fix")
    assert (code, out.strip()) == (1, "Found 1 finding (1 fixed, 0 remaining).")
    assert run("--fix", "--exit-non-zero-on-fix")[0] == 0  # nothing fixed this time


def test_colour_follows_force_color_and_no_color(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, plain, _ = run()
    assert "\x1b[" not in plain  # not a terminal
    monkeypatch.setenv("FORCE_COLOR", "1")
    _, coloured, _ = run()
    assert "\x1b[1mnet.py:4:31:\x1b[0m \x1b[31m\x1b[1mDDP404\x1b[0m \x1b[36m[*]\x1b[0m" in coloured
    monkeypatch.setenv("NO_COLOR", "1")
    assert run()[1] == plain
    monkeypatch.delenv("NO_COLOR")
    _, machine, _ = run("--output-format", "json")
    assert "\x1b[" not in machine


def test_concise_has_one_hint_after_the_findings(project: Path) -> None:
    _, out, _ = run()
    lines = out.splitlines()
    assert lines[2] == (
        "For why each finding matters: `ddplint explain CODE`, or `--output-format full`."
    )
    assert out.count("ddplint explain") == 1


def test_statistics_show_the_fixable_marker(project: Path) -> None:
    _, out, _ = run("--statistics")
    assert out.splitlines()[:2] == [
        "    1  DDP101      host-sync-in-forward",
        "    1  DDP404  [*] dataloader-persistent-no-workers",
    ]
    _, out, _ = run("--statistics", "--unsafe-fixes")
    assert out.splitlines()[0] == "    1  DDP101  [*] host-sync-in-forward"


def test_statistics_in_machine_formats(project: Path) -> None:
    code, out, _ = run("--statistics", "--output-format", "json")
    assert code == 1
    assert json.loads(out) == [
        {"code": "DDP101", "name": "host-sync-in-forward", "count": 1, "fixable": False},
        {"code": "DDP404", "name": "dataloader-persistent-no-workers", "count": 1, "fixable": True},
    ]
    code, _, err = run("--statistics", "--output-format", "sarif")
    assert code == 2 and "--statistics cannot be written as sarif" in err


def test_errors_are_counted_and_printed_before_the_summary(project: Path) -> None:
    (project / "broken.py").write_text("import torch\ndef f(:\n    torch.cuda.synchronize()\n")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "ddplint",
            "check",
            "--no-cache",
            "-j1",
            "--extend-select",
            "DDP101,DDP404",
        ],
        capture_output=False,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    lines = result.stdout.splitlines()
    assert result.returncode == 2
    assert lines[-2].startswith("broken.py:2:7: error: cannot parse")
    assert lines[-1] == (
        "Found 2 findings and 1 error. (1 fixable with --fix; 1 more fixable with --fix "
        "--unsafe-fixes)"
    )
    (project / "net.py").unlink()
    code, out, _ = run()
    assert (code, out.strip()) == (2, "Found 1 error.")


@pytest.mark.parametrize("where", ["empty", "nothing_to_lint"])
def test_no_files_found_is_a_warning(project: Path, where: str) -> None:
    (project / where).mkdir()
    (project / where / "notes.txt").write_text("hello\n")
    code, out, err = run(where)
    assert (code, out) == (0, "All checks passed.\n")
    assert "ddplint: warning: No Python or YAML files found" in err


def test_binary_file_is_an_error_even_without_trigger_words(project: Path) -> None:
    (project / "x.py").write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00junk")
    (project / "y.yaml").write_bytes(b"a: 1\n\xff\xfe: 2\n")
    code, _, err = run("x.py", "y.yaml")
    assert code == 2
    assert "x.py:1:8: error: file contains NUL bytes (binary content?)" in err
    assert "y.yaml:2:1: error: cannot decode as utf-8" in err


def test_python_that_does_not_parse_is_an_error_even_without_trigger_words(
    project: Path,
) -> None:
    """A broken file that no rule would look at is still reported, as ruff does."""
    (project / "broken.py").write_text("def f(:\n    return 1\n")
    code, out, err = run("broken.py")
    assert (code, out.strip()) == (2, "Found 1 error.")
    assert "broken.py:1:7: error: cannot parse: invalid syntax" in err
    (project / "broken.py").write_text("type Batch = list[int]\n")  # LibCST reads it
    assert run("broken.py")[:2] == (0, "All checks passed.\n")


def test_skipped_files_are_counted(project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.ddplint]\nmax-file-size = 100\n")
    code, out, err = run("net.py")
    assert code == 0
    assert out == "All checks passed. 1 file skipped (see the notices).\n"
    assert "net.py: skipped: " in err and "above max-file-size (100)" in err


def test_unknown_suppression_codes_are_warned_once_per_place(project: Path) -> None:
    (project / "net.py").write_text(
        HAZARD.replace("return x", "return x  # noqa: DDP999, E501  # ddplint: ignore[DDP77]")
    )
    _, _, err = run()
    warnings = [line for line in err.splitlines() if "unknown rule code" in line]
    assert warnings == [
        "ddplint: warning: net.py:8:27: unknown rule code `DDP999` in `# noqa` "
        "(`ddplint rules` lists the codes)",
        "ddplint: warning: net.py:8:59: unknown rule code `DDP77` in `# ddplint: ignore` "
        "(`ddplint rules` lists the codes)",
    ]


def test_bare_noqa_note_names_each_findings_code_and_line(project: Path) -> None:
    (project / "net.py").write_text(HAZARD.replace("synchronize()", "synchronize()  # noqa"))
    (project / "other.py").write_text(MIXED.replace("=True)", "=True)  # noqa"))
    code, _, err = run()
    assert code == 1
    lines = err.splitlines()
    start = next(i for i, line in enumerate(lines) if "bare `# noqa`" in line)
    assert lines[start].startswith("ddplint: note: 2 findings reported on a line with a bare")
    assert lines[start + 1 : start + 3] == [
        "  net.py:7: `# noqa: DDP101`",
        "  other.py:4: `# noqa: DDP404`",
    ]


def test_unused_suppression_is_opt_in_and_fixed_safely(project: Path) -> None:
    (project / "net.py").write_text("x = 1  # noqa: E501, DDP101\n")
    assert run()[0] == 0  # DDP900 is off by default
    code, out, _ = run("--extend-select", "DDP900")
    assert code == 1 and "net.py:1:8: DDP900 [*] warning: unused suppression `DDP101`" in out
    assert run("--extend-select", "DDP900", "--fix")[0] == 0
    assert (project / "net.py").read_text() == "x = 1  # noqa: E501\n"


def test_show_settings(project: Path) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.ddplint]\nignore = ["DDP202"]\nextend-exclude = ["gen"]\n'
    )
    code, out, _ = run("--show-settings", "--extend-select", "DDP900")
    assert code == 0
    assert re.search(rf"^Settings file: +{re.escape(str(project / 'pyproject.toml'))}$", out, re.M)
    assert re.search(r"^ignore: +DDP202$", out, re.M)
    assert re.search(r"^extend-exclude: +gen$", out, re.M)
    rules = out.split("Rules")[1]
    assert "  DDP900  unused-suppression" in rules and "DDP404  " in rules
    assert "DDP202" not in rules


def test_show_files(project: Path) -> None:
    (project / "gen").mkdir()
    (project / "gen" / "made.py").write_text("x = 1\n")
    (project / "conf.yaml").write_text("a: 1\n")
    code, out, _ = run("--show-files")
    assert (code, out.splitlines()) == (0, ["conf.yaml", "gen/made.py", "net.py"])
    (project / "pyproject.toml").write_text('[tool.ddplint]\nextend-exclude = ["gen"]\n')
    assert run("--show-files")[1].splitlines() == ["conf.yaml", "net.py"]


def test_top_level_help_keeps_summaries_whole() -> None:
    out = CliRunner().invoke(cli, ["--help"]).output
    commands = out.split("Commands:")[1].strip().splitlines()
    assert len(commands) == 7
    assert all(line.rstrip().endswith(".") and "..." not in line for line in commands)


def test_suppressions_in_a_file_with_cr_line_ends(project: Path) -> None:
    """Comments are read at their own line when lines end at a lone CR (found by the
    fuzzer: DDP900's edit landed past the end of the file)."""
    text = HAZARD.replace("synchronize()", "synchronize()  # noqa: DDP101").replace("\n", "\r")
    (project / "net.py").write_bytes(text.encode())
    assert run("--extend-select", "DDP900")[0] == 0
    (project / "net.py").write_bytes(text.replace("x\r", "x  # noqa: DDP101\r").encode())
    assert run("--extend-select", "DDP900", "--fix")[0] == 0
    assert (project / "net.py").read_bytes() == text.encode()
