"""Values code reads from the YAML config it is bound to (``@hydra.main``,
``OmegaConf.load``): bindings, the lookup with positions and defaults groups, and a run
whose cached result follows an edit of the config."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ddplint.analysis.config_bindings import config_bindings, read_key
from ddplint.code.values.config_files import dependency_files
from ddplint.code.values.config_reads import ConfigReads
from ddplint.engine import lint_paths
from ddplint.settings import LintOptions, Settings

PROGRAM = """import hydra
from omegaconf import OmegaConf
from torch.utils.data import DataLoader


@hydra.main(config_path="conf", config_name="train")
def main(cfg):
    return DataLoader(data, num_workers=cfg.data.num_workers, persistent_workers=True)


def other(cfg):
    return cfg.data.num_workers
"""


def test_bindings_and_key_reads() -> None:
    tree = ast.parse(PROGRAM + 'cfg2 = OmegaConf.load("a.yaml")\ncfg2 = None\n')
    [hydra] = config_bindings(tree)  # cfg2 is bound twice: left out
    assert (hydra.name, hydra.config_path, hydra.config_name) == ("cfg", "conf", "train")
    assert hydra.holds("cfg", 8) and not hydra.holds("cfg", 12)
    assert read_key(ast.parse('c.a["b"].c', mode="eval").body) == ("c", ("a", "b", "c"))
    assert read_key(ast.parse("c", mode="eval").body) is None


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DDPLINT_CACHE_DIR", str(tmp_path / ".cache"))
    (tmp_path / "conf" / "data").mkdir(parents=True)
    (tmp_path / "conf" / "train.yaml").write_text("defaults:\n  - data: small\n  - _self_\n")
    (tmp_path / "conf" / "data" / "small.yaml").write_text(
        "batch: 2\nnum_workers: ${zero}\nzero: 0\n"
    )
    (tmp_path / "train.py").write_text(PROGRAM)
    return tmp_path


def test_lookup_through_a_defaults_group(repo: Path) -> None:
    reads = ConfigReads(PROGRAM, "train.py", str(repo))
    found = reads.value_at("cfg.data.num_workers", 8)
    assert found is not None
    assert (found.value, found.key, found.where) == (
        0,
        "data.num_workers",
        "conf/data/small.yaml:2",
    )
    assert reads.value_at("cfg.data.num_workers", 12) is None  # another function's cfg
    assert reads.value_at("cfg.data.missing", 8) is None


def test_broken_config_is_no_value_and_no_crash(repo: Path) -> None:
    (repo / "conf" / "data" / "small.yaml").write_text("num_workers: [0\n")
    assert ConfigReads(PROGRAM, "train.py", str(repo)).value_at("cfg.data.num_workers", 8) is None


def _run(root: Path):
    settings = Settings(project_root=root)
    options = LintOptions(selected=("DDP404",), project_root=str(root))
    return lint_paths([str(root)], settings, options, jobs=1, use_cache=True)


def test_finding_cites_the_yaml_and_follows_its_edits(repo: Path) -> None:
    [finding] = [f for f in _run(repo).findings if f.path == "train.py"]
    assert finding.rule == "DDP404" and "conf/data/small.yaml:2" in finding.message
    (repo / "conf" / "data" / "small.yaml").write_text("num_workers: 4\n")
    assert [f for f in _run(repo).findings if f.path == "train.py"] == []


def test_cache_dependencies_cover_groups_and_loaded_files(repo: Path) -> None:
    (repo / "eval.yaml").write_text("workers: 0\n")
    text = PROGRAM + 'OTHER = OmegaConf.load("eval.yaml")\n'
    found = {p.resolve() for p in dependency_files(text.encode(), "train.py", str(repo))}
    assert {repo / "conf" / "train.yaml", repo / "conf" / "data" / "small.yaml"} <= found
    assert repo / "eval.yaml" in found
    assert dependency_files(b"import torch\n", "train.py", str(repo)) == []


def test_a_group_with_a_package_is_mounted_at_the_package(repo: Path) -> None:
    (repo / "conf" / "train.yaml").write_text("defaults:\n  - data@loader: small\n  - _self_\n")
    reads = ConfigReads(PROGRAM.replace("cfg.data.", "cfg.loader."), "train.py", str(repo))
    found = reads.value_at("cfg.loader.num_workers", 8)
    assert found is not None and (found.key, found.where) == (
        "loader.num_workers",
        "conf/data/small.yaml:2",
    )
    assert reads.value_at("cfg.data.num_workers", 8) is None
