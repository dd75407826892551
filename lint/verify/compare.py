"""Compare the ranks' traces. Collectives pair by order inside a process group, so for
every group the members' sequences are walked side by side: the first position where a
member has no collective (it finished, failed or waits elsewhere) or where the members
disagree (op, shapes, dtypes, reduce op, root, group members) is a divergence. Equal
collectives issued from different lines are reported as call-site mismatches. The same
walk serves flight-recorder dumps (``dump_traces``), whose collectives carry their
group's sequence ids and pair by id."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ddplint.verify.frames import Frame
from ddplint.verify.trace import Collective, RankTrace

#: Ops whose tensors must have the same shape and dtype on every rank.
SAME_SHAPE_OPS = frozenset(
    {
        "all_reduce",
        "all_reduce_coalesced",
        "broadcast",
        "reduce",
        "all_gather",
        "all_gather_into_tensor",
        "all_gather_single",
        "_all_gather_base",
        "reduce_scatter_tensor",
        "reduce_scatter_single",
        "_reduce_scatter_base",
        "_broadcast_coalesced",
        "_verify_params_across_processes",
    }
)
#: Tensor arguments that exist only on the root (gather_list, scatter_list) or may
#: legitimately differ (all_to_all splits): never compared.
ROOT_ONLY_TENSORS = frozenset({"gather_list", "scatter_list", "output_tensor_list"})
#: Divergence kinds that TORCH_DISTRIBUTED_DEBUG=DETAIL does not check.
DETAIL_BLIND = frozenset({"reduce_op", "root", "call_site"})


@dataclass(frozen=True)
class RankAt:
    """What one rank did at a divergent position: its collective, or its state."""

    rank: int
    call: Collective | None
    state: str


@dataclass(frozen=True)
class Divergence:
    group: str
    group_ranks: tuple[int, ...]
    position: int  # 1-based, counted inside the group (a sequence id for dumps)
    kind: str  # missing, op, tensors, reduce_op, root, members, call_site
    detail: str
    ranks: tuple[RankAt, ...]

    @property
    def time(self) -> float:
        times = [r.call.time for r in self.ranks if r.call is not None]
        return min(times) if times else float("inf")

    @property
    def detail_mode_misses(self) -> bool:
        return self.kind in DETAIL_BLIND


@dataclass(frozen=True)
class Comparison:
    #: Hard divergences, earliest first (the first one is where the ranks split).
    divergences: tuple[Divergence, ...]
    #: Same collective from different lines before the first divergence of its group.
    call_site_mismatches: tuple[Divergence, ...]

    @property
    def first(self) -> Divergence | None:
        return self.divergences[0] if self.divergences else None


def _group_members(traces: dict[int, RankTrace], all_ranks: bool) -> dict[str, tuple[int, ...]]:
    """Members of each group seen; only ranks with a trace unless ``all_ranks``."""
    world = max((t.world_size for t in traces.values()), default=0)
    members: dict[str, tuple[int, ...]] = {"default": tuple(range(world))}
    for trace in traces.values():
        for call in trace.calls:
            if call.group not in members and call.group_ranks:
                members[call.group] = call.group_ranks
    if all_ranks:
        return members
    return {g: tuple(r for r in ranks if r in traces) for g, ranks in members.items()}


def rank_state(trace: RankTrace | None, rank: int) -> str:
    """One phrase for where a rank ended up."""
    if trace is None:
        return "never started"
    if trace.exit is not None:
        if trace.exit.status == "error":
            where = f" at {trace.exit.stack[0].short()}" if trace.exit.stack else ""
            return f"failed{where}: {_first_line(trace.exit.error or '')}"
        return f"finished (exit code {trace.exit.code})"
    if trace.fatal:
        return f"crashed: {trace.fatal}"
    stack = trace.main_stack
    if stack:
        return f"stopped while at {stack[0].short()} in {stack[0].function}"
    return "stopped (no exit record)"


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 200 else line[:197] + "..."


def _call_state(call: Collective) -> str:
    if call.error:
        return f"failed: {_first_line(call.error)}"
    if call.asynchronous:
        return "issued (asynchronous)"
    return "completed" if call.completed else "waiting (never completed)"


def _disagreement(calls: list[Collective]) -> tuple[str, str] | None:
    """The first fact the calls disagree on, as (kind, detail)."""
    checks = [
        ("op", lambda c: c.op),
        ("members", lambda c: c.member_ranks),
        ("tensors", _tensor_key),
        ("reduce_op", lambda c: c.reduce_op),
        ("root", lambda c: c.roots),
        ("objects", lambda c: len(c.objects) and tuple(n for n, _ in c.objects)),
    ]
    for kind, key in checks:
        values = {c.rank: key(c) for c in calls}
        if len(set(map(repr, values.values()))) > 1:
            sides: dict[str, list[int]] = {}
            for rank, value in values.items():
                sides.setdefault(_show(kind, value), []).append(rank)
            shown = ", ".join(
                f"rank{'s' if len(ranks) > 1 else ''} {rank_list(ranks)}: {value}"
                for value, ranks in sides.items()
            )
            return kind, shown
    return None


def _tensor_key(call: Collective) -> tuple[tuple[str, str], ...]:
    if call.op not in SAME_SHAPE_OPS:
        return ()
    return tuple((n, s) for n, s in call.tensors if n not in ROOT_ONLY_TENSORS)


def _show(kind: str, value: object) -> str:
    if kind == "tensors" and isinstance(value, tuple):
        return " ".join(spec for _, spec in value) or "no tensors"
    if kind == "root" and isinstance(value, tuple):
        return ", ".join(f"{n}={v}" for n, v in value) or "none"
    return str(value)


def compare(
    traces: dict[int, RankTrace], all_ranks_local: bool = True, by_seq: bool = False
) -> Comparison:
    """``all_ranks_local``: every rank ran here, so a rank without a trace never started
    (on several machines without a shared trace folder, absent ranks are not compared).
    ``by_seq``: the collectives carry their group's sequence ids (flight-recorder dumps),
    and pair by id rather than by order."""
    divergences: list[Divergence] = []
    mismatches: list[Divergence] = []
    for group, members in _group_members(traces, all_ranks_local).items():
        sequences = {r: traces[r].calls_on(group) if r in traces else [] for r in members}
        aligned = _by_seq(sequences) if by_seq else _by_order(sequences)
        for position, here in aligned:
            present = [c for c in here.values() if c is not None]
            if len(present) < len(here):
                detail = _missing_detail(here)
                divergences.append(
                    _divergence(group, members, position, "missing", detail, here, traces)
                )
                break
            disagreement = _disagreement(present)
            if disagreement:
                kind, detail = disagreement
                divergences.append(
                    _divergence(group, members, position, kind, detail, here, traces)
                )
                break
            sites = {(c.site.file, c.site.line) if c.site else None for c in present}
            if len(sites) > 1:
                detail = "the same collective issued from different lines"
                mismatches.append(
                    _divergence(group, members, position, "call_site", detail, here, traces)
                )
    divergences.sort(key=lambda d: d.time)
    return Comparison(tuple(divergences), tuple(mismatches))


Aligned = Iterator[tuple[int, dict[int, Collective | None]]]


def _by_order(sequences: dict[int, list[Collective]]) -> Aligned:
    """Position n (1-based) holds each rank's n-th collective on the group."""
    longest = max((len(s) for s in sequences.values()), default=0)
    for index in range(longest):
        yield index + 1, {r: s[index] if index < len(s) else None for r, s in sequences.items()}


def _by_seq(sequences: dict[int, list[Collective]]) -> Aligned:
    """Position n holds each rank's collective with sequence id n, from the first id
    every rank still holds (a ring buffer drops the oldest entries first)."""
    by_rank = {r: {c.seq: c for c in s} for r, s in sequences.items()}
    firsts = [min(ids) for ids in by_rank.values() if ids]
    if not firsts:
        return
    last = max(max(ids) for ids in by_rank.values() if ids)
    for seq in range(max(firsts), last + 1):
        yield seq, {r: ids.get(seq) for r, ids in by_rank.items()}


def rank_list(ranks: list[int] | tuple[int, ...]) -> str:
    """``0, 2-63``: runs of three or more consecutive ranks shortened."""
    parts: list[str] = []
    ordered = sorted(ranks)
    start = 0
    while start < len(ordered):
        end = start
        while end + 1 < len(ordered) and ordered[end + 1] == ordered[end] + 1:
            end += 1
        if end - start >= 2:
            parts.append(f"{ordered[start]}-{ordered[end]}")
        else:
            parts.extend(str(r) for r in ordered[start : end + 1])
        start = end + 1
    return ", ".join(parts)


def _missing_detail(here: dict[int, Collective | None]) -> str:
    issued = sorted(r for r, c in here.items() if c is not None)
    absent = sorted(r for r, c in here.items() if c is None)
    ops = sorted({c.op for c in here.values() if c is not None})
    return (
        f"rank{'s' if len(issued) > 1 else ''} {rank_list(issued)} issued "
        f"{'/'.join(ops)}; rank{'s' if len(absent) > 1 else ''} "
        f"{rank_list(absent)} never did"
    )


def _divergence(
    group: str,
    members: tuple[int, ...],
    position: int,
    kind: str,
    detail: str,
    here: dict[int, Collective | None],
    traces: dict[int, RankTrace],
) -> Divergence:
    ranks = []
    for rank, call in here.items():
        trace = traces.get(rank)
        if call is not None:
            ranks.append(RankAt(rank, call, _call_state(call)))
        else:
            ranks.append(RankAt(rank, None, rank_state(trace, rank)))
    return Divergence(group, members, position, kind, detail, tuple(ranks))


def evidence(divergence: Divergence, traces: dict[int, RankTrace]) -> tuple[Frame, ...]:
    """Every user frame that explains the divergence: the divergent calls' stacks, and
    for each rank involved, where its main thread was and where it failed."""
    frames: list[Frame] = []
    for at in divergence.ranks:
        if at.call is not None:
            frames.extend(at.call.stack)
        trace = traces.get(at.rank)
        if trace is not None:
            frames.extend(trace.main_stack)
            if trace.exit is not None:
                frames.extend(trace.exit.stack)
    return tuple(dict.fromkeys(frames))


@dataclass(frozen=True)
class RuntimeProblem:
    """Something the run showed: a divergence, a call-site mismatch, a hang with the
    ranks in step, or a rank that failed on its own. ``evidence`` are the user frames
    that explain it (the call path of each rank involved)."""

    kind: str  # divergence, call_site, hang, error
    summary: str
    location: Frame | None
    evidence: tuple[Frame, ...]
    #: The two sides of a missed or mismatched collective (by what each rank issued).
    apart: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    #: When each rank issued its divergent collective (wall clock).
    issued_at: tuple[tuple[int, float], ...] = ()


def runtime_problems(
    comparison: Comparison, traces: dict[int, RankTrace], hung: bool
) -> list[RuntimeProblem]:
    problems = []
    for divergence in (*comparison.divergences, *comparison.call_site_mismatches):
        sites = [at.call.site for at in divergence.ranks if at.call and at.call.site]
        kind = "call_site" if divergence.kind == "call_site" else "divergence"
        summary = (
            f"{_KIND_TEXT[divergence.kind]} at collective #{divergence.position} "
            f"on the {_group_text(divergence)}: {divergence.detail}"
        )
        apart = _two_sides(divergence)
        problems.append(
            RuntimeProblem(
                kind,
                summary,
                sites[0] if sites else None,
                evidence(divergence, traces),
                apart,
                tuple((at.rank, at.call.time) for at in divergence.ranks if at.call),
            )
        )
    if comparison.divergences:
        return problems
    if hung:
        stacks = [t.main_stack for t in traces.values() if t.main_stack]
        frames = tuple(dict.fromkeys(f for stack in stacks for f in stack))
        where = stacks[0][0] if stacks else None
        problems.append(
            RuntimeProblem(
                "hang", "hang with the ranks in step (no collective divergence)", where, frames
            )
        )
    failures: dict[tuple[Frame | None, str], list[RankTrace]] = {}
    for trace in traces.values():
        if trace.exit is not None and trace.exit.status == "error":
            site = trace.exit.stack[0] if trace.exit.stack else None
            failures.setdefault((site, _first_line(trace.exit.error or "")), []).append(trace)
    for (site, error), failed in failures.items():
        ranks = ", ".join(str(t.rank) for t in failed)
        summary = f"rank{'s' if len(failed) > 1 else ''} {ranks} failed: {error}"
        frames = tuple(dict.fromkeys(f for t in failed if t.exit for f in t.exit.stack))
        problems.append(RuntimeProblem("error", summary, site, frames))
    return problems


def _two_sides(divergence: Divergence) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """The ranks split in two by what they did at a missed or mismatched collective
    (none, or one op against another); None for other splits."""
    if divergence.kind not in ("missing", "op"):
        return None
    sides: dict[str | None, list[int]] = {}
    for at in divergence.ranks:
        sides.setdefault(at.call.op if at.call else None, []).append(at.rank)
    if len(sides) != 2:
        return None
    first, second = sorted(sides.values())
    return tuple(first), tuple(second)


_KIND_TEXT = {
    "missing": "a rank missed a collective",
    "op": "ranks issued different collectives",
    "members": "ranks created different groups",
    "tensors": "tensor shapes or dtypes differ",
    "reduce_op": "reduce ops differ",
    "root": "root ranks differ",
    "objects": "object arguments differ",
    "call_site": "same collective from different lines",
}


def _group_text(divergence: Divergence) -> str:
    if divergence.group == "default":
        return "default group"
    return f"group {divergence.group} (ranks {', '.join(map(str, divergence.group_ranks))})"
