"""The project's torch floor, read from its declarations, and DDP301 deciding by it."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from fixture_harness import FIXTURES, lint_fixture

from ddplint.cli import cli
from ddplint.code.torch_floor import (
    at_least,
    find_torch_floor,
    poetry_floor,
    requirement_floor,
    version_tuple,
)

BARRIER = """\
from datetime import timedelta

import torch.distributed as dist

dist.barrier(timeout=timedelta(minutes=5))
"""


@pytest.mark.parametrize(
    ("requirement", "floor"),
    [
        ("torch>=2.1", "2.1"),
        ("torch >= 2.4.0, <3", "2.4.0"),
        ("torch==2.3.*", "2.3"),
        ("torch~=2.2", "2.2"),
        ("torch>2.0,!=2.0.1", "2.0"),
        ("torch[opt]>=2.5; python_version >= '3.10'", "2.5"),
        ("Torch (>=2.6)", "2.6"),
        ("torch==2.1.0+cu118", "2.1.0+cu118"),
        ("torch", ""),
        ("torch<2.5", ""),
        ("torch @ https://example.org/torch.whl", ""),
        ("torchvision>=0.20", None),
        ("pytorch-lightning>=2.0", None),
    ],
)
def test_requirement_floor(requirement: str, floor: str | None) -> None:
    assert requirement_floor(requirement) == floor


@pytest.mark.parametrize(
    ("constraint", "floor"),
    [("^2.1", "2.1"), ("~2.3.1", "2.3.1"), (">=2.2,<3", "2.2"), ("2.4.*", "2.4"), ("*", "")],
)
def test_poetry_floor(constraint: str, floor: str) -> None:
    assert poetry_floor(constraint) == floor


def test_version_comparison() -> None:
    assert version_tuple("2.12.0+cu121") == (2, 12, 0)
    assert at_least("2.12", (2, 12)) and at_least("2.13.1", (2, 12))
    assert not at_least("2.11.9", (2, 12)) and not at_least("2", (2, 12))


def test_pyproject_dependencies_and_extras_lowest_wins(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\ndependencies = ["numpy", "torch>=2.4"]\n'
        '[project.optional-dependencies]\nlegacy = ["torch>=2.0"]\n'
    )
    floor = find_torch_floor(tmp_path)
    assert floor.version == "2.0"
    assert floor.source == "pyproject.toml [project.optional-dependencies.legacy]: `torch>=2.0`"


def test_poetry_tables(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.poetry.dependencies]\npython = "^3.10"\ntorch = { version = "^2.3" }\n'
    )
    assert find_torch_floor(tmp_path).version == "2.3"


def test_setup_cfg_and_requirement_files(tmp_path: Path) -> None:
    (tmp_path / "setup.cfg").write_text(
        "[options]\ninstall_requires =\n    numpy\n    torch>=2.5\n"
    )
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "requirements.txt").write_text(
        "-r base.txt\n# pinned for CI\ntorch==2.2.1  # cuda 12\n"
    )
    floor = find_torch_floor(tmp_path)
    assert (floor.version, floor.source) == (
        "2.2.1",
        "requirements/requirements.txt: `torch==2.2.1`",
    )


def test_unknown_floor_says_why(tmp_path: Path) -> None:
    assert find_torch_floor(tmp_path).version is None
    assert find_torch_floor(tmp_path).source == "no torch requirement found"
    (tmp_path / "requirements.txt").write_text("torch\n")
    floor = find_torch_floor(tmp_path)
    assert floor.version is None and "sets no lower bound" in floor.source
    (tmp_path / "pyproject.toml").write_text("[project\nbroken")
    assert find_torch_floor(tmp_path).version is None


def test_setting_overrides_declarations(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("torch>=2.1\n")
    floor = find_torch_floor(tmp_path, "2.13", "pyproject.toml")
    assert (floor.version, floor.source) == (
        "2.13",
        "the `torch-version` setting in pyproject.toml",
    )


@pytest.mark.parametrize(("version", "flagged"), [("2.11", True), ("2.12", False), (None, True)])
def test_ddp301_decides_by_floor(version: str | None, flagged: bool) -> None:
    outcome = lint_fixture(FIXTURES / "DDP301" / "bad_gloo_group.py", torch_version=version)
    assert bool(outcome.findings) is flagged
    if version == "2.11":
        assert "this project admits torch 2.11" in outcome.findings[0].message


@pytest.mark.parametrize(
    ("pyproject", "expected_code", "phrase"),
    [
        ('[project]\ndependencies = ["torch>=2.4"]\n', 1, "admits torch 2.4 (pyproject.toml"),
        ('[project]\ndependencies = ["torch>=2.12"]\n', 0, None),
        (
            '[project]\ndependencies = ["torch>=2.1"]\n[tool.ddplint]\ntorch-version = "2.13"\n',
            0,
            None,
        ),
        ("[project]\nname = 'x'\n", 1, "torch version is unknown (no torch requirement found)"),
    ],
)
def test_cli_reads_floor_once_for_the_project(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    pyproject: str,
    expected_code: int,
    phrase: str | None,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(pyproject)
    (tmp_path / "sync.py").write_text(BARRIER)
    result = CliRunner().invoke(
        cli, ["check", "--no-cache", "--output-format", "full"], catch_exceptions=False
    )
    assert result.exit_code == expected_code, result.stdout
    if phrase:
        assert "sync.py:5:14: DDP301" in result.stdout and phrase in result.stdout


def test_lightning_pinned_before_2_1_is_a_fact(tmp_path: Path) -> None:
    """Trainer.save_checkpoint synchronises only from Lightning 2.1: a project that pins
    an older one (conda environment file, requirements) says so to DDP203."""
    from ddplint.code.torch_floor import LIGHTNING_BEFORE_2_1, lightning_facts

    (tmp_path / "environment.yaml").write_text(
        "dependencies:\n  - python=3.8\n  - pytorch=1.11.0\n  - pip:\n"
        "    - pytorch-lightning==1.4.2\n"
    )
    assert dict(lightning_facts(tmp_path)) == {
        LIGHTNING_BEFORE_2_1: "environment.yaml: `pytorch-lightning==1.4.2`"
    }
    (tmp_path / "requirements.txt").write_text("lightning>=2.0,<3\n")
    assert lightning_facts(tmp_path) == ()  # 2.1+ admitted by one of them
