"""Render a diagnosis of flight-recorder dumps (``ddplint verify-dumps``): text and JSON.
A divergence a finding explains is "confirmed by the dump"; one no finding explains is a
recall lead, printed with what a new rule would need to know."""

from __future__ import annotations

import json
from typing import Any

from ddplint.verify.compare import Divergence, rank_list
from ddplint.verify.divergence_text import (
    divergence_json,
    divergence_text,
    finding_text,
    frame_json,
    where,
)
from ddplint.verify.dump_diagnosis import DumpDiagnosis, last_seen
from ddplint.verify.trace import Collective, RankTrace

JSON_VERSION = 1


def _group(name: str) -> str:
    return "the default group" if name == "default" else f"group {name}"


def _sites(divergence: Divergence) -> dict[str, list[int]]:
    """Each line some rank issued the divergent collective from -> those ranks."""
    sites: dict[str, list[int]] = {}
    for at in divergence.ranks:
        if at.call is not None:
            sites.setdefault(where(at.call.site), []).append(at.rank)
    return sites


def new_rule_needs(divergence: Divergence, traces: dict[int, RankTrace]) -> list[str]:
    """What a rule would have to see to flag this divergence before launch: the
    collective, the line, the ranks that reached it, and where the others were."""
    first: Collective | None = next((at.call for at in divergence.ranks if at.call), None)
    if first is None:
        return []
    reached = [at.rank for at in divergence.ranks if at.call and at.call.site == first.site]
    lines = [
        f"collective: {first.describe()} (#{divergence.position} on {_group(divergence.group)})",
        f"line: {where(first.site)}",
        f"reached by {_ranks(reached)}",
    ]
    elsewhere: dict[str, list[int]] = {}
    for at in divergence.ranks:
        if at.rank in reached:
            continue
        if at.call is not None:
            instead = f"instead it issued {at.call.describe()} at {where(at.call.site)}"
        else:
            trace = traces.get(at.rank)
            instead = f"its last recorded collective: {last_seen(trace) if trace else 'no dump'}"
        elsewhere.setdefault(instead, []).append(at.rank)
    lines += [f"{_ranks(ranks)} did not reach it; {text}" for text, ranks in elsewhere.items()]
    return lines


def _ranks(ranks: list[int]) -> str:
    return f"rank{'s' if len(ranks) > 1 else ''} {rank_list(ranks)}"


def _header(diagnosis: DumpDiagnosis) -> str:
    dumps = diagnosis.dumps.dumps
    forms = sorted({f"{d.form} {d.version}" for d in dumps.values()})
    backends = sorted({t.backend for t in diagnosis.traces.values() if t.backend})
    entries = sum(len(d.entries) for d in dumps.values())
    return (
        f"ddplint verify-dumps {diagnosis.folder}: {len(dumps)} rank dump(s) "
        f"({', '.join(forms) or 'none readable'}; {', '.join(backends) or 'no backend'}), "
        f"{entries} entries"
    )


def render_text(diagnosis: DumpDiagnosis) -> str:
    out = [_header(diagnosis)]
    out.extend(f"problem: {problem}" for problem in diagnosis.dumps.problems)
    out.extend(f"note: {note}" for note in diagnosis.notes)
    first = diagnosis.comparison.first
    if first:
        out += ["", *divergence_text("First divergence", first, grouped=True)]
    for mismatch in diagnosis.comparison.call_site_mismatches:
        out += ["", *divergence_text("Call-site mismatch", mismatch, grouped=True)]
    if diagnosis.traces and first is None and not diagnosis.comparison.call_site_mismatches:
        out += [
            "",
            "No divergence: every group's collectives agree on every rank that left a dump.",
        ]
    if diagnosis.traces:
        out += ["", "Ranks (the last collective each recorder kept):"]
        alike: dict[str, list[int]] = {}
        for rank, trace in diagnosis.traces.items():
            alike.setdefault(last_seen(trace), []).append(rank)
        out += [f"  {_ranks(ranks)}  {seen}" for seen, ranks in alike.items()]
    static = diagnosis.static
    count = len(static.findings) if static else 0
    out += ["", f"Static check ({count} finding(s) in the recorded files):"]
    for c in diagnosis.mapping.confirmed:
        out.append(
            f"  confirmed by the dump  {finding_text(c.finding)}  [{c.reason}: {where(c.frame)}]"
        )
    for finding in diagnosis.mapping.not_reproduced:
        out.append(f"  not tied to the dump  {finding_text(finding)}")
    for problem in diagnosis.mapping.new:
        if problem.location is None:
            out.append(f"  not tied to a line    {problem.summary} (the dumps hold no stacks)")
            continue
        out.append(
            f"  no rule explains      {problem.summary} (at {where(problem.location)}): "
            "a recall lead for ddplint"
        )
        divergence = diagnosis.divergence_of(problem)
        if divergence is not None:
            needs = new_rule_needs(divergence, diagnosis.traces)
            out += ["    a new rule would need:", *(f"      {line}" for line in needs)]
    if not count and not diagnosis.mapping.new:
        out.append("  nothing flagged, nothing to explain")
    out.append("")
    out.append(f"Result: {diagnosis.outcome} (exit code {diagnosis.exit_code})")
    return "\n".join(out) + "\n"


def render_json(diagnosis: DumpDiagnosis) -> str:
    dumps = diagnosis.dumps.dumps
    document: dict[str, Any] = {
        "version": JSON_VERSION,
        "folder": diagnosis.folder,
        "outcome": diagnosis.outcome,
        "exit_code": diagnosis.exit_code,
        "problems": diagnosis.dumps.problems,
        "notes": diagnosis.notes,
        "dumps": [
            {
                "rank": rank,
                "path": dump.path,
                "form": dump.form,
                "version": dump.version,
                "entries": len(dump.entries),
                "stacks": dump.has_stacks,
            }
            for rank, dump in dumps.items()
        ],
        "divergences": [divergence_json(d) for d in diagnosis.comparison.divergences],
        "call_site_mismatches": [
            divergence_json(d) for d in diagnosis.comparison.call_site_mismatches
        ],
        "ranks": [
            {"rank": rank, "last_seen": last_seen(trace), "collectives": len(trace.calls)}
            for rank, trace in diagnosis.traces.items()
        ],
        "findings": [
            {
                "status": "confirmed_by_dump",
                "reason": c.reason,
                "evidence": frame_json(c.frame),
                "problem": c.problem.summary,
                **c.finding.to_json(),
            }
            for c in diagnosis.mapping.confirmed
        ]
        + [{"status": "not_tied_to_dump", **f.to_json()} for f in diagnosis.mapping.not_reproduced],
        "unexplained": [
            {
                "kind": p.kind,
                "summary": p.summary,
                "location": frame_json(p.location),
                "new_rule_needs": new_rule_needs(d, diagnosis.traces)
                if (d := diagnosis.divergence_of(p))
                else [],
            }
            for p in diagnosis.mapping.new
        ],
        "missing_files": diagnosis.files.missing,
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
