"""The result cache is never trusted as found (M4, M5): entries are signed with a key kept
outside the project, checked for shape, read only from a regular file reached without a
link, and keyed by file kind as well as content."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ddplint.cache import _signature

HAZARD = (
    "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
    "    def forward(self, x):\n        torch.cuda.synchronize()\n        return x\n"
)
CONFIG = (
    "trainer:\n  devices: 2\nmodel:\n  train_ds:\n"
    "    num_workers: 0\n    persistent_workers: true\n"
)


def _run(tree: Path, key_file: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "DDPLINT_CACHE_KEY_FILE": str(key_file)}
    environment.pop("DDPLINT_CACHE_DIR", None)
    return subprocess.run(
        [sys.executable, "-m", "ddplint", "check", "--extend-select", "DDP101", *args, "."],
        cwd=tree,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _tree(tmp_path: Path) -> Path:
    tree = tmp_path / "repo"
    tree.mkdir()
    (tree / "pyproject.toml").write_text("[tool.ddplint]\n")
    (tree / "net.py").write_text(HAZARD)
    return tree


def _results_file(tree: Path) -> Path:
    (found,) = (tree / ".ddplint_cache").glob("results-*.json")
    return found


def test_cache_signed_elsewhere_is_ignored(tmp_path: Path) -> None:
    """A cache committed to the repository (signed with another machine's key) that hides
    the finding: a fresh machine still reports it."""
    tree = _tree(tmp_path)
    assert _run(tree, tmp_path / "key-a").returncode == 1
    results = _results_file(tree)
    document = json.loads(results.read_text())
    entries = json.loads(document["entries"])
    forged = {
        key: {**value, "findings": []} if "findings" in value else value
        for key, value in entries.items()
    }
    payload = json.dumps(forged)
    document["entries"] = payload
    document["signature"] = _signature(b"k" * 32, payload.encode())
    results.write_text(json.dumps(document))
    again = _run(tree, tmp_path / "key-b")
    assert again.returncode == 1 and "DDP101" in again.stdout


POISONS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "line-is-string": lambda e: {**e, "findings": [{**f, "line": "7"} for f in e["findings"]]},
    "rule-is-int": lambda e: {**e, "findings": [{**f, "rule": 5} for f in e["findings"]]},
    "edits-bogus": lambda e: {
        **e,
        "findings": [
            {**f, "fix": {"applicability": "safe", "edits": [{"line": "a", "content": 5}]}}
            for f in e["findings"]
        ],
    },
    "notices-is-int": lambda e: {**e, "notices": 5},
    "error-line-str": lambda e: {**e, "errors": [{"path": "x", "message": "m", "line": "z"}]},
    "facts-bogus": lambda e: {**e, "facts": 5},
    "parsed-str": lambda e: {**e, "parsed": "yes"},
    "entry-is-list": lambda e: [e],  # type: ignore[dict-item]
}


@pytest.mark.parametrize("poison", sorted(POISONS))
def test_wrongly_shaped_entries_are_relinted(tmp_path: Path, poison: str) -> None:
    """Even correctly signed, an entry of the wrong shape is not used (no traceback)."""
    tree, key_file = _tree(tmp_path), tmp_path / "key"
    assert _run(tree, key_file).returncode == 1
    results = _results_file(tree)
    document = json.loads(results.read_text())
    entries = {
        key: POISONS[poison](value) if "findings" in value else value  # outcomes only
        for key, value in json.loads(document["entries"]).items()
    }
    payload = json.dumps(entries)
    document["entries"] = payload
    document["signature"] = _signature(key_file.read_bytes(), payload.encode())
    results.write_text(json.dumps(document))
    for output_format in ("concise", "sarif"):
        again = _run(tree, key_file, "--format", output_format)
        assert "Traceback" not in again.stderr, again.stderr
        assert again.returncode == 1 and "DDP101" in again.stdout


def test_cache_folder_linked_to_the_root_is_not_used(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    (tree / ".ddplint_cache").symlink_to(".", target_is_directory=True)
    result = _run(tree, tmp_path / "key")
    assert result.returncode == 1 and "DDP101" in result.stdout
    assert not (tree / ".gitignore").exists()
    assert not list(tree.glob("results-*.json"))


@pytest.mark.parametrize("special", ["dev-zero", "fifo"])
def test_results_file_that_is_not_a_regular_file_is_not_read(tmp_path: Path, special: str) -> None:
    tree, key_file = _tree(tmp_path), tmp_path / "key"
    assert _run(tree, key_file).returncode == 1
    results = _results_file(tree)
    results.unlink()
    if special == "dev-zero":
        results.symlink_to("/dev/zero")
    else:
        os.mkfifo(results)
    again = _run(tree, key_file)  # bounded by the subprocess timeout: must not hang
    assert again.returncode == 1 and "DDP101" in again.stdout
    assert "Traceback" not in again.stderr


def test_python_file_with_the_bytes_of_a_yaml_file_does_not_hide_it(tmp_path: Path) -> None:
    tree = tmp_path / "repo"
    tree.mkdir()
    (tree / "pyproject.toml").write_text("[tool.ddplint]\n")
    (tree / "train.yaml").write_text(CONFIG)
    (tree / "train_yaml_copy.py").write_text(CONFIG)
    for _ in range(2):  # empty cache, then warm cache
        result = _run(tree, tmp_path / "key")
        assert "train.yaml:6:5: DDP601" in result.stdout, result.stdout
