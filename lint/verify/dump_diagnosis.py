"""From the flight-recorder dumps of a job that already hung to the line: read one dump
per rank, find where the ranks first disagree (``compare`` by sequence id), find the
recorded files here, lint them (the rank rules, in this process; nothing is imported
or run) and map the findings to the divergence as ``ddplint verify`` does."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace

from ddplint.engine.run import lint_paths
from ddplint.results import RunResult
from ddplint.settings import LintOptions, Settings
from ddplint.verify.compare import (
    Comparison,
    Divergence,
    RuntimeProblem,
    compare,
    runtime_problems,
)
from ddplint.verify.divergence_text import where
from ddplint.verify.dump_traces import dump_traces
from ddplint.verify.fr_dumps import DumpSet, read_dump_dir
from ddplint.verify.frames import Frame, RecordedFrameFilter
from ddplint.verify.mapping import Mapping, map_findings
from ddplint.verify.trace import RankTrace, ThreadStack

_SEPARATORS = re.compile(r"[/\\]+")


class LocalFiles:
    """Finds a file a dump names (a path on the machine that ran the job) here: the
    path itself, else the longest tail of it that exists under ``root``
    (``/workspace/job/train.py`` -> ``ROOT/train.py``)."""

    def __init__(self, root: str) -> None:
        self.root = os.path.realpath(root)
        self.found: dict[str, str | None] = {}
        self.frames: dict[Frame, Frame] = {}

    def resolve(self, recorded: str) -> str | None:
        if recorded not in self.found:
            self.found[recorded] = self._search(recorded)
        return self.found[recorded]

    def _search(self, recorded: str) -> str | None:
        if os.path.isfile(recorded):
            return os.path.realpath(recorded)
        parts = [p for p in _SEPARATORS.split(recorded) if p and not p.endswith(":")]
        for start in range(len(parts)):
            candidate = os.path.join(self.root, *parts[start:])
            if os.path.isfile(candidate):
                return os.path.realpath(candidate)
        return None

    @property
    def missing(self) -> list[str]:
        return sorted(path for path, local in self.found.items() if local is None)

    def local(self, frame: Frame) -> Frame:
        known = self.frames.get(frame)
        if known is None:
            path = self.resolve(frame.file)
            known = self.frames[frame] = frame if path is None else replace(frame, file=path)
        return known

    @property
    def local_files(self) -> list[str]:
        """The recorded files found here (real paths)."""
        return sorted({path for path in self.found.values() if path is not None})


@dataclass
class DumpDiagnosis:
    folder: str
    dumps: DumpSet
    traces: dict[int, RankTrace]
    comparison: Comparison
    problems: list[RuntimeProblem]
    mapping: Mapping
    static: RunResult | None
    files: LocalFiles
    notes: list[str] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        """unreadable (no dump), divergence, or clean."""
        if not self.dumps.dumps:
            return "unreadable"
        if self.comparison.divergences or self.comparison.call_site_mismatches:
            return "divergence"
        return "clean"

    @property
    def exit_code(self) -> int:
        """As the rest of the command line: 0 clean, 1 found, 2 nothing to read."""
        return {"clean": 0, "divergence": 1}.get(self.outcome, 2)

    def divergence_of(self, problem: RuntimeProblem) -> Divergence | None:
        """The divergence a problem reports (``runtime_problems`` keeps their order)."""
        found = (*self.comparison.divergences, *self.comparison.call_site_mismatches)
        index = next((n for n, p in enumerate(self.problems) if p is problem), len(found))
        return found[index] if index < len(found) else None


def _localised(traces: dict[int, RankTrace], files: LocalFiles) -> None:
    """Every user frame points at the file found here (frames stay as recorded where
    none is)."""
    for trace in traces.values():
        for index, call in enumerate(trace.calls):
            stack = tuple(files.local(f) for f in call.stack)
            if stack != call.stack:
                trace.calls[index] = replace(call, stack=stack)
        trace.threads = [
            ThreadStack(t.ident, tuple(files.local(f) for f in t.frames)) for t in trace.threads
        ]


def last_seen(trace: RankTrace) -> str:
    """The last collective a rank's recorder kept, and where it was issued."""
    if not trace.calls:
        return "no collective recorded"
    call = trace.calls[-1]
    state = "completed" if call.completed else "not completed"
    group = "the default group" if call.group == "default" else f"group {call.group}"
    return f"{call.describe()} #{call.seq} on {group} at {where(call.site)} [{state}]"


def _with_last_seen(comparison: Comparison, traces: dict[int, RankTrace]) -> Comparison:
    """A rank that issued nothing at the split is described by its last recorded
    collective (a dump has no exit record or thread dump to say more)."""

    def described(divergence: Divergence) -> Divergence:
        ranks = tuple(
            at
            if at.call is not None or at.rank not in traces
            else replace(at, state=f"last recorded: {last_seen(traces[at.rank])}")
            for at in divergence.ranks
        )
        return replace(divergence, ranks=ranks)

    return Comparison(
        tuple(described(d) for d in comparison.divergences),
        tuple(described(d) for d in comparison.call_site_mismatches),
    )


def _notes(dumps: DumpSet, files: LocalFiles) -> list[str]:
    notes = []
    stackless = [rank for rank, dump in dumps.dumps.items() if not dump.has_stacks]
    if stackless:
        notes.append(
            f"the dumps of rank {', '.join(map(str, stackless))} hold no Python stacks "
            "(torch's JSON dumps never do; its pickle dumps do): no line to show for them"
        )
    if files.missing:
        shown = ", ".join(files.missing[:5]) + (" ..." if len(files.missing) > 5 else "")
        notes.append(
            f"{len(files.missing)} recorded file(s) not found under {files.root} "
            f"(run from the project's checkout, or pass --root): {shown}"
        )
    return notes


def dump_split(
    folder: str, files: LocalFiles | None = None
) -> tuple[DumpSet, dict[int, RankTrace], Comparison]:
    """The dumps in ``folder``, one trace per rank, and where the ranks split (paired by
    sequence id): the model ``ddplint verify`` also asks of its own runs' dumps."""
    dumps = read_dump_dir(folder)
    traces = dump_traces(dumps, RecordedFrameFilter())
    if files is not None:
        _localised(traces, files)
    comparison = compare(traces, all_ranks_local=False, by_seq=True)
    return dumps, traces, _with_last_seen(comparison, traces)


def diagnose(
    folder: str, settings: Settings, options: LintOptions, root: str | None = None
) -> DumpDiagnosis:
    """The report's model for the dumps in ``folder``; ``root``: where the recorded
    files are looked for (default: the current folder)."""
    files = LocalFiles(root or os.getcwd())
    dumps, traces, comparison = dump_split(folder, files)
    problems = runtime_problems(comparison, traces, hung=False)
    scope = files.local_files
    static = lint_paths(scope, settings, options, jobs=1, use_cache=False) if scope else None
    findings = static.findings if static else []
    mapping = map_findings(findings, problems, os.getcwd())
    return DumpDiagnosis(
        os.path.abspath(folder),
        dumps,
        traces,
        comparison,
        problems,
        mapping,
        static,
        files,
        _notes(dumps, files),
    )
