"""Flight-recorder entries as the trace model ``compare`` walks: one :class:`Collective`
per entry (op, group, tensors, the user frames and framework frames of its recorded
stack), and for a whole set of dumps one :class:`RankTrace` per rank, so that dumps of a
job that hung elsewhere and ``ddplint verify``'s own runs share one model of where ranks
diverged."""

from __future__ import annotations

from ddplint.verify.fr_dumps import DumpEntry, DumpSet, RankDump
from ddplint.verify.frames import Frame, FrameFilter
from ddplint.verify.trace import Collective, RankTrace, ThreadStack

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
#: The id of the one "thread" a dump's rank has: its last recorded stack.
LAST_STACK_THREAD = 0


def group_key(entry: DumpEntry) -> str:
    """The name ``compare`` knows a group by ("default" for the default group)."""
    return "default" if entry.is_default_group else entry.group


def tensor_specs(entry: DumpEntry) -> tuple[tuple[str, str], ...]:
    """``(("input0", "float32[4]"),)``: the entry's inputs as the trace model spells them."""
    return tuple(
        (f"input{index}", f"{DTYPES.get(dtype, dtype)}[{', '.join(map(str, size))}]")
        for index, (size, dtype) in enumerate(
            zip(entry.input_sizes, entry.input_dtypes, strict=False)
        )
    )


def split_frames(
    frames: tuple[Frame, ...], classify: FrameFilter
) -> tuple[tuple[Frame, ...], list[str]]:
    """A recorded stack (innermost first) -> its user frames, and the framework frames
    inside the innermost user frame (``file:line in function``)."""
    user: list[Frame] = []
    framework: list[str] = []
    for frame in frames:
        if classify.is_user(frame.file):
            user.append(frame)
        elif not user and not classify.is_verifier(frame.file):
            framework.append(
                f"{classify.display_name(frame.file)}:{frame.line} in {frame.function}"
            )
    return tuple(user), framework


def entry_collective(
    rank: int,
    seq: int,
    entry: DumpEntry,
    classify: FrameFilter,
    members: tuple[int, ...],
    label: str | None = None,
) -> Collective:
    user, framework = split_frames(entry.frames, classify)
    return Collective(
        rank=rank,
        seq=seq,
        op=entry.op or "?",
        group=group_key(entry),
        group_ranks=members,
        time=entry.time,
        tensors=tensor_specs(entry),
        label=label,
        via=framework[-1] if framework else None,
        issued_by=tuple(framework[:-1]),
        stack=user,
        completed=entry.retired or entry.state == "completed",
    )


def group_members(dumps: dict[int, RankDump]) -> dict[str, tuple[int, ...]]:
    """Members of each group: as a dump names them (NCCL's ``pg_config``), else every
    rank whose dump holds an entry of it (gloo names none); the default group is
    every rank."""
    named: dict[str, tuple[int, ...]] = {}
    seen: dict[str, set[int]] = {}
    for rank, dump in dumps.items():
        for entry in dump.entries:
            key = group_key(entry)
            seen.setdefault(key, set()).add(rank)
            if entry.group in dump.group_ranks and not entry.is_default_group:
                named.setdefault(key, dump.group_ranks[entry.group])
    world = tuple(range(max(dumps) + 1)) if dumps else ()
    members = {key: named.get(key, tuple(sorted(ranks))) for key, ranks in seen.items()}
    members["default"] = world
    return members


def dump_traces(dumps: DumpSet, classify: FrameFilter) -> dict[int, RankTrace]:
    """One trace per rank that left a dump: its collectives (point-to-point left out:
    they do not pair by group order), sequence ids as their ``seq``; its one "thread"
    is the stack of its last recorded collective, where it was last seen."""
    members = group_members(dumps.dumps)
    world = max(dumps.dumps, default=-1) + 1
    traces: dict[int, RankTrace] = {}
    for rank, dump in dumps.dumps.items():
        calls = sorted(
            (
                entry_collective(rank, entry.seq, entry, classify, members[group_key(entry)])
                for entry in dump.entries
                if not entry.p2p
            ),
            key=lambda call: (call.time, call.seq),
        )
        backends = {entry.backend for entry in dump.entries if entry.backend}
        trace = RankTrace(
            rank=rank,
            world_size=world,
            main_thread=LAST_STACK_THREAD,
            backend=", ".join(sorted(backends)) or None,
            calls=calls,
        )
        if calls:
            trace.threads = [ThreadStack(LAST_STACK_THREAD, calls[-1].stack)]
        traces[rank] = trace
    return traces
