"""Merge each rank's flight-recorder dump (every c10d op, from C++) into its Python-level
trace (which keeps the user's call site and the call's arguments). An op created while
one of the rank's recorded Python calls was running belongs to that call and is dropped;
every other op (a functional collective, a DTensor redistribution, a C++ comm hook) is
added as a collective of its own, placed by time, with the user frames and framework
frames the recorder captured. Nothing is merged unless every rank left a dump."""

from __future__ import annotations

import bisect
import os

from ddplint.verify.dump_traces import entry_collective, group_key
from ddplint.verify.flight_recorder import dump_path
from ddplint.verify.fr_dumps import DumpEntry, DumpError, read_dump
from ddplint.verify.frames import FrameFilter
from ddplint.verify.trace import Collective, RankTrace

LABEL = "c10d op seen by the flight recorder only"
#: Sequence numbers of added ops start here (the Python-level ones count from 1).
FIRST_SEQ = 1_000_000


def load_entries(run_dir: str, rank: int) -> list[DumpEntry]:
    try:
        return list(read_dump(dump_path(run_dir, rank), rank).entries)
    except DumpError:
        return []


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
    rank: int, seq: int, entry: DumpEntry, trace: RankTrace, frames: FrameFilter
) -> Collective:
    group = group_key(entry)
    members = next((c.group_ranks for c in trace.calls if c.group == group), ())
    return entry_collective(rank, seq, entry, frames, members, LABEL)


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
            if not entry.p2p and not covered.covers(entry.time)
        ]
        if extra:
            trace.calls = sorted([*trace.calls, *extra], key=lambda c: c.time)
            added += len(extra)
    return added
