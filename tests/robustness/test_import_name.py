"""Static mode never imports the project's code, whatever its top-level packages are called.

A training repository often has its own ``lint``, ``rules`` or ``ddplint``-free packages on
PYTHONPATH (its root is put there by its CI). ddplint imports itself as ``ddplint`` only,
so a project's ``lint/__init__.py`` or ``rules/__init__.py`` is never run by it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

MARKER_CODE = "import pathlib\npathlib.Path(__file__).with_name('IMPORTED').write_text('{name}')\n"


@pytest.mark.parametrize("folder", ["lint", "rules"])
def test_project_package_named_like_ddplint_folders_is_not_imported(
    tmp_path: Path, folder: str
) -> None:
    package = tmp_path / folder
    package.mkdir()
    (package / "__init__.py").write_text(MARKER_CODE.format(name=folder))
    (package / "cli.py").write_text(MARKER_CODE.format(name=folder + ".cli"))
    (tmp_path / "train.py").write_text(
        "import torch.distributed as dist\n\nif dist.get_rank() == 0:\n    dist.barrier()\n"
    )
    environment = {**os.environ, "PYTHONPATH": str(tmp_path)}
    for command in (
        [sys.executable, "-m", "ddplint", "check", "--extend-select", "DDP101", "--no-cache", "."],
        [sys.executable, "-m", "ddplint", "rules"],
    ):
        result = subprocess.run(
            command, cwd=tmp_path, env=environment, capture_output=True, text=True, check=False
        )
        assert "Traceback" not in result.stderr, result.stderr
        assert not (package / "IMPORTED").exists(), command
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "ddplint",
            "check",
            "--extend-select",
            "DDP101,DDP201",
            "--no-cache",
            "train.py",
        ],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 1 and "DDP201" in checked.stdout, checked.stdout
