"""Hostile or broken settings files (M6, L5, issue 13): each is one ``ddplint: error:``
line and exit 2, whether named by ``--config`` or found by discovery; nothing hangs,
nothing is read without limit, and no broken file silently gives way to another."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .support import HAZARD, deadline, run_cli

BROKEN_PYPROJECTS = {
    "tool is a number": ("tool = 5\n", "`tool`"),
    "tool.ddplint is a number": ("[tool]\nddplint = 5\n", "`tool.ddplint`"),
    "tool.ddplint is a string": ('[tool]\nddplint = "x"\n', "`tool.ddplint`"),
    "tool.ddplint is a list": ("[tool]\nddplint = [1, 2]\n", "`tool.ddplint`"),
    "huge max-file-size": (
        "[tool.ddplint]\nmax-file-size = 9223372036854775807\n",
        "`max-file-size`",
    ),
    "empty select": ('[tool.ddplint]\nselect = [""]\n', "empty rule selector"),
    "empty ignore": ('[tool.ddplint]\nignore = [" "]\n', "empty rule selector"),
    "empty per-file-ignore": (
        '[tool.ddplint.per-file-ignores]\n"*.py" = [""]\n',
        "empty rule selector",
    ),
    "invalid TOML": ('[tool.ddplint]\nignore = ["DDP1"]\nbroken = \n', "not valid TOML"),
    "table declared twice": (
        '[tool.ddplint]\nignore = ["DDP1"]\n[tool.ddplint]\n',
        "not valid TOML",
    ),
    "not UTF-8": (b'[tool.ddplint]\nignore = ["\xff"]\n', "not valid TOML"),
}


def _assert_one_error(run_code: int, err: str, expected: str) -> None:
    assert run_code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ddplint: error:"), err
    assert expected in lines[0]


@pytest.mark.parametrize("name", sorted(BROKEN_PYPROJECTS))
def test_broken_pyproject_found_by_discovery_is_an_error(project: Path, name: str) -> None:
    text, expected = BROKEN_PYPROJECTS[name]
    pyproject = project / "pyproject.toml"
    if isinstance(text, bytes):
        pyproject.write_bytes(text)
    else:
        pyproject.write_text(text)
    (project / "net.py").write_text(HAZARD)
    run = run_cli("check", "--no-cache", "-q", "net.py")
    _assert_one_error(run.code, run.err, expected)


@pytest.mark.parametrize("name", sorted(BROKEN_PYPROJECTS))
def test_broken_settings_named_by_config_is_the_same_error(project: Path, name: str) -> None:
    text, expected = BROKEN_PYPROJECTS[name]
    settings = project / "elsewhere" / "pyproject.toml"
    settings.parent.mkdir()
    if isinstance(text, bytes):
        settings.write_bytes(text)
    else:
        settings.write_text(text)
    (project / "net.py").write_text(HAZARD)
    run = run_cli("check", "--no-cache", "-q", "--config", str(settings), "net.py")
    _assert_one_error(run.code, run.err, expected)


def test_broken_pyproject_in_a_parent_folder_is_an_error(project: Path) -> None:
    """The upward search does not skip a broken file to reach one further up."""
    (project / "pyproject.toml").write_text('[tool.ddplint]\nignore = ["DDP1"]\n')
    package = project / "package"
    package.mkdir()
    (package / "pyproject.toml").write_text("tool = 5\n")
    (package / "net.py").write_text(HAZARD)
    run = run_cli("check", "--no-cache", "-q", "package/net.py")
    _assert_one_error(run.code, run.err, "package/pyproject.toml")


def test_pyproject_without_ddplint_table_is_passed_over(project: Path) -> None:
    """A valid pyproject.toml with no ``[tool.ddplint]`` leaves the search going upward."""
    (project / "pyproject.toml").write_text("[tool.ddplint]\nmax-file-size = 10\n")
    package = project / "package"
    package.mkdir()
    (package / "pyproject.toml").write_text("[tool.black]\nline-length = 99\n")
    (package / "net.py").write_text(HAZARD)
    run = run_cli("check", "--no-cache", "package/net.py")
    assert run.code == 0 and "above max-file-size (10)" in run.err


def test_valid_settings_still_apply(project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.ddplint]\nmax-file-size = 1073741824\n")
    (project / "net.py").write_text(HAZARD)
    run = run_cli("check", "--no-cache", "-q", "net.py")
    assert run.code == 1 and "DDP101" in run.out


def test_config_at_dev_zero_is_refused_unread(project: Path) -> None:
    (project / "net.py").write_text(HAZARD)
    with deadline():
        run = run_cli("check", "--no-cache", "-q", "--config", "/dev/zero", "net.py")
    _assert_one_error(run.code, run.err, "not a regular file")


def test_config_fifo_does_not_block(project: Path) -> None:
    (project / "net.py").write_text(HAZARD)
    os.mkfifo(project / "cfg.toml")
    with deadline():
        run = run_cli("check", "--no-cache", "-q", "--config", "cfg.toml", "net.py")
    _assert_one_error(run.code, run.err, "not a regular file")


def test_oversized_config_is_refused(project: Path) -> None:
    (project / "net.py").write_text(HAZARD)
    big = project / "big.toml"
    big.write_text("# padding\n" * 200_000)
    run = run_cli("check", "--no-cache", "-q", "--config", str(big), "net.py")
    _assert_one_error(run.code, run.err, "more than a settings file may hold")
