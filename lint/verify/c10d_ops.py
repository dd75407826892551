"""Merge each rank's flight-recorder dump (every c10d op, from C++) into its Python-level
trace (which keeps the user's call site and the call's arguments). An op created while
one of the rank's recorded Python calls was running belongs to that call and is dropped;
every other op (a functional collective, a DTensor redistribution, a C++ comm hook) is
added as a collective of its own, placed by time, with the user frames and framework
frames the recorder captured. Nothing is merged unless every rank left a dump."""

from __future__ import annotations

import bisect
import json
import os
from typing import Any

from ddplint.verify.flight_recorder import dump_path
from ddplint.verify.frames import Frame, FrameFilter
from ddplint.verify.trace import Collective, RankTrace

#: The recorder's dtype names -> torch's (as the Python-level trace writes them).
DTYPES = {
    "Float": "float32",
    "Double": "float64",
    "Half": "float16",
    "BFloat16": "bfloat16",
    "Long": "int64",
    "Int": "int32",
    "Short": "int16",
    "Char": "int8",
    "Byte": "uint8",
    "Bool": "bool",
}
LABEL = "c10d op seen by the flight recorder only"
#: Sequence numbers of added ops start here (the Python-level ones count from 1).
FIRST_SEQ = 1_000_000


def load_entries(run_dir: str, rank: int) -> list[dict[str, Any]]:
    try:
        with open(dump_path(run_dir, rank), encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return []
    entries = data.get("entries") if isinstance(data, dict) else None
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


class _Intervals:
    """When each recorded Python call ran: [issued, returned] (open-ended if it never
    returned)."""

    def __init__(self, calls: list[Collective]) -> None:
        spans = sorted(
            (c.time, c.returned if c.returned is not None else float("inf")) for c in calls
        )
        self.starts = [start for start, _ in spans]
        self.spans = spans

    def covers(self, moment: float) -> bool:
        index = bisect.bisect_right(self.starts, moment)
        return any(end >= moment for _, end in self.spans[max(0, index - 16) : index])


def _collective(
    rank: int, seq: int, entry: dict[str, Any], trace: RankTrace, frames: FrameFilter
) -> Collective:
    group = "default" if entry.get("pg_desc") == "default_pg" else str(entry.get("pg_name"))
    members = next((c.group_ranks for c in trace.calls if c.group == group), ())
    tensors = tuple(
        (f"input{index}", f"{DTYPES.get(str(dtype), str(dtype))}[{', '.join(map(str, size))}]")
        for index, (size, dtype) in enumerate(
            zip(entry.get("input_sizes", []), entry.get("input_dtypes", []), strict=False)
        )
    )
    user: list[Frame] = []
    framework: list[str] = []
    for raw in entry.get("frames", []):
        frame = Frame(str(raw.get("file", "")), int(raw.get("line", 0)), str(raw.get("function")))
        if frames.is_user(frame.file):
            user.append(frame)
        elif not user and not frames.is_verifier(frame.file):
            framework.append(f"{frames.display_name(frame.file)}:{frame.line} in {frame.function}")
    return Collective(
        rank=rank,
        seq=seq,
        op=str(entry.get("op", "?")).rpartition(":")[2],
        group=group,
        group_ranks=members,
        time=float(entry.get("t", 0.0)),
        tensors=tensors,
        label=LABEL,
        via=framework[-1] if framework else None,
        issued_by=tuple(framework[:-1]),
        stack=tuple(user),
        completed=bool(entry.get("retired")) or entry.get("state") == "completed",
    )


def merge(run_dir: str, traces: dict[int, RankTrace], frames: FrameFilter) -> int:
    """Add every rank's c10d ops that no Python-level call explains; how many. Only when
    every rank left a dump: ops added to some ranks alone would make false divergences
    (a rank that crashed writes none)."""
    if not all(os.path.exists(dump_path(run_dir, rank)) for rank in traces):
        return 0
    added = 0
    for rank, trace in traces.items():
        covered = _Intervals(trace.calls)
        extra = [
            _collective(rank, FIRST_SEQ + index, entry, trace, frames)
            for index, entry in enumerate(load_entries(run_dir, rank))
            if not entry.get("p2p") and not covered.covers(float(entry.get("t", 0.0)))
        ]
        if extra:
            trace.calls = sorted([*trace.calls, *extra], key=lambda c: c.time)
            added += len(extra)
    return added
