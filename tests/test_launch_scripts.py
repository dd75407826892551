"""Launch scripts: the tolerant reader of ``#SBATCH`` / ``srun`` / ``torchrun`` lines and
the run that hands them to DDP620 (and its cache)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ddplint.config.launch_scripts import UNKNOWN_VALUE, launches
from ddplint.engine import lint_paths
from ddplint.settings import LintOptions, Settings

SBATCH = """#!/bin/bash
#SBATCH --job-name=gpt
#SBATCH -N 2
#SBATCH --ntasks-per-node=8 --gres=gpu:a100:8
set -e
#SBATCH --nodes=9
srun --nodes=$NNODES python train.py \\
    --config-path=conf --config-name=gpt trainer.max_steps=10
"""


def test_sbatch_header_and_srun_options() -> None:
    [launch] = launches(SBATCH)
    assert launch.line == 7 and launch.launcher == "srun" and launch.batch
    allocation = launch.allocation
    # srun's variable hides #SBATCH -N 2; the #SBATCH after the first command is ignored
    assert allocation["nodes"].value == UNKNOWN_VALUE and allocation["nodes"].line == 7
    assert (allocation["tasks_per_node"].value, allocation["tasks_per_node"].line) == (8, 4)
    assert allocation["gpus_per_node"].value == 8
    assert (launch.config_name, launch.config_path) == ("gpt", "conf")
    assert launch.overrides == frozenset({"trainer.max_steps"})


@pytest.mark.parametrize(
    ("command", "nproc", "nnodes"),
    [
        ("torchrun --nproc_per_node=4 --nnodes 2 train.py", 4, 2),
        ("python -m torch.distributed.run --nproc-per-node 8 --standalone train.py", 8, 1),
        ("python -m torch.distributed.launch --nproc_per_node=$GPUS train.py", UNKNOWN_VALUE, None),
        ("torchrun --nnodes=1:4 --nproc_per_node=2 train.py", 2, UNKNOWN_VALUE),
    ],
)
def test_torchrun_forms(command: str, nproc: object, nnodes: object) -> None:
    [launch] = launches(command + "\n")
    assert launch.launcher == "torchrun" and not launch.batch
    assert launch.allocation["nproc_per_node"].value == nproc
    stated = launch.allocation.get("nnodes")
    assert (stated.value if stated is not None else None) == nnodes


def test_overrides_in_hydra_and_lightning_cli_forms() -> None:
    command = "python main.py fit --config c.yaml --trainer.devices 4 +trainer.num_nodes=2\n"
    [launch] = launches(command)
    assert launch.overrides == frozenset({"trainer.devices", "trainer.num_nodes"})


def test_lines_that_are_not_launches_or_do_not_split() -> None:
    text = 'echo "unclosed\nexport X=1\nls data/\n# srun python train.py\n'
    assert launches(text) == []


def test_record_round_trip() -> None:
    [launch] = launches(SBATCH)
    assert type(launch).from_record(launch.to_record()) == launch


TRAIN_YAML = "trainer:\n  devices: 8\n  num_nodes: 1\nmodel:\n  optim:\n    lr: 0.1\n"


def _run(root: Path, *, use_cache: bool = False):
    settings = Settings(project_root=root)
    options = LintOptions(selected=("DDP620",), project_root=str(root))
    return lint_paths([str(root)], settings, options, jobs=1, use_cache=use_cache)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DDPLINT_CACHE_DIR", str(tmp_path / ".cache"))
    (tmp_path / "conf").mkdir()
    (tmp_path / "slurm").mkdir()
    (tmp_path / "conf" / "train.yaml").write_text(TRAIN_YAML)
    return tmp_path


def test_script_in_the_repository_is_cited_and_a_change_is_seen(repo: Path) -> None:
    script = repo / "slurm" / "job.sbatch"
    script.write_text("#SBATCH --nodes=2\nsrun python run.py --config-name train\n")
    first = _run(repo, use_cache=True)
    [finding] = first.findings
    assert (finding.path, finding.line, finding.rule) == ("conf/train.yaml", 3, "DDP620")
    assert "slurm/job.sbatch:1" in finding.message
    script.write_text("#SBATCH --nodes=1\nsrun python run.py --config-name train\n")
    assert _run(repo, use_cache=True).findings == []  # the cached YAML result is not reused


def test_unreadable_script_is_one_notice_and_the_run_goes_on(repo: Path) -> None:
    (repo / "slurm" / "job.sh").write_text(
        "#SBATCH --nodes=2\nsrun python x.py --config-name train\n"
    )
    broken = repo / "slurm" / "broken.sh"
    broken.write_text("x")
    if os.geteuid() == 0:
        broken.unlink()
        broken.symlink_to(repo / "slurm" / "missing")
    else:
        broken.chmod(0)
    result = _run(repo)
    assert [f.rule for f in result.findings] == ["DDP620"]
    assert len([n for n in result.notices if "launch script not read" in n]) == 1


@pytest.mark.parametrize(
    "text",
    [
        "\x00\x01binary",
        "torchrun --nproc_per_node='8 train.py\n",
        "\\\n" * 10_000,
        "#SBATCH --nodes\n#SBATCH --gres=\nsrun -N python x.py\n",
        "srun " + "--nodes=1 " * 20_000 + "python x.py\n",
    ],
)
def test_odd_scripts_give_no_crash_and_no_made_up_values(text: str) -> None:
    for launch in launches(text):
        assert all(s.value == UNKNOWN_VALUE or s.value > 0 for s in launch.allocation.values())
