"""Habits a ruff user brings: text on stdin (`check -` with `--stdin-filename`),
fixes shown as diffs in `--output-format full`, `ddplint rule CODE`, `--add-noqa`,
`--watch`."""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from cli_support import HAZARD, SYNC
from click.testing import CliRunner

from ddplint.cli import cli

#: Seconds: waits fail only for a run that never ends.
HANG_GUARD = 600


def run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    """``ddplint ARGS`` in this process, with ``stdin`` as its input."""
    result = CliRunner().invoke(cli, list(args), input=stdin, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DDPLINT_OUTPUT_FORMAT", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    # DDP101, the sample hazard, is opt-in since issue 23.
    (tmp_path / "pyproject.toml").write_text('[tool.ddplint]\nextend-select = ["DDP101"]\n')
    return tmp_path


# -- stdin --------------------------------------------------------------------------------
def test_stdin_is_linted_as_the_named_file(project: Path) -> None:
    code, out, _ = run("check", "--no-cache", "-", "--stdin-filename", "pkg/net.py", stdin=HAZARD)
    assert code == 1 and out.startswith("pkg/net.py:7:9: DDP101 ")
    assert not (project / "pkg").exists()


def test_stdin_without_a_name_is_python(project: Path) -> None:
    code, out, _ = run("check", "--no-cache", "-", stdin=HAZARD)
    assert code == 1 and out.startswith("stdin.py:7:9: DDP101 ")
    assert run("check", "--no-cache", "-", stdin="x = 1\n")[:2] == (0, "All checks passed.\n")


def test_stdin_follows_the_named_files_settings(project: Path) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.ddplint]\nextend-select = ["DDP101"]\nper-file-ignores = { "gen/*" = ["DDP101"] }\n'
    )
    assert run("check", "--no-cache", "--stdin-filename", "gen/net.py", stdin=HAZARD)[0] == 0
    assert run("check", "--no-cache", "--stdin-filename", "src/net.py", stdin=HAZARD)[0] == 1


def test_stdin_full_output_shows_the_code_frame(project: Path) -> None:
    code, out, _ = run(
        "check",
        "--no-cache",
        "--output-format",
        "full",
        "-",
        "--stdin-filename",
        "net.py",
        stdin=HAZARD,
    )
    assert code == 1 and "  > 7 | " + SYNC.rstrip("\n") in out


def test_stdin_fixed_text_goes_to_stdout(project: Path) -> None:
    """ruff's format-on-save form: the fixed text on stdout, what is left on stderr."""
    args = ("check", "--no-cache", "-", "--stdin-filename", "net.py")
    code, out, err = run(*args[:2], "--fix", "--unsafe-fixes", *args[2:], stdin=HAZARD)
    assert (code, out) == (0, HAZARD.replace(SYNC, ""))
    code, out, err = run(*args[:2], "--fix", *args[2:], stdin=HAZARD)
    assert (code, out) == (1, HAZARD) and err.startswith("net.py:7:9: DDP101 ")
    code, out, err = run(*args[:2], "--fix-only", *args[2:], stdin=HAZARD)
    assert (code, out, err) == (0, HAZARD, "")
    code, out, _ = run(*args[:2], "--diff", "--unsafe-fixes", *args[2:], stdin=HAZARD)
    assert code == 1 and out.startswith("--- a/net.py\n+++ b/net.py\n")
    assert f"-{SYNC}" in out
    assert not (project / "net.py").exists()


def test_stdin_takes_no_noqa_or_baseline(project: Path) -> None:
    code, _, err = run("check", "--add-noqa", "-", stdin=HAZARD)
    assert code == 2 and "cannot take --add-noqa or baselines" in err
    code, _, err = run("check", "-", "net.py", stdin=HAZARD)
    assert code == 2 and "cannot be mixed" in err


# -- full output, rule ------------------------------------------------------------------
def test_full_output_shows_the_fix_as_a_diff(project: Path) -> None:
    (project / "net.py").write_text(HAZARD)
    code, out, _ = run("check", "--no-cache", "--output-format", "full", "net.py")
    assert code == 1
    help_line = "  = help: Remove the host synchronisation (unsafe, --unsafe-fixes)\n"
    diff = out.split(help_line, 1)[1].split("\n\n", 1)[0].splitlines()
    assert diff[0].startswith("    @@ -")
    assert "    -" + SYNC.rstrip("\n") in diff
    assert not any(line.startswith("    +") for line in diff)


def test_rule_runs_explain_and_names_it(project: Path) -> None:
    code, out, err = run("rule", "DDP201")
    assert code == 0 and out == run("explain", "DDP201")[1]
    assert "the command is `ddplint explain DDP201`" in err


# -- add-noqa ---------------------------------------------------------------------------
#: Two DDP101 findings on line 7: one `# noqa: DDP101` silences both.
TWO_ON_A_LINE = HAZARD.replace(SYNC, "        torch.cuda.synchronize(); torch.cuda.synchronize()\n")


def test_add_noqa_silences_every_finding_once(project: Path) -> None:
    (project / "net.py").write_text(HAZARD.replace(SYNC, SYNC.rstrip("\n") + "  # noqa: E501\n"))
    (project / "two.py").write_text(TWO_ON_A_LINE)
    code, _, err = run("check", "--no-cache", "--add-noqa")
    assert code == 0 and "Added 2 noqa directives." in err
    assert "torch.cuda.synchronize()  # noqa: E501, DDP101\n" in (project / "net.py").read_text()
    assert (project / "two.py").read_text().count("# noqa: DDP101") == 1
    assert run("check", "--no-cache")[:2] == (0, "All checks passed.\n")
    assert run("check", "--no-cache", "--add-noqa")[2].strip() == "Added 0 noqa directives."


# -- watch ------------------------------------------------------------------------------
def _next_line_with(lines: queue.Queue[str], text: str) -> str:
    """The next line of the watching process that holds ``text`` (hang guard: a run
    that never prints it fails)."""
    while True:
        line = lines.get(timeout=HANG_GUARD)
        if text in line:
            return line


def _pump(process: subprocess.Popen[str], lines: queue.Queue[str]) -> None:
    """Hand each line the process prints to ``lines``."""
    assert process.stdout is not None
    for line in process.stdout:
        lines.put(line)


def test_watch_lints_again_when_a_file_changes(project: Path) -> None:
    (project / "net.py").write_text(HAZARD)
    process = subprocess.Popen(
        [sys.executable, "-m", "ddplint", "check", "--no-cache", "--watch", "net.py"],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=_pump, args=(process, lines))
    reader.start()
    try:
        _next_line_with(lines, "Starting ddplint in watch mode")
        _next_line_with(lines, "Found 1 finding.")
        (project / "net.py").write_text(HAZARD.replace(SYNC, ""))
        _next_line_with(lines, "File change detected")
        _next_line_with(lines, "All checks passed.")
    finally:
        process.terminate()
        process.wait(timeout=HANG_GUARD)
        reader.join(timeout=HANG_GUARD)


def test_watch_only_reports(project: Path) -> None:
    code, _, err = run("check", "--watch", "--fix")
    assert code == 2 and "--watch only reports" in err
