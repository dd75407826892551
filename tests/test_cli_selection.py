"""Which rules run, as a ruff user expects: the command line's selection over the
settings file's, `--config KEY = VALUE` overrides, and a warning (never a false
all-clear) when nothing is selected."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import HAZARD
from click.testing import CliRunner

from ddplint.cli import cli


def run(*args: str) -> tuple[int, str, str]:
    """``ddplint check --no-cache ARGS``, selecting nothing beyond what ARGS and the
    settings file say (DDP101, the sample hazard, is opt-in: the file turns it on)."""
    result = CliRunner().invoke(cli, ["check", "--no-cache", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DDPLINT_OUTPUT_FORMAT", raising=False)
    (tmp_path / "net.py").write_text(HAZARD)
    (tmp_path / "pyproject.toml").write_text('[tool.ddplint]\nextend-select = ["DDP101"]\n')
    return tmp_path


def _ignore_in_file(project: Path, codes: str = '"DDP101"') -> None:
    (project / "pyproject.toml").write_text(
        f'[tool.ddplint]\nextend-select = ["DDP101"]\nignore = [{codes}]\n'
    )


def test_command_line_select_beats_the_files_ignore(project: Path) -> None:
    _ignore_in_file(project)
    assert run("net.py")[0] == 0
    code, out, err = run("--select", "DDP101", "net.py")
    assert code == 1 and "net.py:7:9: DDP101" in out and "warning" not in err


def test_command_line_extend_select_beats_the_files_ignore(project: Path) -> None:
    _ignore_in_file(project, '"DDP1"')
    code, out, _ = run("--extend-select", "DDP101", "net.py")
    assert code == 1 and "DDP101" in out


def test_command_line_ignore_still_applies_on_top_of_the_file(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.ddplint]\nselect = ["DDP101"]\n')
    code, out, err = run("--ignore", "DDP101", "net.py")
    assert code == 0 and "DDP101" not in out
    assert "no rule is selected" in err


def test_an_empty_selection_warns_and_never_says_all_checks_passed(project: Path) -> None:
    code, out, err = run("--select", "DDP101", "--ignore", "DDP101", "net.py")
    assert code == 0
    assert "All checks passed." not in out
    assert out.strip() == "Nothing checked: no rule is selected."
    assert "ddplint: warning: no rule is selected" in err and "--show-settings" in err


def test_show_settings_names_the_command_lines_layer(project: Path) -> None:
    _ignore_in_file(project)
    code, out, _ = run("--show-settings", "--select", "DDP101")
    assert code == 0
    assert "command line:" in out and "--select DDP101 (over the file's)" in out
    assert "  DDP101  " in out.split("Rules selected (1):")[1]


def test_config_override_sets_one_key(project: Path) -> None:
    code, out, _ = run("--config", "ignore = ['DDP101']", "net.py")
    assert (code, out.strip()) == (0, "All checks passed.")
    _ignore_in_file(project)
    code, out, _ = run("--config", "ignore = []", "net.py")
    assert code == 1 and "DDP101" in out


def test_config_override_goes_with_a_settings_file(project: Path) -> None:
    (project / "other.toml").write_text('select = ["DDP2"]\n')
    assert run("--config", "other.toml", "net.py")[0] == 0
    code, _, _ = run("--config", "other.toml", "--config", "select=['DDP101']", "net.py")
    assert code == 1


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("missing.toml", "no such file, and not a `KEY = VALUE` override"),
        ("selekt = ['DDP101']", "unknown key(s) selekt in --config"),
        ("ignore = DDP101", "is neither a file nor a TOML `KEY = VALUE`"),
        ("ignore = 'DDP101'", "`ignore` must be a list of strings"),
    ],
)
def test_bad_config_values_are_errors(project: Path, value: str, message: str) -> None:
    (project / "pyproject.toml").unlink()  # the error names --config alone then
    code, _, err = run("--config", value, "net.py")
    assert code == 2 and message in err, err
