"""Fixes never lose data: a fix killed between writing its temporary file and renaming
it leaves the file byte for byte as it was (and a temporary file that is never linted
and that the next fix removes); ``--fix`` touches no file it did not flag (bytes and
mtime), over the example project and a copy of real package sources; a DDP601 fix on
real NeMo configs changes the one scalar and nothing else."""

from __future__ import annotations

import difflib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_support import HAZARD

from ddplint.fixer import TEMPORARY_TAG, remove_stale_temporaries

from .support import CHECK_COMMAND

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "fixtures" / "example_project"
#: Real package sources and NeMo configs (see the project notes); tests on them skip
#: where they are not installed.
CORPUS = Path(os.environ.get("DDPLINT_CORPUS", "/work/corpus"))
NEMO_CONFIGS = Path(os.environ.get("DDPLINT_NEMO_CONFIGS", "/work/shared/nemo_real_configs"))

YAML_HAZARD = (
    "# NeMo-style loader section\r\n"
    "model:\r\n"
    "  train_ds:\r\n"
    "    num_workers: 0\r\n"
    "    persistent_workers: true   # keep workers warm\r\n"
)
YAML_FIXED = YAML_HAZARD.replace("true   #", "false   #")
PY_FIXED = HAZARD.replace("        torch.cuda.synchronize()\n", "")

#: Run ``ddplint check`` with a lethal ``os.<CALL>``: the process SIGKILLs itself when
#: that call is made for the temporary file of TARGET (after the data is written for
#: ``fsync``, just before the rename for ``replace``).
RUNNER = """
import os, signal, sys
call, target = sys.argv[1], os.path.realpath(sys.argv[2])
real = getattr(os, call)
def writes_target(args):
    if call == "replace":
        return os.path.realpath(args[1]) == target
    written = os.readlink(f"/proc/self/fd/{args[0]}")
    return os.path.basename(written).startswith("." + os.path.basename(target) + ".ddplint-")
def lethal(*args, **kwargs):
    if writes_target(args):
        os.kill(os.getpid(), signal.SIGKILL)
    return real(*args, **kwargs)
setattr(os, call, lethal)
from ddplint.cli import main
sys.argv = ["ddplint", "check", "--no-cache", "--extend-select", "DDP101", *sys.argv[3:]]
main()
"""


def environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def ddplint(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            *CHECK_COMMAND,
            *args,
        ],
        cwd=cwd,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def report(cwd: Path, *args: str) -> dict[str, Any]:
    done = ddplint(cwd, "--format", "json", *args)
    assert done.stdout, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file below ``root``: bytes and modification time (ns)."""
    return {
        p.relative_to(root).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "model.py").write_text(HAZARD)
    (tmp_path / "conf.yaml").write_bytes(YAML_HAZARD.encode())
    (tmp_path / "clean.py").write_text("x = 1\n")
    return tmp_path


@pytest.mark.parametrize("call", ["fsync", "replace"])
@pytest.mark.parametrize("target", ["model.py", "conf.yaml"])
def test_killed_fix_leaves_the_file_intact(project: Path, call: str, target: str) -> None:
    (project / "runner.py").write_text(RUNNER)
    before = snapshot(project)
    killed = subprocess.run(
        [sys.executable, "runner.py", call, target, "--fix", "--unsafe-fixes", "."],
        cwd=project,
        env=environment(),
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    after = snapshot(project)
    fixed = {"model.py": PY_FIXED.encode(), "conf.yaml": YAML_FIXED.encode()}
    leftovers = [name for name in after if name not in before]
    (temporary,) = leftovers  # one, clearly named
    assert temporary.startswith(f".{target}{TEMPORARY_TAG}")
    assert temporary.endswith(".tmp")
    assert after[target] == before[target]  # byte for byte, mtime too
    for name in fixed:  # every other file: as it was, or completely fixed
        assert after[name][0] in (before[name][0], fixed[name]), name
    unfixed = {name for name in fixed if after[name][0] == before[name][0]}
    # a later check ignores the temporary file; a later fix removes it and fixes all
    listed = report(project, ".")
    assert {f["path"] for f in listed["findings"]} == unfixed
    assert listed["errors"] == []
    again = ddplint(project, "--fix", "--unsafe-fixes", ".")
    assert again.returncode == 0, again.stdout + again.stderr
    final = snapshot(project)
    assert sorted(final) == sorted(before)
    assert {name: final[name][0] for name in fixed} == fixed


def test_a_live_fixers_temporary_file_is_kept(tmp_path: Path) -> None:
    target = tmp_path / "conf.yaml"
    target.write_text("x: 1\n")
    live = tmp_path / f".conf.yaml{TEMPORARY_TAG}{os.getppid()}-abc.tmp"
    dead_pid = _dead_pid()
    dead = tmp_path / f".conf.yaml{TEMPORARY_TAG}{dead_pid}-abc.tmp"
    unrelated = tmp_path / ".conf.yaml.swp.tmp"
    other_file = tmp_path / f".other.yaml{TEMPORARY_TAG}{dead_pid}-abc.tmp"
    for path in (live, dead, unrelated, other_file):
        path.write_text("partial")
    assert remove_stale_temporaries(target) == [dead]
    assert live.exists() and unrelated.exists() and other_file.exists()


def _dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _flagged_with_fix(data: dict[str, Any]) -> set[str]:
    return {f["path"] for f in data["findings"] if f.get("fix")}


def assert_only_flagged_files_change(root: Path, *args: str) -> set[str]:
    """Run ``--fix --unsafe-fixes`` over ``root``: every file without a fixable finding keeps
    its bytes and mtime, no file appears or disappears. Returns the changed files."""
    flagged = {Path(p).as_posix() for p in _flagged_with_fix(report(root, *args, "."))}
    before = snapshot(root)
    done = ddplint(root, "--fix", "--unsafe-fixes", *args, ".")
    assert done.returncode in (0, 1), done.stdout + done.stderr
    after = snapshot(root)
    assert sorted(after) == sorted(before)
    changed = {name for name in before if after[name] != before[name]}
    assert changed <= flagged
    for name in set(before) - flagged:
        assert after[name] == before[name], name
    return changed


def test_fix_touches_only_flagged_files_of_the_example_project(tmp_path: Path) -> None:
    root = tmp_path / "example"
    shutil.copytree(EXAMPLE, root)
    changed = assert_only_flagged_files_change(root)
    assert changed  # the example project has fixable hazards
    assert not any(Path(name).name.startswith("clean_") for name in changed)


NEMO_ASR = CORPUS / "nemo_toolkit-2.7.3" / "nemo" / "collections" / "asr"


@pytest.mark.skipif(not NEMO_ASR.is_dir(), reason="corpus of package sources not installed")
def test_fix_touches_only_flagged_files_of_real_sources(tmp_path: Path) -> None:
    source = NEMO_ASR
    root = tmp_path / "asr"
    shutil.copytree(source, root)
    assert len(list(root.rglob("*.py"))) > 200
    changed = assert_only_flagged_files_change(root)
    assert changed  # at least one real DDP101 site (a synchronize after a kernel)


def with_ddp601_hazard(text: str) -> str | None:
    """``text`` with its first block ``train_ds`` loader given ``num_workers: 0`` and a
    ``persistent_workers: true`` line after it (the rest kept byte for byte)."""
    lines = text.splitlines(keepends=True)
    inside = None
    for number, line in enumerate(lines):
        stripped = line.strip()
        if stripped == "train_ds:":
            inside = len(line) - len(line.lstrip())
            continue
        if inside is None:
            continue
        indent = len(line) - len(line.lstrip())
        if stripped and indent <= inside:
            return None  # the section ended without num_workers
        if stripped.startswith("num_workers:"):
            ending = line[len(line.rstrip("\r\n")) :] or "\n"
            prefix = line[:indent]
            lines[number] = (
                f"{prefix}num_workers: 0{ending}{prefix}persistent_workers: true{ending}"
            )
            return "".join(lines)
    return None


def real_configs() -> list[Path]:
    """The example project's NEST config (trimmed from NeMo's) and every 6th real NeMo
    config (each fix run loads a file four times: ruamel's pure-Python loader is slow)."""
    found = [EXAMPLE / "configs" / "nest_fastconformer_ssl.yaml"]
    if NEMO_CONFIGS.is_dir():
        found += sorted(NEMO_CONFIGS.rglob("*.yaml"))[::6]
    return found


def test_yaml_fix_on_real_nemo_configs_changes_one_scalar(tmp_path: Path) -> None:
    hazards: dict[Path, str] = {}
    for number, config in enumerate(real_configs()):
        text = config.read_bytes().decode("utf-8")
        hazard = text if "persistent_workers: true" in text else with_ddp601_hazard(text)
        if hazard is None:
            continue
        copy = tmp_path / f"{number:02d}-{config.name}"
        copy.write_bytes(hazard.encode("utf-8"))
        hazards[copy] = hazard
    assert hazards
    done = ddplint(tmp_path, "--fix", "--select", "DDP601", ".")
    assert done.returncode == 0, done.stdout + done.stderr
    for copy, hazard in hazards.items():
        fixed = copy.read_bytes().decode("utf-8")
        removed, added = _changed_lines(hazard, fixed)
        assert len(removed) == len(added) == 1, (copy.name, removed, added)
        assert (
            removed[0].replace("persistent_workers: true", "persistent_workers: false", 1)
            == (added[0])
        ), copy.name
    if NEMO_CONFIGS.is_dir():
        assert len(hazards) > 8  # most real configs have a block train_ds loader


def _changed_lines(before: str, after: str) -> tuple[list[str], list[str]]:
    diff = difflib.ndiff(before.splitlines(keepends=True), after.splitlines(keepends=True))
    removed, added = [], []
    for line in diff:
        if line.startswith("- "):
            removed.append(line[2:])
        elif line.startswith("+ "):
            added.append(line[2:])
    return removed, added
