"""The trace model: what each rank recorded (its collectives in order, how it ended, its
parameter checksums) and where its threads were when their stacks were dumped."""

from __future__ import annotations

import glob
import json
import os
import re
from dataclasses import dataclass, field, replace
from typing import Any

from ddplint.verify.frames import Frame, FrameFilter
from ddplint.verify.layout import stacks_file

_THREAD_HEADER = re.compile(
    r"^(?:Current thread|Thread) (0x[0-9a-fA-F]+) .*\(most recent call first\):"
)
_FRAME_LINE = re.compile(r'^  File "(.*)", line (\d+) in (.*)$')
_TRACE_NAME = re.compile(r"rank-(\d+)\.jsonl$")


@dataclass(frozen=True)
class Collective:
    """One collective one rank issued: the facts ranks must agree on, and where."""

    rank: int
    seq: int
    op: str
    group: str
    group_ranks: tuple[int, ...]
    time: float
    reduce_op: str | None = None
    roots: tuple[tuple[str, int], ...] = ()
    member_ranks: tuple[int, ...] | None = None
    tensors: tuple[tuple[str, str], ...] = ()
    objects: tuple[tuple[str, int], ...] = ()
    asynchronous: bool = False
    label: str | None = None
    via: str | None = None
    #: Framework frames that issued it, innermost first (``_ResultCollection.compute``).
    issued_by: tuple[str, ...] = ()
    stack: tuple[Frame, ...] = ()
    completed: bool = False
    error: str | None = None
    #: When the Python call returned (None: it never did).
    returned: float | None = None

    @property
    def site(self) -> Frame | None:
        return self.stack[0] if self.stack else None

    def describe(self) -> str:
        """``all_reduce(MAX) float32[4]``, ``broadcast(src=0) ...``, ``barrier``."""
        params = [self.reduce_op] if self.reduce_op else []
        params += [f"{name}={value}" for name, value in self.roots]
        if self.member_ranks is not None:
            params.append(f"ranks={list(self.member_ranks)}")
        text = self.op + (f"({', '.join(params)})" if params else "")
        shapes = " ".join(spec for _, spec in self.tensors[:2])
        return f"{text} {shapes}".strip()

    @classmethod
    def from_record(cls, rank: int, data: dict[str, Any]) -> Collective:
        group = data.get("group") or {}
        roots = tuple(
            (k, int(data[k])) for k in ("src", "dst", "group_src", "group_dst") if k in data
        )
        members = data.get("member_ranks")
        return cls(
            rank=rank,
            seq=int(data["seq"]),
            op=str(data["op"]),
            group=str(group.get("name", "default")),
            group_ranks=tuple(int(r) for r in group.get("ranks", ())),
            time=float(data.get("t", 0.0)),
            reduce_op=data.get("reduce_op"),
            roots=roots,
            member_ranks=tuple(members) if members is not None else None,
            tensors=tuple(_tensor_specs(data.get("tensors") or {})),
            objects=tuple((k, int(v)) for k, v in (data.get("objects") or {}).items()),
            asynchronous=bool(data.get("async", False)),
            label=data.get("label"),
            via=data.get("via"),
            issued_by=tuple(str(f) for f in data.get("issued_by") or ()),
            stack=tuple(Frame.from_json(f) for f in data.get("stack", ())),
        )


def _tensor_specs(tensors: dict[str, Any]) -> list[tuple[str, str]]:
    """``{"tensor": {"shape": [4], "dtype": "float32"}}`` -> ``[("tensor", "float32[4]")]``."""

    def one(spec: dict[str, Any]) -> str:
        return f"{spec['dtype']}[{', '.join(str(d) for d in spec['shape'])}]"

    out = []
    for name, spec in tensors.items():
        if isinstance(spec, list):
            inner = ", ".join(one(s) for s in spec[:3]) + (", ..." if len(spec) > 3 else "")
            out.append((name, f"{len(spec)} x [{inner}]"))
        else:
            out.append((name, one(spec)))
    return out


@dataclass(frozen=True)
class RankExit:
    """How the user's entry ended in one rank."""

    status: str  # "ok", "exit" (SystemExit) or "error"
    code: int
    error: str | None = None
    stack: tuple[Frame, ...] = ()


@dataclass(frozen=True)
class ThreadStack:
    ident: int
    frames: tuple[Frame, ...]  # innermost first


@dataclass
class RankTrace:
    """Everything one rank left behind."""

    rank: int
    world_size: int = 0
    pid: int | None = None
    host: str = ""
    main_thread: int | None = None
    backend: str | None = None
    requested_backend: str | None = None  # what the code passed to init_process_group
    started_at: float | None = None  # wall clock: the bootstrap began
    ready_at: float | None = None  # torch imported and instrumented
    calls: list[Collective] = field(default_factory=list)
    exit: RankExit | None = None
    checksums: list[dict[str, Any]] = field(default_factory=list)
    threads: list[ThreadStack] = field(default_factory=list)
    fatal: str | None = None
    unreadable_lines: int = 0
    #: (real file, line) -> when this rank first executed that probed line (wall clock).
    lines_run: dict[tuple[str, int], float] = field(default_factory=dict)
    #: User files the rank imported (real paths), and how its lines were probed.
    loaded_files: set[str] = field(default_factory=set)
    probe_mechanism: str | None = None

    @property
    def main_stack(self) -> tuple[Frame, ...]:
        for thread in self.threads:
            if thread.ident == self.main_thread:
                return thread.frames
        return ()

    def calls_on(self, group: str) -> list[Collective]:
        return [c for c in self.calls if c.group == group]


def load_rank(path: str, rank: int) -> RankTrace:
    trace = RankTrace(rank=rank)
    calls: dict[int, Collective] = {}
    done: dict[int, str | None] = {}
    returned: dict[int, float] = {}
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                data = json.loads(line)
            except json.JSONDecodeError:  # a line cut short by a kill
                trace.unreadable_lines += 1
                continue
            kind = data.get("kind")
            if kind == "start":
                trace.world_size = int(data.get("world_size", 0))
                trace.pid = data.get("pid")
                trace.host = str(data.get("host", ""))
                trace.main_thread = data.get("main_thread")
                trace.started_at = data.get("t")
            elif kind == "ready":
                trace.backend = data.get("backend")
                trace.ready_at = data.get("t")
            elif kind == "init":
                trace.backend = data.get("backend", trace.backend)
                trace.requested_backend = data.get("requested_backend")
            elif kind == "call":
                call = Collective.from_record(rank, data)
                calls[call.seq] = call
            elif kind == "done":
                done[int(data["seq"])] = data.get("error")
                returned[int(data["seq"])] = float(data.get("t", 0.0))
            elif kind == "returned":
                returned[int(data["seq"])] = float(data.get("t", 0.0))
            elif kind == "line":
                key = (str(data.get("file")), int(data.get("line", 0)))
                trace.lines_run.setdefault(key, float(data.get("t", 0.0)))
            elif kind == "files":
                trace.loaded_files.update(str(f) for f in data.get("files", ()))
            elif kind == "probes":
                trace.probe_mechanism = str(data.get("mechanism"))
            elif kind == "checksum":
                trace.checksums = list(data.get("models", []))
            elif kind == "exit":
                trace.exit = RankExit(
                    status=str(data.get("status")),
                    code=int(data.get("code", 0)),
                    error=data.get("error"),
                    stack=tuple(Frame.from_json(f) for f in data.get("stack", ())),
                )
    for seq in sorted(calls):
        call = replace(calls[seq], returned=returned.get(seq))
        if seq in done:
            call = replace(call, completed=True, error=done[seq])
        trace.calls.append(call)
    return trace


def parse_stack_dump(
    text: str, frames: FrameFilter | None = None
) -> tuple[list[ThreadStack], str | None]:
    """faulthandler's text -> the last dump of each thread (user frames only when a
    filter is given), and the fatal error line if the dump came from a crash."""
    threads: dict[int, list[Frame]] = {}
    current: list[Frame] | None = None
    fatal = None
    for line in text.splitlines():
        if line.startswith("Fatal Python error:"):
            fatal = line.removeprefix("Fatal Python error:").strip()
            continue
        header = _THREAD_HEADER.match(line)
        if header:
            current = threads[int(header.group(1), 16)] = []
            continue
        frame = _FRAME_LINE.match(line)
        if frame and current is not None:
            file, number, function = frame.group(1), int(frame.group(2)), frame.group(3)
            if frames is None or frames.is_user(file):
                current.append(Frame(file, number, function))
    stacks = [ThreadStack(ident, tuple(f)) for ident, f in threads.items()]
    return stacks, fatal


def load_run(run_dir: str, frames: FrameFilter | None = None) -> dict[int, RankTrace]:
    """Every rank's trace in ``run_dir``, with its dumped stacks, by global rank."""
    frames = frames or FrameFilter()
    traces: dict[int, RankTrace] = {}
    for path in glob.glob(os.path.join(run_dir, "rank-*.jsonl")):
        match = _TRACE_NAME.search(path)
        if not match:
            continue
        rank = int(match.group(1))
        trace = load_rank(path, rank)
        dump = stacks_file(run_dir, rank)
        if os.path.exists(dump):
            with open(dump, encoding="utf-8", errors="replace") as handle:
                trace.threads, trace.fatal = parse_stack_dump(handle.read(), frames)
        traces[rank] = trace
    return dict(sorted(traces.items()))
