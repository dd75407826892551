"""Static mode runs none of the linted project's code: not its modules, package
``__init__``, conftest.py, setup.py, sitecustomize, .pth files, nor the commands its git
config names. Every trap here creates a marker file when it goes off."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ddplint.engine import POOL_THRESHOLD

from .support import HAZARD, run_cli

ROOT = Path(__file__).resolve().parents[2]


def _trap(marker: Path) -> str:
    return f"open({str(marker)!r}, 'w').close()\n"


@pytest.fixture
def trapped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A project full of code that leaves a marker in ``markers/`` when it runs."""
    markers = tmp_path / "markers"
    markers.mkdir()
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    files = {
        "train.py": HAZARD + _trap(markers / "module"),
        "pkg/__init__.py": _trap(markers / "package-init") + "torch.cuda.synchronize()\n",
        "pkg/model.py": "from pkg import helper\n" + HAZARD,
        "conftest.py": _trap(markers / "conftest") + "def pytest_configure(config): pass\n",
        "setup.py": _trap(markers / "setup") + "import setuptools\nsetuptools.setup()\n",
        "sitecustomize.py": _trap(markers / "sitecustomize"),
        "usercustomize.py": _trap(markers / "usercustomize"),
        "evil.pth": "import os; " + _trap(markers / "pth"),
        "pyproject.toml": '[build-system]\nbuild-backend = "setup"\n[tool.ddplint]\n',
    }
    for number in range(POOL_THRESHOLD):  # enough files for the process pool
        files[f"pkg/step_{number:02}.py"] = "import pkg\n" + HAZARD
    for name, text in files.items():
        (tree / name).write_text(text)
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    subprocess.run(
        ["git", "config", "core.fsmonitor", f"touch {markers / 'git-fsmonitor'}; true"],
        cwd=tree,
        check=True,
    )
    monkeypatch.chdir(tree)
    return tree, markers


def test_the_traps_are_armed(trapped: tuple[Path, Path]) -> None:
    """Running the code or plain git does leave markers: the tests below can fail."""
    tree, markers = trapped
    subprocess.run([sys.executable, "conftest.py"], cwd=tree, check=True)
    subprocess.run(["git", "ls-files"], cwd=tree, check=True, capture_output=True)
    assert sorted(os.listdir(markers)) == ["conftest", "git-fsmonitor"]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_linting_runs_none_of_it_in_process(trapped: tuple[Path, Path], jobs: str) -> None:
    _, markers = trapped
    run = run_cli("check", "--no-cache", "-j", jobs, ".")
    assert run.code == 1 and run.out.count(": DDP101 ") == POOL_THRESHOLD + 2
    assert os.listdir(markers) == []


@pytest.mark.skipif(sys.version_info < (3, 11), reason="python -P is new in 3.11")
def test_linting_runs_none_of_it_from_the_command_line(trapped: tuple[Path, Path]) -> None:
    """As a user runs it, from inside the project (``-P``: the installed console script
    does not put the working directory on sys.path either)."""
    tree, markers = trapped
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [
            sys.executable,
            "-P",
            "-m",
            "ddplint",
            "check",
            "--extend-select",
            "DDP101",
            "--no-cache",
            ".",
        ],
        cwd=tree,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    assert os.listdir(markers) == []
