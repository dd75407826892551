"""Reading what ranks leave behind (traces, faulthandler dumps, status) and deciding
from their status that a job hangs."""

from __future__ import annotations

import faulthandler
import json
import os
import sys
import threading
import types
from pathlib import Path

import pytest

from ddplint.verify.frames import FrameFilter
from ddplint.verify.instrument import Recorder, TraceWriter
from ddplint.verify.rank_runtime import StallWatch
from ddplint.verify.trace import load_rank, parse_stack_dump
from ddplint.verify.watch import RankStatus, decide


def test_faulthandler_dump_parses_to_the_main_threads_user_frames(tmp_path: Path) -> None:
    dump = tmp_path / "rank-0.stacks"
    with open(dump, "w") as handle:
        faulthandler.dump_traceback(file=handle, all_threads=True)
    threads, fatal = parse_stack_dump(dump.read_text(), FrameFilter())
    main = next(t for t in threads if t.ident == threading.main_thread().ident)
    assert fatal is None
    assert main.frames[0].file == __file__
    assert (
        main.frames[0].function == "test_faulthandler_dump_parses_to_the_main_threads_user_frames"
    )


def test_crash_dump_reports_the_fatal_error() -> None:
    text = (
        "Fatal Python error: Aborted\n\n"
        "Current thread 0x00007f0000000001 (most recent call first):\n"
        '  File "/project/train.py", line 29 in main\n'
        '  File "/project/train.py", line 36 in <module>\n'
    )
    threads, fatal = parse_stack_dump(text)
    assert fatal == "Aborted"
    assert [f.line for f in threads[0].frames] == [29, 36] and threads[0].ident == 0x7F0000000001


def test_trace_survives_a_line_cut_short_by_a_kill(tmp_path: Path) -> None:
    records = [
        {"kind": "start", "t": 1.0, "rank": 1, "world_size": 2, "pid": 42, "main_thread": 7},
        {"kind": "ready", "t": 2.0, "backend": "gloo"},
        {
            "kind": "call",
            "seq": 1,
            "op": "broadcast",
            "t": 3.0,
            "group": {"name": "default", "ranks": [0, 1]},
            "src": 0,
            "tensors": {"tensor": {"shape": [2, 3], "dtype": "float32"}},
            "stack": [{"file": "/p/train.py", "line": 9, "function": "main"}],
        },
        {"kind": "done", "seq": 1, "t": 3.5},
        {"kind": "call", "seq": 2, "op": "barrier", "t": 4.0, "group": {"name": "default"}},
    ]
    path = tmp_path / "rank-1.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + '{"kind": "do')
    trace = load_rank(str(path), 1)
    assert (trace.pid, trace.backend, trace.unreadable_lines) == (42, "gloo", 1)
    first, second = trace.calls
    assert first.completed and first.describe() == "broadcast(src=0) float32[2, 3]"
    assert first.site is not None and first.site.line == 9
    assert not second.completed and second.describe() == "barrier"


def status(rank: int, still: float, open_since: float | None = None, **more: object) -> RankStatus:
    return RankStatus(rank, 100.0, still, "barrier" if open_since else None, open_since, **more)  # type: ignore[arg-type]


def test_a_rank_waiting_in_a_collective_for_the_window_is_a_hang() -> None:
    statuses = {0: status(0, 94.0, open_since=94.0), 1: status(1, 99.9)}
    reason = decide(statuses, {0, 1}, now=100.0, window=5.0, interval=0.5)
    assert reason == "rank 0 waited 6.0s inside barrier"
    assert decide(statuses, {0, 1}, now=98.0, window=5.0, interval=0.5) is None


def test_no_live_rank_moving_for_the_window_is_a_hang() -> None:
    statuses = {0: status(0, 90.0), 1: status(1, 91.0)}
    assert decide(statuses, {0, 1}, 100.0, 5.0, 0.5) == "no progress for 5.0s on ranks 0, 1"
    moving = {0: status(0, 90.0), 1: status(1, 99.5)}
    assert decide(moving, {0, 1}, 100.0, 5.0, 0.5) is None


def test_finished_and_dead_ranks_are_not_waited_on() -> None:
    statuses = {0: status(0, 90.0, open_since=90.0, finished=True), 1: status(1, 90.0)}
    assert decide(statuses, {0}, 100.0, 5.0, 0.5) is None
    assert decide(statuses, {0, 1}, 100.0, 5.0, 0.5) == "no progress for 5.0s on rank 1"


def test_loaded_files_are_module_paths_not_names_torch_made_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch.ops says its ``__file__`` is "_ops.py": it was recorded as the project's
    ``./_ops.py`` (seen on an H100 run); a module with no real path is left out."""
    monkeypatch.chdir(tmp_path)
    for name in ("_ops.py", "train.py"):
        (tmp_path / name).write_text("")
    made_up = types.ModuleType("made_up_ops")
    made_up.__file__ = "_ops.py"
    real = types.ModuleType("train")
    real.__file__ = str(tmp_path / "train.py")
    monkeypatch.setitem(sys.modules, "made_up_ops", made_up)
    monkeypatch.setitem(sys.modules, "train", real)
    writer = TraceWriter(str(tmp_path / "rank-0.jsonl"))
    watch = StallWatch(
        str(tmp_path / "rank-0.status"), 0.1, Recorder(writer, FrameFilter()), str(tmp_path), 0
    )
    watch.record_loaded_files()
    recorded = [json.loads(line) for line in (tmp_path / "rank-0.jsonl").read_text().splitlines()]
    files = {f for record in recorded for f in record["files"]}
    assert os.path.realpath(tmp_path / "train.py") in files
    assert os.path.realpath(tmp_path / "_ops.py") not in files
