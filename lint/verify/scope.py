"""Which code a verify run covers: the lines to probe before launch (those holding a
static finding near the entry), and after the run, every user file that ran (imported,
on a collective's call path, in a dumped stack or a traceback)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable

from ddplint.finding import Finding
from ddplint.verify.probes import PROBES_NAME
from ddplint.verify.trace import RankTrace


def finding_lines(finding: Finding) -> range:
    """Every line a finding spans."""
    return range(finding.line, max(finding.end_line, finding.line) + 1)


def probe_targets(findings: Iterable[Finding], root: str) -> dict[str, list[int]]:
    """Real path -> sorted lines to probe, for the findings on Python files."""
    targets: dict[str, set[int]] = {}
    for finding in findings:
        path = os.path.realpath(os.path.join(root, finding.path))
        if path.endswith(".py"):
            targets.setdefault(path, set()).update(finding_lines(finding))
    return {path: sorted(lines) for path, lines in sorted(targets.items())}


def write_probes(run_dir: str, targets: dict[str, list[int]]) -> None:
    with open(os.path.join(run_dir, PROBES_NAME), "w", encoding="utf-8") as handle:
        json.dump(targets, handle)


def files_that_ran(traces: dict[int, RankTrace]) -> set[str]:
    """The user files any rank imported or passed through (collectives, stacks, failure)."""
    files: set[str] = set()
    for trace in traces.values():
        files.update(trace.loaded_files)
        for call in trace.calls:
            files.update(f.file for f in call.stack)
        files.update(f.file for f in trace.main_stack)
        if trace.exit is not None:
            files.update(f.file for f in trace.exit.stack)
    return {os.path.realpath(f) for f in files if os.path.isfile(f)}


def lines_run(traces: dict[int, RankTrace]) -> dict[tuple[str, int], dict[int, float]]:
    """(real file, line) -> {rank: when it first ran there} over every rank."""
    merged: dict[tuple[str, int], dict[int, float]] = {}
    for rank, trace in traces.items():
        for key, when in trace.lines_run.items():
            merged.setdefault(key, {})[rank] = when
    return merged
