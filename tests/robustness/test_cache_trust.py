"""The result cache is never trusted as found (M4, M5): entries are signed with a key kept
outside the project, checked for shape, read only from a regular file reached without a
link, and keyed by file kind as well as content."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ddplint.cache import LayeredEntry, ResultCache, entry_signature

from .support import run_cli

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
    (found,) = (tree / ".ddplint_cache").glob("results-*.sqlite3")
    return found


def _fingerprint(results: Path) -> str:
    return results.name.removeprefix("results-").removesuffix(".sqlite3")


def _rewrite(results: Path, secret: bytes, change: Callable[[str, Any], Any]) -> None:
    """Give every stored entry the value ``change(key, value)``, signed with ``secret``."""
    fingerprint = _fingerprint(results)
    with sqlite3.connect(results) as connection:
        rows = connection.execute("SELECT key, value FROM entries").fetchall()
        for key, value in rows:
            text = json.dumps(change(key, json.loads(value)))
            signature = entry_signature(secret, fingerprint, key, text)
            connection.execute(
                "UPDATE entries SET value = ?, signature = ? WHERE key = ?", (text, signature, key)
            )
    connection.close()


def test_cache_signed_elsewhere_is_ignored(tmp_path: Path) -> None:
    """A cache committed to the repository (signed with another machine's key) that hides
    the finding: a fresh machine still reports it."""
    tree = _tree(tmp_path)
    assert _run(tree, tmp_path / "key-a").returncode == 1
    _rewrite(
        _results_file(tree),
        b"k" * 32,
        lambda _key, value: {**value, "findings": []} if "findings" in value else value,
    )
    again = _run(tree, tmp_path / "key-b")
    assert again.returncode == 1 and "DDP101" in again.stdout


def test_an_entry_moved_to_another_key_does_not_verify(tmp_path: Path) -> None:
    """Every entry is signed with its key: a clean outcome copied, signature and all,
    over the hazard's entry is not used."""
    tree, key_file = _tree(tmp_path), tmp_path / "key"
    (tree / "clean.py").write_text("import torch\n\n\ndef synchronize():\n    pass\n")
    assert _run(tree, key_file).returncode == 1
    results = _results_file(tree)
    with sqlite3.connect(results) as connection:
        rows = connection.execute("SELECT key, value, signature FROM entries").fetchall()
        outcomes = {
            key: (value, signature) for key, value, signature in rows if "findings" in value
        }
        clean = next(v for v in outcomes.values() if '"findings":[]' in v[0])
        for key in outcomes:
            connection.execute(
                "UPDATE entries SET value = ?, signature = ? WHERE key = ?", (*clean, key)
            )
    connection.close()
    again = _run(tree, key_file)
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
    _rewrite(
        _results_file(tree),
        key_file.read_bytes(),
        lambda _key, value: POISONS[poison](value) if "findings" in value else value,
    )
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
    assert not list(tree.glob("results-*"))


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


def _forge_clean_cache(tree: Path, key: bytes) -> None:
    """Rewrite the cache to say "no findings", signed with ``key``."""
    _rewrite(
        _results_file(tree),
        key,
        lambda _, value: {**value, "findings": []} if "findings" in value else value,
    )


def test_a_key_committed_inside_the_workspace_is_refused(tmp_path: Path) -> None:
    """N5: CI keeps its caches in the workspace (``XDG_CACHE_HOME=$PWD/.cache``): a pull
    request commits ``.cache/ddplint/cache-key`` and a cache signed with it. The key is
    refused (one notice), so the hazard is still reported."""
    tree = _tree(tmp_path)
    key = b"K" * 32
    (tree / ".cache" / "ddplint").mkdir(parents=True)
    (tree / ".cache" / "ddplint" / "cache-key").write_bytes(key)
    (tree / ".cache" / "ddplint" / "cache-key").chmod(0o600)
    assert _run(tree, tmp_path / "honest-key").returncode == 1  # a cache to forge
    _forge_clean_cache(tree, key)
    environment = {**os.environ, "XDG_CACHE_HOME": str(tree / ".cache")}
    environment.pop("DDPLINT_CACHE_KEY_FILE", None)
    environment.pop("DDPLINT_CACHE_DIR", None)
    again = subprocess.run(
        [sys.executable, "-m", "ddplint", "check", "--extend-select", "DDP101", "."],
        cwd=tree,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert again.returncode == 1 and "DDP101" in again.stdout
    assert "signing key" in again.stderr and "lies inside the project" in again.stderr


@pytest.mark.parametrize("mode", [0o666, 0o640, 0o620])
def test_a_key_open_to_others_is_refused(tmp_path: Path, mode: int) -> None:
    """N5: a key others may read or write could sign a forged cache: refused, as ssh
    refuses such a private key; the run goes on without the cache."""
    tree, key_file = _tree(tmp_path), tmp_path / "key"
    assert _run(tree, key_file).returncode == 1
    _forge_clean_cache(tree, key_file.read_bytes())
    key_file.chmod(mode)
    again = _run(tree, key_file)
    assert again.returncode == 1 and "DDP101" in again.stdout
    assert f"is open to others (mode {mode:04o}" in again.stderr


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root")
def test_a_key_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    tree, key_file = _tree(tmp_path), tmp_path / "key"
    assert _run(tree, key_file).returncode == 1
    _forge_clean_cache(tree, key_file.read_bytes())
    os.chown(key_file, 54321, 54321)
    again = _run(tree, key_file)
    assert again.returncode == 1 and "DDP101" in again.stdout
    assert "is owned by another user (uid 54321)" in again.stderr


def test_no_home_folder_is_a_notice_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """N7: ``HOME`` unset for a uid without a passwd entry (``Path.home()`` raises)."""

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    tree = _tree(tmp_path)
    monkeypatch.chdir(tree)
    for name in ("HOME", "XDG_CACHE_HOME", "DDPLINT_CACHE_KEY_FILE", "DDPLINT_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    result = run_cli("check", ".")
    assert result.code == 1 and "DDP101" in result.out
    assert "there is no home folder to keep the signing key in" in result.err


def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ResultCache:
    monkeypatch.setenv("DDPLINT_CACHE_KEY_FILE", str(tmp_path / "key"))
    return ResultCache(tmp_path / "cache", "settings")


def test_entries_read_in_one_batch_are_verified_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``get_many``: what verifies is returned, a forged value and an absent key are not
    (and the forged one is not read again by ``get``)."""
    writer = _cache(tmp_path, monkeypatch)
    writer.put("a", {"value": 1})
    writer.put("b", {"value": 2})
    writer.save()
    with sqlite3.connect(writer.file) as connection:
        connection.execute("UPDATE entries SET value = ? WHERE key = 'b'", ('{"value": 3}',))
    connection.close()
    reader = ResultCache(tmp_path / "cache", "settings")
    assert reader.get_many(["a", "b", "missing", "a"]) == {"a": {"value": 1}}
    assert reader.get("b") is None
    assert reader.get("a") == {"value": 1}


def test_a_few_changed_records_are_written_as_a_layer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The base is written once; a run that changes one record writes the layer only;
    the next run reads the base and the layer merged, a removed record gone."""
    cache = _cache(tmp_path, monkeypatch)
    records = {f"file{n}.py": [n, "hash"] for n in range(1000)}
    LayeredEntry(cache, "records").write(records)
    cache.save()
    base = ResultCache(tmp_path / "cache", "settings").get("records")
    assert base is not None and len(base["records"]) == 1000

    cache = ResultCache(tmp_path / "cache", "settings")
    kept = LayeredEntry(cache, "records")
    assert kept.merged == records
    changed = {**records, "file1.py": [1, "another hash"]}
    del changed["file2.py"]
    kept.write(changed)
    assert set(cache._unsaved) == {"records:layer"}
    cache.save()

    again = ResultCache(tmp_path / "cache", "settings")
    assert again.get("records") == base
    assert LayeredEntry(again, "records").merged == changed


def test_many_changed_records_rewrite_the_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = _cache(tmp_path, monkeypatch)
    LayeredEntry(cache, "records").write({f"file{n}.py": n for n in range(1000)})
    cache.save()
    cache = ResultCache(tmp_path / "cache", "settings")
    many = {f"file{n}.py": -n for n in range(1000)}
    LayeredEntry(cache, "records").write(many)
    assert set(cache._unsaved) == {"records", "records:layer"}
    cache.save()
    assert LayeredEntry(ResultCache(tmp_path / "cache", "settings"), "records").merged == many


def test_a_layer_of_another_base_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs at once: one rewrote the base after the other wrote its layer; the
    layer names the base it was made on, so it is not merged into the new one."""
    cache = _cache(tmp_path, monkeypatch)
    LayeredEntry(cache, "records").write({"a.py": 1, "b.py": 2})
    cache.save()
    first = ResultCache(tmp_path / "cache", "settings")
    LayeredEntry(first, "records").write({"a.py": 1, "b.py": 3})
    second = ResultCache(tmp_path / "cache", "settings")
    rewritten = LayeredEntry(second, "records")
    rewritten.LAYER_LIMIT = 0
    rewritten.write({"a.py": 5, "b.py": 2})
    second.save()
    first.save()  # the layer of the old base lands last
    assert LayeredEntry(ResultCache(tmp_path / "cache", "settings"), "records").merged == {
        "a.py": 5,
        "b.py": 2,
    }
