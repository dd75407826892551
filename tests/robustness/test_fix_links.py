"""Fixes never leave the project (H2): no write through a symbolic link, none outside the
project root through a linked folder; the report says why the file was not fixed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .support import CHECK_COMMAND

HAZARD = (
    "import torch\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
    "        torch.cuda.synchronize()\n        return x\n"
)
CONFIG = (
    "trainer:\n  devices: 8\nmodel:\n  train_ds:\n"
    "    num_workers: 0\n    persistent_workers: true\n"
)


def _fix(repo: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            *CHECK_COMMAND,
            "--unsafe-fixes",
            "--fix",
            ".",
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )


def test_links_out_of_the_repository_are_not_written(tmp_path: Path) -> None:
    victim, repo = tmp_path / "victim", tmp_path / "repo"
    victim.mkdir()
    repo.mkdir()
    (repo / "pyproject.toml").write_text("[tool.ddplint]\n")
    (victim / "train.py").write_text(HAZARD)
    (victim / "prod.yaml").write_text(CONFIG)
    (repo / "model.py").symlink_to("../victim/train.py")
    (repo / "conf.yaml").symlink_to(victim / "prod.yaml")
    (repo / "outside").symlink_to(victim, target_is_directory=True)
    (repo / "own.py").write_text(HAZARD)

    result = _fix(repo)

    assert (victim / "train.py").read_text() == HAZARD
    assert (victim / "prod.yaml").read_text() == CONFIG
    assert "model.py: error: cannot write fixes: it is a symbolic link" in result.stderr
    assert "conf.yaml: error: cannot write fixes: it is a symbolic link" in result.stderr
    assert result.returncode == 2
    # The project's own file is still fixed.
    assert "synchronize" not in (repo / "own.py").read_text()


def test_file_and_a_link_to_it_fix_the_file_and_keep_the_link(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pyproject.toml").write_text("[tool.ddplint]\n")
    (repo / "real.py").write_text(HAZARD)
    (repo / "alias.py").symlink_to("real.py")
    result = _fix(repo)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "synchronize" not in (repo / "real.py").read_text()
    assert (repo / "alias.py").is_symlink()


def test_a_file_with_a_second_hard_link_is_not_fixed_and_says_why(tmp_path: Path) -> None:
    """N12: a fix writes a new file and renames it, which would leave the other name
    with the old text; the file is left alone and the report says so."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pyproject.toml").write_text("[tool.ddplint]\n")
    (repo / "net.py").write_text(HAZARD)
    os.link(repo / "net.py", tmp_path / "backup.txt")
    result = _fix(repo)
    assert "net.py: error: cannot write fixes: it has 2 hard links" in result.stderr
    assert result.returncode == 2
    assert (repo / "net.py").read_text() == HAZARD
    assert (repo / "net.py").samefile(tmp_path / "backup.txt")
