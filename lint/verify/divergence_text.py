"""How a divergence, a collective, a frame and a finding are written, in text and JSON:
shared by ``ddplint verify``'s report and the report on flight-recorder dumps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ddplint.discover import display_path
from ddplint.verify.compare import Divergence, RankAt, rank_list
from ddplint.verify.frames import Frame
from ddplint.verify.trace import Collective

DETAIL_NOTE = "TORCH_DISTRIBUTED_DEBUG=DETAIL checks op, shape and dtype only: it does not see this"


def where(frame: Frame | None) -> str:
    if frame is None:
        return "(no user frame)"
    return f"{display_path(Path(frame.file))}:{frame.line} in {frame.function}"


def call_path(frames: tuple[Frame, ...], depth: int = 4) -> str:
    shown = " <- ".join(where(f) for f in frames[:depth])
    return shown + (" <- ..." if len(frames) > depth else "")


def rank_line(at: RankAt, who: str | None = None) -> list[str]:
    """What one rank did at a divergence; ``who``: the label (``rank 3``, ``ranks 0-7``)."""
    who = who if who is not None else f"rank {at.rank}"
    if at.call is None:
        return [f"  {who}  (no collective)  {at.state}"]
    lines = [f"  {who}  {at.call.describe()}  at {where(at.call.site)}  [{at.state}]"]
    if at.call.label:
        lines.append(f"          {at.call.label}")
    if at.call.issued_by:
        more = " <- ..." if len(at.call.issued_by) > 4 else ""
        lines.append(f"          issued by {' <- '.join(at.call.issued_by[:4])}{more}")
    if at.call.via:
        lines.append(f"          via {at.call.via}")
    if len(at.call.stack) > 1:
        lines.append(f"          called from {call_path(at.call.stack[1:], 3)}")
    return lines


def divergence_text(title: str, divergence: Divergence, grouped: bool = False) -> list[str]:
    """``grouped``: ranks that did the same thing from the same line share one entry
    (``ranks 0, 2-63``), for reports on many ranks."""
    group = "the default group" if divergence.group == "default" else f"group {divergence.group}"
    lines = [f"{title} at collective #{divergence.position} on {group}: {divergence.detail}"]
    alike: dict[tuple[str, ...], list[RankAt]] = {}
    for at in divergence.ranks:
        key = tuple(rank_line(at, "")) if grouped else (str(at.rank),)
        alike.setdefault(key, []).append(at)
    for same in alike.values():
        ranks = [at.rank for at in same]
        who = f"rank{'s' if len(ranks) > 1 else ''} {rank_list(ranks)}"
        lines.extend(rank_line(same[0], who))
    if divergence.detail_mode_misses:
        lines.append(f"  note: {DETAIL_NOTE}")
    return lines


def finding_text(finding: Any) -> str:
    return f"{finding.path}:{finding.line}:{finding.column} {finding.rule} {finding.message}"


def frame_json(frame: Frame | None) -> dict[str, Any] | None:
    if frame is None:
        return None
    return {"path": display_path(Path(frame.file)), "line": frame.line, "function": frame.function}


def call_json(call: Collective) -> dict[str, Any]:
    return {
        "op": call.op,
        "reduce_op": call.reduce_op,
        "roots": dict(call.roots),
        "tensors": dict(call.tensors),
        "async": call.asynchronous,
        "label": call.label,
        "via": call.via,
        "issued_by": list(call.issued_by),
        "site": frame_json(call.site),
        "stack": [frame_json(f) for f in call.stack],
        "completed": call.completed,
        "error": call.error,
    }


def divergence_json(divergence: Divergence) -> dict[str, Any]:
    return {
        "group": divergence.group,
        "group_ranks": list(divergence.group_ranks),
        "position": divergence.position,
        "kind": divergence.kind,
        "detail": divergence.detail,
        "detail_mode_misses": divergence.detail_mode_misses,
        "ranks": [
            {
                "rank": at.rank,
                "state": at.state,
                "call": call_json(at.call) if at.call else None,
            }
            for at in divergence.ranks
        ],
    }
