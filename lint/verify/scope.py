"""Which code a verify run covers: the lines to probe before launch (those holding a
static finding near the entry), and after the run, every user file that ran (imported,
on a collective's call path, in a dumped stack or a traceback)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field

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


@dataclass(frozen=True)
class Execution:
    """What the line probes saw: (real file, line) -> {rank: first time it ran}."""

    lines: dict[tuple[str, int], dict[int, float]] = field(default_factory=dict)
    probed_files: frozenset[str] = frozenset()
    #: Every rank probed (a rank that never got to its entry proves nothing).
    complete: bool = False

    def knows(self, path: str) -> bool:
        return self.complete and path in self.probed_files

    def ranks_at(self, path: str, line: int) -> dict[int, float]:
        return self.lines.get((path, line), {})

    def ran(self, path: str, lines: Iterable[int]) -> bool:
        return any(self.ranks_at(path, line) for line in lines)


def load_execution(run_dir: str, traces: dict[int, RankTrace]) -> Execution:
    """What the probes of a finished run saw (the probed files from the run folder)."""
    try:
        with open(os.path.join(run_dir, PROBES_NAME), encoding="utf-8") as handle:
            probed = json.load(handle)
    except (OSError, ValueError):
        probed = {}
    files = frozenset(probed) if isinstance(probed, dict) else frozenset()
    complete = bool(traces) and all(
        t.probe_mechanism not in (None, "none") for t in traces.values()
    )
    return Execution(lines_run(traces), files, complete)


def lines_run(traces: dict[int, RankTrace]) -> dict[tuple[str, int], dict[int, float]]:
    """(real file, line) -> {rank: when it first ran there} over every rank."""
    merged: dict[tuple[str, int], dict[int, float]] = {}
    for rank, trace in traces.items():
        for key, when in trace.lines_run.items():
            merged.setdefault(key, {})[rank] = when
    return merged
