"""`ddplint verify` refuses clearly when it cannot run: no torch, NCCL without CUDA, no
such entry. None of these start a rank."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ddplint.cli import cli
from ddplint.verify.launch import LaunchSpec, torchrun_command

ROOT = Path(__file__).resolve().parents[2]

BLOCK_TORCH = """
import importlib.abc, sys

class NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoTorch())
sys.argv = ["ddplint", "verify", "fixtures/verify/clean_ddp.py"]
from ddplint.cli import main
main()
"""


def test_without_torch_it_says_how_to_install_it() -> None:
    done = subprocess.run(
        [sys.executable, "-c", BLOCK_TORCH], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert "torch is not installed" in done.stderr
    # ddplint is not on PyPI: the hint installs torch (the CPU build) into the Python
    # that runs ddplint, never ddplint itself from an index.
    assert (
        f"{sys.executable} -m pip install torch --index-url https://download.pytorch.org/whl/cpu"
        in done.stderr
    )
    assert "ddplint[verify]" not in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_nccl_without_cuda_is_refused_before_launch(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(
        cli, ["verify", "fixtures/verify/clean_ddp.py", "--backend", "nccl"]
    )
    assert result.exit_code == 2
    assert "--backend nccl needs CUDA" in result.stderr and "--backend gloo" in result.stderr


def test_nccl_with_more_ranks_than_gpus_is_refused_before_launch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Seen on a one-GPU machine: the second rank failed at ``set_device(1)`` (invalid
    device ordinal) after the launch; now the run is refused first, with the way out."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.chdir(ROOT)
    refused = CliRunner().invoke(
        cli, ["verify", "fixtures/verify/clean_ddp.py", "--backend", "nccl"]
    )
    assert refused.exit_code == 2
    assert "needs a GPU for each rank: 2 ranks per node asked, 1 GPU(s)" in refused.stderr
    assert "--nproc-per-node 1" in refused.stderr and "--backend gloo" in refused.stderr


def test_missing_entry_is_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["verify", "train.py"])
    assert result.exit_code == 2 and "no such script: train.py" in result.stderr
    result = CliRunner().invoke(cli, ["verify", "pkg.train:main"])
    assert result.exit_code == 2 and "cannot find module `pkg.train`" in result.stderr


def test_launch_command_uses_torchrun() -> None:
    single = torchrun_command(LaunchSpec("train.py", ("--lr", "3"), nproc_per_node=4))
    assert single[1:4] == ["-m", "torch.distributed.run", "--nproc-per-node"]
    assert "--standalone" in single and single[-3:] == ["train.py", "--lr", "3"]
    multi = torchrun_command(
        LaunchSpec("train.py", nnodes="2", node_rank=1, rdzv_endpoint="head:29400", rdzv_id="job")
    )
    assert "--standalone" not in multi
    joined = " ".join(multi)
    assert "--nnodes 2" in joined and "--rdzv-endpoint head:29400" in joined
    assert "--rdzv-id job" in joined and "--node-rank 1" in joined
