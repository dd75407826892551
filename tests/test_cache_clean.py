"""`ddplint clean`: the project's result databases go, and nothing else does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from ddplint.cache import clear_results
from ddplint.cli import cli

HAZARD = """import torch.distributed as dist


def main():
    dist.init_process_group("nccl")
    if dist.get_rank() == 0:
        dist.barrier()


if __name__ == "__main__":
    main()
"""


def _invoke(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("DDPLINT_CACHE_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.ddplint]\n")
    (tmp_path / "train.py").write_text(HAZARD)
    return tmp_path


def test_clean_removes_the_databases_of_every_selection_and_the_folder(project: Path) -> None:
    assert _invoke(["check", "--select", "DDP201", "."])[0] == 1
    assert _invoke(["check", "--select", "DDP201", "--output-format", "json", "."])[0] == 1
    assert _invoke(["check", "--select", "DDP202", "."])[0] == 0
    cache = project / ".ddplint_cache"
    assert len(list(cache.glob("results-*.sqlite3"))) == 2  # one per rule selection
    code, out = _invoke(["clean"])
    assert code == 0 and "Removed 2 results database(s)" in out
    assert not cache.exists()
    assert (project / "train.py").read_text() == HAZARD
    code, out = _invoke(["clean", str(project)])
    assert code == 0 and "No cache to remove" in out


def test_a_file_of_the_users_keeps_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    folder.mkdir()
    (folder / ".gitignore").write_text("# created by ddplint\n*\n")
    (folder / "results-abc.sqlite3").write_bytes(b"x")
    (folder / "results-abc.sqlite3-wal").write_bytes(b"x")
    (folder / "notes.txt").write_text("mine")
    removed = clear_results(folder)
    assert sorted(path.name for path in removed) == [
        "results-abc.sqlite3",
        "results-abc.sqlite3-wal",
    ]
    assert sorted(path.name for path in folder.iterdir()) == [".gitignore", "notes.txt"]


def test_a_link_is_not_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "results-x.sqlite3").write_bytes(b"x")
    folder = tmp_path / "cache"
    folder.mkdir()
    os.symlink(elsewhere / "results-x.sqlite3", folder / "results-y.sqlite3")
    assert clear_results(folder) == []
    assert (elsewhere / "results-x.sqlite3").exists()
    os.symlink(elsewhere, tmp_path / "linked")
    with pytest.raises(OSError, match="symbolic link"):
        clear_results(tmp_path / "linked")
    assert (elsewhere / "results-x.sqlite3").exists()
