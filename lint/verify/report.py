"""Render a verify run: the human report and ``--format json``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ddplint.discover import display_path
from ddplint.verify.compare import Divergence, RankAt, rank_state
from ddplint.verify.frames import Frame
from ddplint.verify.trace import Collective
from ddplint.verify.verifier import VerifyResult

JSON_VERSION = 1
DETAIL_NOTE = "TORCH_DISTRIBUTED_DEBUG=DETAIL checks op, shape and dtype only: it does not see this"


def where(frame: Frame | None) -> str:
    if frame is None:
        return "(no user frame)"
    return f"{display_path(Path(frame.file))}:{frame.line} in {frame.function}"


def call_path(frames: tuple[Frame, ...], depth: int = 4) -> str:
    shown = " <- ".join(where(f) for f in frames[:depth])
    return shown + (" <- ..." if len(frames) > depth else "")


def _rank_line(at: RankAt) -> list[str]:
    if at.call is None:
        return [f"  rank {at.rank}  (no collective)  {at.state}"]
    lines = [f"  rank {at.rank}  {at.call.describe()}  at {where(at.call.site)}  [{at.state}]"]
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


def _divergence_text(title: str, divergence: Divergence) -> list[str]:
    group = "the default group" if divergence.group == "default" else f"group {divergence.group}"
    lines = [f"{title} at collective #{divergence.position} on {group}: {divergence.detail}"]
    for at in divergence.ranks:
        lines.extend(_rank_line(at))
    if divergence.detail_mode_misses:
        lines.append(f"  note: {DETAIL_NOTE}")
    return lines


def render_text(result: VerifyResult) -> str:
    spec = result.spec
    world = max((t.world_size for t in result.traces.values()), default=0)
    backends = sorted({t.backend for t in result.traces.values() if t.backend})
    out = [
        f"ddplint verify {spec.entry}: {world} ranks ({', '.join(backends) or 'no backend'}), "
        f"hang window {spec.timeout:g}s"
    ]
    out.extend(f"note: {note}" for note in result.notes())
    hang = result.watch.hang
    if hang and result.watch.interrupted:
        out.append(
            f"interrupted {hang.detected_after:.1f}s after launch: stacks dumped, ranks "
            "stopped; what follows is where each rank was, not a diagnosis"
        )
    elif hang:
        out.append(
            f"hang: {hang.reason}; diagnosed {hang.detected_after:.1f}s after launch, "
            "stacks dumped, ranks stopped"
        )
    first = result.comparison.first
    if first:
        out += ["", *_divergence_text("First divergence", first)]
    for mismatch in result.comparison.call_site_mismatches:
        out += ["", *_divergence_text("Call-site mismatch", mismatch)]
    if not result.comparison.divergences and not result.comparison.call_site_mismatches:
        calls = sum(len(t.calls) for t in result.traces.values()) // max(world, 1)
        out += [
            "",
            f"No divergence: the ranks issued the same {calls} "
            f"collective{'s' if calls != 1 else ''} in the same order.",
        ]

    out += ["", "Ranks:"]
    for rank, trace in result.traces.items():
        if trace.main_stack and trace.exit is None:
            how = f"crashed ({trace.fatal})" if trace.fatal else "stopped"
            out.append(f"  rank {rank}  {how} at {call_path(trace.main_stack)}")
        else:
            out.append(f"  rank {rank}  {rank_state(trace, rank)}")
    out += ["", f"Static check ({len(result.static.findings)} finding(s) in the code that ran):"]
    for c in result.mapping.confirmed:
        out.append(f"  confirmed       {_finding(c.finding)}  [{c.reason}: {where(c.frame)}]")
    for finding in result.mapping.ran_not_cause:
        out.append(f"  ran, not the cause  {_finding(finding)}")
    for finding in result.mapping.not_reached:
        out.append(f"  not reached     {_finding(finding)}")
    for finding in result.mapping.not_reproduced:
        out.append(f"  not reproduced  {_finding(finding)}  [not probed: no evidence either way]")
    for problem in result.mapping.new:
        out.append(f"  new             {problem.summary} (at {where(problem.location)})")
    if not result.static.findings and not result.mapping.new:
        out.append("  nothing flagged, nothing found at run time")
    if result.checksum_spread:
        out += ["", "Parameter checksums at exit:"]
        for row in result.checksum_spread:
            verdict = (
                "identical on every rank"
                if row["identical"]
                else (f"DIFFER across ranks (sum spread {float(str(row['sum_spread'])):.6g})")
            )
            out.append(f"  {row['name']}: {verdict}")
    dumps = result.watch.flight_recorder_dumps
    if dumps:
        out += ["", "NCCL flight-recorder dumps:", *(f"  {d}" for d in dumps)]
    out.append("")
    timings = ", ".join(
        f"{name.removesuffix('_s').replace('_', ' ')} {value:.1f}s"
        for name, value in result.timings().items()
        if value is not None
    )
    out.append(f"Timings after launch: {timings}")
    if result.kept:
        out.append(f"Run folder: {spec.run_dir} (rank-N.jsonl traces, rank-N.stacks, launcher.log)")
    out.append(f"Result: {result.outcome} (exit code {result.exit_code})")
    return "\n".join(out) + "\n"


def _finding(finding: Any) -> str:
    return f"{finding.path}:{finding.line}:{finding.column} {finding.rule} {finding.message}"


def _frame_json(frame: Frame | None) -> dict[str, Any] | None:
    if frame is None:
        return None
    return {"path": display_path(Path(frame.file)), "line": frame.line, "function": frame.function}


def _call_json(call: Collective) -> dict[str, Any]:
    return {
        "op": call.op,
        "reduce_op": call.reduce_op,
        "roots": dict(call.roots),
        "tensors": dict(call.tensors),
        "async": call.asynchronous,
        "label": call.label,
        "via": call.via,
        "issued_by": list(call.issued_by),
        "site": _frame_json(call.site),
        "stack": [_frame_json(f) for f in call.stack],
        "completed": call.completed,
        "error": call.error,
    }


def _divergence_json(divergence: Divergence) -> dict[str, Any]:
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
                "call": _call_json(at.call) if at.call else None,
            }
            for at in divergence.ranks
        ],
    }


def render_json(result: VerifyResult) -> str:
    hang = result.watch.hang
    document = {
        "version": JSON_VERSION,
        "entry": result.spec.entry,
        "outcome": result.outcome,
        "exit_code": result.exit_code,
        "world_size": max((t.world_size for t in result.traces.values()), default=0),
        "backends": sorted({t.backend for t in result.traces.values() if t.backend}),
        "timeout_s": result.spec.timeout,
        "timings": result.timings(),
        "notes": result.notes(),
        "interrupted": result.watch.interrupted,
        "hang": None
        if hang is None or result.watch.interrupted
        else {"reason": hang.reason, "detected_after_s": round(hang.detected_after, 3)},
        "divergences": [_divergence_json(d) for d in result.comparison.divergences],
        "call_site_mismatches": [
            _divergence_json(d) for d in result.comparison.call_site_mismatches
        ],
        "ranks": [
            {
                "rank": rank,
                "state": rank_state(trace, rank),
                "collectives": len(trace.calls),
                "exit": None
                if trace.exit is None
                else {
                    "status": trace.exit.status,
                    "code": trace.exit.code,
                    "error": trace.exit.error,
                },
                "stack": [_frame_json(f) for f in trace.main_stack],
            }
            for rank, trace in result.traces.items()
        ],
        "findings": [
            {
                "status": "confirmed",
                "reason": c.reason,
                "evidence": _frame_json(c.frame),
                "problem": c.problem.summary,
                **c.finding.to_json(),
            }
            for c in result.mapping.confirmed
        ]
        + [{"status": "ran_not_cause", **f.to_json()} for f in result.mapping.ran_not_cause]
        + [{"status": "not_reached", **f.to_json()} for f in result.mapping.not_reached]
        + [{"status": "not_reproduced", **f.to_json()} for f in result.mapping.not_reproduced],
        "new": [
            {"kind": p.kind, "summary": p.summary, "location": _frame_json(p.location)}
            for p in result.mapping.new
        ],
        "leftovers": [{"pid": p.pid, "command": p.command} for p in result.leftovers],
        "checksums": result.checksum_spread,
        "flight_recorder_dumps": result.watch.flight_recorder_dumps,
        "run_dir": result.spec.run_dir if result.kept else None,
        "launcher_log": result.spec.log_path if result.kept else None,
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
