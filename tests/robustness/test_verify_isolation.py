"""`ddplint verify` leaves nothing behind: after Ctrl-C (SIGINT to the verifier), a hang
timeout, a clean end, or the verifier itself being SIGKILLed, every rank and every
process a rank started (a DataLoader worker, a plain subprocess, one that moved to a
session of its own) is gone, the temporary files are removed (only the run folder the
report names is kept), and a second run right after works. Real torchrun launches of
2 gloo ranks over fixtures/verify/spawns_children.py, each bounded in time."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ddplint.verify.launch import MAX_SCRATCH_PATH, LaunchSpec, rank_environment
from ddplint.verify.reaper import is_alive, marked_processes

from .support import sigint_ignored

pytest.importorskip("torch")
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = "fixtures/verify/spawns_children.py"
RANKS = 2
#: Hang guards (seconds): a verify run, and the wait for its processes to be gone. They
#: end a run that never ends; no test asserts how fast anything stops.
RUN_LIMIT = 600
STOP_LIMIT = 120.0


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A folder with a short path, for TMPDIR: multiprocessing's Unix sockets live below
    it, and pytest's own temporary paths are too long for the verifier to nest its own."""
    path = Path(tempfile.mkdtemp(prefix="ddv"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


class Run:
    """One ``ddplint verify --format json`` of the fixture with TMPDIR ``tmp``/NAME."""

    def __init__(
        self, tmp: Path, name: str, *options: str, script_args: tuple[str, ...] = ()
    ) -> None:
        self.pids_dir = tmp / name / "pids"
        self.tmpdir = tmp / name / "tmp"
        self.pids_dir.mkdir(parents=True)
        self.tmpdir.mkdir(parents=True)
        command = [sys.executable, "-m", "ddplint", "verify", SCRIPT, "--format", "json", *options]
        command += ["--", str(self.pids_dir), *script_args]
        self.process = subprocess.Popen(
            command,
            cwd=ROOT,
            env={**os.environ, "TMPDIR": str(self.tmpdir)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def wait_for_children(self) -> None:
        """Until every rank has written its pids (its children are up)."""
        deadline = time.monotonic() + RUN_LIMIT
        while len(list(self.pids_dir.glob("rank-*.pids"))) < RANKS:
            assert self.process.poll() is None, self.process.communicate()
            assert time.monotonic() < deadline, "the ranks never started"
            time.sleep(0.2)

    def finish(self) -> tuple[int, dict[str, Any]]:
        stdout, stderr = self.process.communicate(timeout=RUN_LIMIT)
        assert stdout, stderr
        return self.process.returncode, json.loads(stdout)

    def pids(self) -> list[int]:
        """Each rank, its DataLoader worker and its sleepers."""
        found = []
        for path in sorted(self.pids_dir.glob("rank-*.pids")):
            found += [int(pid) for pid in path.read_text().split()]
        return found

    def assert_nothing_left(self, run_dir: str | None) -> None:
        pids = self.pids()
        assert len(pids) >= RANKS * 3  # rank, worker, sleeper (and a detached one)
        assert [pid for pid in pids if is_alive(pid)] == []
        if run_dir:
            assert marked_processes(run_dir) == []
        # torchrun's and multiprocessing's temporary folders went with the run's own
        assert sorted(p.name for p in self.tmpdir.iterdir()) == (
            [Path(run_dir).name] if run_dir and Path(run_dir).parent == self.tmpdir else []
        )


@sigint_ignored
def test_interrupt_stops_everything_and_a_second_run_works(short_tmp: Path) -> None:
    first = Run(short_tmp, "a", "--timeout", "60", script_args=("--mode", "sleep", "--detached"))
    first.wait_for_children()
    time.sleep(0.5)
    first.process.send_signal(signal.SIGINT)
    code, report = first.finish()
    # stopped by the interrupt, not by the 60-second hang timeout
    assert (code, report["outcome"]) == (130, "interrupted") and report["interrupted"]
    assert report["hang"] is None  # an interrupt is not a diagnosis
    # the run folder the report names holds every rank's stacks; nothing else is left
    run_dir = report["run_dir"]
    assert {p.name for p in Path(run_dir).iterdir()} >= {"rank-0.stacks", "rank-1.stacks"}
    first.assert_nothing_left(run_dir)

    second = Run(short_tmp, "b", "--timeout", "30", script_args=("--detached",))
    code, report = second.finish()
    assert (code, report["outcome"]) == (0, "clean")
    assert report["run_dir"] is None  # a clean run keeps no folder
    second.assert_nothing_left(None)


def test_hang_timeout_stops_everything(short_tmp: Path, tmp_path: Path) -> None:
    trace_dir = tmp_path / "trace"
    run = Run(
        short_tmp,
        "a",
        "--timeout",
        "3",
        "--trace-dir",
        str(trace_dir),
        script_args=("--mode", "hang", "--detached"),
    )
    code, report = run.finish()
    assert code == 1 and report["outcome"] == "hang"
    run_dir = Path(report["run_dir"])
    assert run_dir.parent == trace_dir
    run.assert_nothing_left(str(run_dir))
    names = {p.name for p in run_dir.iterdir()}
    own = ("rank-", "launcher", "probes.json", "dump-flight-recorder")
    assert all(n.startswith(own) for n in names), names


def test_killed_verifier_takes_its_ranks_down(short_tmp: Path) -> None:
    run = Run(short_tmp, "a", "--timeout", "60", script_args=("--mode", "sleep", "--detached"))
    run.wait_for_children()
    run.process.kill()  # SIGKILL: the verifier can stop nothing itself
    run.process.communicate(timeout=RUN_LIMIT)
    deadline = time.monotonic() + STOP_LIMIT
    while any(is_alive(pid) for pid in run.pids()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [pid for pid in run.pids() if is_alive(pid)] == []


def test_a_long_temporary_folder_is_not_handed_to_the_ranks() -> None:
    spec = LaunchSpec("train.py", run_dir="/tmp/run")
    short = rank_environment(spec, "/tmp/ddplint-tmp-abcdefgh")
    assert short["TMPDIR"] == "/tmp/ddplint-tmp-abcdefgh"
    long = "/tmp/" + "x" * MAX_SCRATCH_PATH
    assert rank_environment(spec, long).get("TMPDIR") == os.environ.get("TMPDIR")
    assert str(os.getpid()) == short["DDPLINT_VERIFY_PID"]
