"""Stopping a run (M2): Ctrl-C (SIGINT to the process group or to the main process only)
and SIGTERM end ``ddplint check`` by that signal (a shell sees 130 / 143, never 1, the
findings code), with no worker process left; so does Ctrl-C during a long in-process
parse (no SIGABRT); workers die with a main process that is killed. No test asserts how
fast that happens (a loaded machine would fail it); the waits are hang guards."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ddplint.fixer import write_atomic
from ddplint.interrupt import Interrupted, _raise_interrupted

from .support import HANG_GUARD, HAZARD, sigint_ignored

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc"),
]

#: Enough files that a 2-worker run is still busy when the test signals it.
TREE_FILES = 3000
#: Code after the hazard, so that each file takes a while to lint: the pool stays busy
#: for far longer than the test takes to signal it, even on a loaded machine.
FILLER = "".join(
    f"\n\ndef helper_{n}(x):\n    return [x + {n} for _ in range(3)]\n" for n in range(60)
)


def _children(pid: int) -> set[int]:
    """Live (not zombie) processes whose parent is ``pid``."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[1]) == pid:
            found.add(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _start(folder: Path, *args: str) -> subprocess.Popen[bytes]:
    """``ddplint check`` in its own session (a terminal's process group)."""
    return subprocess.Popen(
        [sys.executable, "-m", "ddplint", "check", "--no-cache", "-q", *args],
        cwd=folder,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def _wait_for_workers(process: subprocess.Popen[bytes], count: int) -> set[int]:
    deadline = time.monotonic() + HANG_GUARD
    while time.monotonic() < deadline:
        workers = _children(process.pid)
        if len(workers) >= count:
            return workers
        if process.poll() is not None:
            break
        time.sleep(0.05)
    pytest.fail(f"the pool never started (exit {process.poll()})")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tree")
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    for package in range(TREE_FILES // 100):
        folder = root / f"pkg{package:03}"
        folder.mkdir()
        for number in range(100):
            (folder / f"m{number:03}.py").write_text(HAZARD.replace("Net", f"Net{number}") + FILLER)
    return root


def _stop(process: subprocess.Popen[bytes], send: str, signum: int) -> bytes:
    """Send ``signum``; the run's stderr once it has ended."""
    if send == "group":
        os.killpg(process.pid, signum)
    else:
        os.kill(process.pid, signum)
    try:
        _, err = process.communicate(timeout=HANG_GUARD)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    return err


@pytest.mark.parametrize(
    ("send", "signum"),
    [
        pytest.param("group", signal.SIGINT, marks=sigint_ignored, id="ctrl-c"),
        pytest.param("main", signal.SIGINT, marks=sigint_ignored, id="sigint-main"),
        pytest.param("main", signal.SIGTERM, id="sigterm-main"),
    ],
)
def test_signal_stops_a_pool_run_at_once(tree: Path, send: str, signum: int) -> None:
    process = _start(tree, "-j", "2", ".")
    workers = _wait_for_workers(process, 2)
    err = _stop(process, send, signum)
    time.sleep(0.5)
    left = {pid for pid in workers if _alive(pid)}
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert process.returncode == -signum, err.decode(errors="replace")
    assert not left, f"workers {left} outlived the run"
    assert b"Traceback" not in err
    assert f"ddplint: interrupted ({signal.Signals(signum).name})".encode() in err


@sigint_ignored
def test_ctrl_c_stops_an_in_process_run(tree: Path) -> None:
    """``-j 1``: every file is linted in the main process."""
    process = _start(tree, "-j", "1", ".")
    time.sleep(3)
    assert process.poll() is None, "the run ended before the interrupt"
    err = _stop(process, "group", signal.SIGINT)
    assert process.returncode == -signal.SIGINT, err.decode(errors="replace")
    assert b"Traceback" not in err and b"Aborted" not in err


def test_workers_die_with_a_killed_main_process(tree: Path) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("parent-death signal is Linux only")
    process = _start(tree, "-j", "2", ".")
    workers = _wait_for_workers(process, 2)
    process.kill()
    process.wait(timeout=HANG_GUARD)
    deadline = time.monotonic() + HANG_GUARD
    while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
        time.sleep(0.05)
    left = {pid for pid in workers if _alive(pid)}
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"workers {left} outlived a killed main process"


@sigint_ignored
def test_ctrl_c_during_a_long_in_process_parse(tmp_path: Path) -> None:
    """One big file (no pool): LibCST holds the GIL while it parses natively."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    table = "import torch\nTABLE = [" + "1," * 1_000_000 + "]\ntorch.cuda.synchronize()\n"
    (tmp_path / "table.py").write_text(table)
    process = _start(tmp_path, "table.py")
    time.sleep(4)
    if process.poll() is not None:
        pytest.skip("the file was handled before the interrupt (nothing long to interrupt)")
    err = _stop(process, "group", signal.SIGINT)
    assert process.returncode == -signal.SIGINT, err.decode(errors="replace")


def test_sigterm_while_a_fix_is_written_leaves_the_file_whole_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """N13: a signal that arrives between the temporary file and its rename takes effect
    after the rename: the file is fixed, no ``.tmp`` stays, and the run still stops."""
    target = tmp_path / "net.py"
    target.write_text("old\n")
    real_fsync = os.fsync

    def fsync_then_signal(fd: int) -> None:
        real_fsync(fd)
        os.kill(os.getpid(), signal.SIGTERM)  # mid-write, as a CI cancel would

    monkeypatch.setattr(os, "fsync", fsync_then_signal)
    previous = signal.signal(signal.SIGTERM, _raise_interrupted)
    try:
        with pytest.raises(Interrupted):
            write_atomic(target, b"new\n", expected=b"old\n")
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert target.read_bytes() == b"new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["net.py"]
