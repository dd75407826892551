"""YAML the fixer and loader must survive (M1, M3, L12): merge-key chains bounded by work,
fixes deep in a config checked on the deep stack, a mapping merging itself a load error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .support import HANG_GUARD


def _check(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ddplint", "check", "--no-cache", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        check=False,
    )


@pytest.mark.slow
def test_merge_key_chain_is_bounded_by_work(tmp_path: Path) -> None:
    """Level i merges level i-1: O(N^2) merged keys from O(N) lines (3,000 levels used to
    take 12 s and 700 MB; now a load error after a bounded amount of merging)."""
    lines = ["trainer:\n  devices: 2\n", "l0: &l0\n  k0: 0\n"]
    for i in range(1, 3000):
        lines.append(f"l{i}: &l{i}\n  <<: *l{i - 1}\n  k{i}: {i}\n")
    lines.append("model:\n  train_ds:\n    <<: *l2999\n    persistent_workers: true\n")
    (tmp_path / "chain.yaml").write_text("".join(lines))
    result = _check(tmp_path, "chain.yaml")
    assert result.returncode == 2
    assert "merge keys (`<<:`) expand to more than" in result.stderr
    assert "Traceback" not in result.stderr


def test_small_merges_still_load(tmp_path: Path) -> None:
    (tmp_path / "train.yaml").write_text(
        "base: &base\n  num_workers: 0\n  persistent_workers: true\n"
        "trainer:\n  devices: 2\nmodel:\n  train_ds:\n    <<: *base\n    batch_size: 4\n"
    )
    result = _check(tmp_path, "train.yaml")
    assert result.returncode == 1 and "DDP601" in result.stdout, result.stdout + result.stderr


def test_mapping_merging_itself_is_a_load_error(tmp_path: Path) -> None:
    (tmp_path / "merge_self.yaml").write_text(
        "trainer:\n  devices: 2\nmodel:\n  train_ds: &d\n    num_workers: 0\n"
        "    persistent_workers: true\n    <<: *d\n"
    )
    result = _check(tmp_path, "merge_self.yaml")
    assert result.returncode == 2
    assert "merge_self.yaml:7:5: error: cannot load YAML: a mapping merges itself" in result.stderr
    assert "internal error" not in result.stderr


def test_fix_deep_in_a_config_is_applied(tmp_path: Path) -> None:
    """The fixer's re-load ran on the normal stack and raised RecursionError at 300 levels."""
    lines = ["trainer:\n  devices: 2\nmodel:\n"]
    indent = "  "
    for i in range(400):
        lines.append(f"{indent}l{i}:\n")
        indent += " "
    lines.append(f"{indent}train_ds:\n{indent} num_workers: 0\n{indent} persistent_workers: true\n")
    (tmp_path / "deep.yaml").write_text("".join(lines))
    result = _check(tmp_path, "--fix", "deep.yaml")
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 0, result.stdout + result.stderr
    assert "persistent_workers: false" in (tmp_path / "deep.yaml").read_text()


@pytest.mark.slow
def test_generated_table_literal_is_skipped_with_a_notice(tmp_path: Path) -> None:
    """M8: a 2 MB table literal used to take 59 s and 4.4 GB in LibCST."""
    items = ", ".join(["1"] * 690_000)
    (tmp_path / "table.py").write_text(
        f"import torch.distributed as dist\nTABLE = [{items}]\ndist.barrier()\n"
    )
    result = _check(tmp_path, "table.py")
    assert "table.py: skipped: too large to analyse in bounded memory" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_many_fixes_in_a_big_config_settle(tmp_path: Path) -> None:
    """L1: past the per-file budget of fix checks, fixes are checked together in one
    re-load instead of being dropped (100 fixes used to end in "did not settle")."""
    out = ["trainer:\n  devices: 8\nmodel:\n"]
    for i in range(1000):
        out.append(
            f"  ds_{i}:\n    manifest_filepath: /data/train/manifest_{i}.json\n"
            f"    batch_size: 16\n    num_workers: {0 if i % 10 == 0 else 4}\n"
            "    persistent_workers: true\n    pin_memory: true\n"
        )
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text("".join(out))
    result = _check(tmp_path, "--fix", "sweep.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "100 fixed, 0 remaining" in result.stdout
    fixed = sweep.read_text()
    assert fixed.count("persistent_workers: false") == 100
    assert fixed.count("persistent_workers: true") == 900
