"""Render a verify run: the human report and ``--format json``."""

from __future__ import annotations

import json

from ddplint.verify.compare import rank_state
from ddplint.verify.divergence_text import (
    call_path,
    divergence_json,
    divergence_text,
    finding_text,
    frame_json,
    where,
)
from ddplint.verify.verifier import VerifyResult

JSON_VERSION = 1


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
        out += ["", *divergence_text("First divergence", first)]
    for mismatch in result.comparison.call_site_mismatches:
        out += ["", *divergence_text("Call-site mismatch", mismatch)]
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
        out.append(f"  confirmed       {finding_text(c.finding)}  [{c.reason}: {where(c.frame)}]")
    for finding in result.mapping.ran_not_cause:
        out.append(f"  ran, not the cause  {finding_text(finding)}")
    for finding in result.mapping.not_reached:
        out.append(f"  not reached     {finding_text(finding)}")
    for finding in result.mapping.not_reproduced:
        out.append(
            f"  not reproduced  {finding_text(finding)}  [not probed: no evidence either way]"
        )
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
        "divergences": [divergence_json(d) for d in result.comparison.divergences],
        "call_site_mismatches": [
            divergence_json(d) for d in result.comparison.call_site_mismatches
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
                "stack": [frame_json(f) for f in trace.main_stack],
            }
            for rank, trace in result.traces.items()
        ],
        "findings": [
            {
                "status": "confirmed",
                "reason": c.reason,
                "evidence": frame_json(c.frame),
                "problem": c.problem.summary,
                **c.finding.to_json(),
            }
            for c in result.mapping.confirmed
        ]
        + [{"status": "ran_not_cause", **f.to_json()} for f in result.mapping.ran_not_cause]
        + [{"status": "not_reached", **f.to_json()} for f in result.mapping.not_reached]
        + [{"status": "not_reproduced", **f.to_json()} for f in result.mapping.not_reproduced],
        "new": [
            {"kind": p.kind, "summary": p.summary, "location": frame_json(p.location)}
            for p in result.mapping.new
        ],
        "leftovers": [{"pid": p.pid, "command": p.command} for p in result.leftovers],
        "checksums": result.checksum_spread,
        "flight_recorder_dumps": result.watch.flight_recorder_dumps,
        "flight_recorder_divergence": None
        if result.dump_comparison is None or result.dump_comparison.first is None
        else divergence_json(result.dump_comparison.first),
        "run_dir": result.spec.run_dir if result.kept else None,
        "launcher_log": result.spec.log_path if result.kept else None,
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
