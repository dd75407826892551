"""Watch a running job for lack of progress. Each rank's status file says since when its
main thread has not moved and which synchronous collective it is inside. The job hangs
when a rank has waited inside a collective for the whole window, or when no live rank
has moved for the whole window. Then every rank dumps its stacks and all are stopped."""

from __future__ import annotations

import glob
import json
import os
import re
import signal
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from ddplint.verify import flight_recorder, layout
from ddplint.verify.launch import Launched, LaunchSpec, release_groups, stop
from ddplint.verify.reaper import is_alive

POLL_SECONDS = 0.2
STACK_DUMP_WAIT = 3.0
#: Symbolising a flight recorder imports torch's compiler: seconds on a loaded machine.
#: Only a rank that has not written its dump yet makes the verifier wait this long.
C10D_DUMP_WAIT = 15.0
FLIGHT_RECORDER_WAIT = 30.0
#: After every rank's entry returned: how long torch's and Python's teardown may take.
EXIT_GRACE = 10.0


@dataclass(frozen=True)
class RankStatus:
    rank: int
    time: float
    still_since: float
    open_op: str | None
    open_since: float | None
    finished: bool = False


@dataclass(frozen=True)
class Hang:
    """Why the watcher called it a hang, and when (seconds after launch)."""

    reason: str
    detected_after: float
    window: float


@dataclass
class WatchResult:
    returncode: int | None
    elapsed: float
    launched_at: float  # wall clock
    hang: Hang | None = None
    interrupted: bool = False
    rank_pids: dict[int, int] = field(default_factory=dict)
    flight_recorder_dumps: list[str] = field(default_factory=list)


def read_statuses(run_dir: str) -> dict[int, RankStatus]:
    statuses = {}
    for path in glob.glob(os.path.join(run_dir, "rank-*.status")):
        match = re.search(r"rank-(\d+)\.status$", path)
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, json.JSONDecodeError):
            continue
        if not match:
            continue
        opened = data.get("open") or {}
        rank = int(match.group(1))
        statuses[rank] = RankStatus(
            rank,
            float(data["t"]),
            float(data["still_since"]),
            opened.get("op"),
            opened.get("t"),
            bool(data.get("finished", False)),
        )
    return statuses


def read_rank_pids(run_dir: str) -> dict[int, int]:
    """Global rank -> pid of the ranks on this machine, from the first record of each
    trace (a shared trace folder also holds other machines' ranks)."""
    host = socket.gethostname()
    pids = {}
    for path in glob.glob(os.path.join(run_dir, "rank-*.jsonl")):
        try:
            with open(path, encoding="utf-8") as handle:
                first = json.loads(handle.readline())
        except (OSError, json.JSONDecodeError):
            continue
        if first.get("kind") == "start" and first.get("host") == host:
            pids[int(first["rank"])] = int(first["pid"])
    return pids


def decide(
    statuses: dict[int, RankStatus], alive: set[int], now: float, window: float, interval: float
) -> str | None:
    """The reason the job hangs, or None while it may still be making progress."""
    live = [s for r, s in statuses.items() if r in alive and not s.finished]
    if not live:
        return None
    stale = 2 * interval + 1.0
    for status in live:
        waiting = now - status.open_since if status.open_since is not None else 0.0
        if waiting >= window and now - status.still_since >= window:
            return f"rank {status.rank} waited {waiting:.1f}s inside {status.open_op}"

    def still(status: RankStatus) -> bool:
        return now - status.still_since >= window or now - status.time >= window + stale

    if all(still(s) for s in live):
        ranks = ", ".join(str(s.rank) for s in live)
        return f"no progress for {window:.1f}s on rank{'s' if len(live) > 1 else ''} {ranks}"
    return None


def dump_stacks(run_dir: str, pids: dict[int, int]) -> None:
    """Ask every live rank for its threads' stacks; wait until each has written them."""
    sizes = {}
    for rank, pid in pids.items():
        path = layout.stacks_file(run_dir, rank)
        sizes[rank] = os.path.getsize(path) if os.path.exists(path) else 0
        try:
            os.kill(pid, getattr(signal, layout.STACK_SIGNAL_NAME))
        except ProcessLookupError:
            sizes.pop(rank)
    deadline = time.monotonic() + STACK_DUMP_WAIT
    while sizes and time.monotonic() < deadline:
        time.sleep(0.05)
        for rank in list(sizes):
            path = layout.stacks_file(run_dir, rank)
            if os.path.exists(path) and os.path.getsize(path) > sizes[rank]:
                sizes.pop(rank)
    time.sleep(0.1)  # let the last writer finish its dump


def dump_c10d_ops(run_dir: str, pids: dict[int, int], interval: float) -> None:
    """Ask every live rank for its flight recorder (its watch thread polls for the
    request file) and wait until each has written it, or its watch would have."""
    path = os.path.join(run_dir, flight_recorder.REQUEST_NAME)
    with open(path, "w", encoding="utf-8"):
        pass
    deadline = time.monotonic() + 2 * interval + C10D_DUMP_WAIT
    waiting = dict(pids)
    while waiting and time.monotonic() < deadline:
        time.sleep(0.05)
        for rank, pid in list(waiting.items()):
            if os.path.exists(flight_recorder.dump_path(run_dir, rank)) or not is_alive(pid):
                waiting.pop(rank)


def flight_recorder_dumps(run_dir: str) -> list[str]:
    pattern = os.path.join(layout.flight_recorder_dir(run_dir), layout.FLIGHT_RECORDER_PREFIX + "*")
    return sorted(glob.glob(pattern))


def _uses_nccl(run_dir: str) -> bool:
    for path in glob.glob(os.path.join(run_dir, "rank-*.jsonl")):
        with open(path, encoding="utf-8", errors="replace") as handle:
            if any('"backend": "nccl"' in line for line in handle):
                return True
    return False


def _wait_for_flight_recorder(spec: LaunchSpec, pids: dict[int, int]) -> None:
    """NCCL dumps its flight recorder when the process-group timeout fires: give it the
    time to, while the ranks are still alive."""
    deadline = time.monotonic() + (spec.pg_timeout - spec.timeout) + FLIGHT_RECORDER_WAIT
    while time.monotonic() < deadline:
        dumped = [os.path.basename(d) for d in flight_recorder_dumps(spec.run_dir)]
        waiting = [
            r
            for r, pid in pids.items()
            if is_alive(pid)
            and not any(re.match(rf"{layout.FLIGHT_RECORDER_PREFIX}{r}(\D|$)", d) for d in dumped)
        ]
        if not waiting:
            return
        time.sleep(0.5)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (a CI job timing out) stops the ranks as Ctrl-C does: never orphan them."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def watch(launched: Launched, spec: LaunchSpec) -> WatchResult:
    """Wait for the job to end, or find it hung, dump stacks and stop it."""
    with terminate_as_interrupt():
        return _watch(launched, spec)


def _watch(launched: Launched, spec: LaunchSpec) -> WatchResult:
    hang: Hang | None = None
    interrupted = False
    pids: dict[int, int] = {}
    finished_at: float | None = None
    try:
        while launched.process.poll() is None:
            time.sleep(POLL_SECONDS)
            pids = read_rank_pids(spec.run_dir)
            alive = {r for r, pid in pids.items() if is_alive(pid)}
            statuses = read_statuses(spec.run_dir)
            now = time.time()
            reason = decide(statuses, alive, now, spec.timeout, spec.sample_interval)
            if statuses and all(s.finished for s in statuses.values()):
                finished_at = finished_at or now
                if now - finished_at > spec.timeout + EXIT_GRACE:
                    reason = "every rank's entry returned, but the processes did not exit"
            if reason:
                hang = Hang(reason, time.monotonic() - launched.started, spec.timeout)
                break
    except KeyboardInterrupt:
        interrupted = True
        hang = Hang(
            "interrupted (SIGINT or SIGTERM to ddplint)",
            time.monotonic() - launched.started,
            spec.timeout,
        )
    if hang is not None:
        pids = read_rank_pids(spec.run_dir)
        live = {r: pid for r, pid in pids.items() if is_alive(pid)}
        dump_stacks(spec.run_dir, live)
        dump_c10d_ops(spec.run_dir, live, spec.sample_interval)
        if _uses_nccl(spec.run_dir) and not interrupted:
            _wait_for_flight_recorder(spec, live)
        stop(launched, list(pids.values()))
    else:
        launched.process.wait()
        if launched.log is not None:
            launched.log.close()
        release_groups(list(read_rank_pids(spec.run_dir).values()))
    return WatchResult(
        returncode=launched.process.returncode,
        elapsed=time.monotonic() - launched.started,
        launched_at=launched.started_wall,
        hang=hang,
        interrupted=interrupted,
        rank_pids=read_rank_pids(spec.run_dir),
        flight_recorder_dumps=flight_recorder_dumps(spec.run_dir),
    )
