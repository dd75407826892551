"""The control-flow graph against execution: generated programs, run under a tracer,
only ever go from one line to the next along edges the graph has.

Each program nests ``if`` / ``elif`` / ``else``, ``for`` and ``while`` (with ``else``),
``try`` / ``except`` / ``else`` / ``finally``, ``with`` blocks whose context manager may
swallow the exception, ``break``, ``continue``, ``return``, ``raise``, ``assert`` and
calls that raise, all steered by a stream of inputs, and runs once per input stream.
Between two consecutive line events the graph must hold a path whose inner nodes raise
no line event of their own (the synthetic entry, exits and dispatch nodes; a ``with``
block's ``__exit__`` reports its line or not).
"""

from __future__ import annotations

import ast
import random
import sys
from collections.abc import Iterator
from types import FrameType
from typing import Any

import pytest

from ddplint.analysis.control_flow import Graph, Node, NodeKind, build_graph

PROGRAMS = 160
RUNS_PER_PROGRAM = 12
_EVENTS = (NodeKind.STATEMENT, NodeKind.TEST, NodeKind.STEP, NodeKind.WITH_EXIT)


class _Inputs:
    """The stream that steers a run: conditions, trip counts, raising calls. Every loop
    test spends fuel, so each run ends."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)
        self.fuel = 40

    def cond(self) -> bool:
        self.fuel -= 1
        return self.fuel > 0 and self.random.random() < 0.5

    def count(self) -> int:
        self.fuel -= 1
        return 0 if self.fuel <= 0 else self.random.randrange(3)

    def work(self) -> int:
        roll = self.random.random()
        if roll < 0.08:
            raise ValueError
        if roll < 0.12:
            raise KeyError
        return 1


class _Manager:
    def __init__(self, swallow: bool) -> None:
        self.swallow = swallow

    def __enter__(self) -> _Manager:
        return self

    def __exit__(self, *exc: object) -> bool:
        return self.swallow


class _Program:
    """A random function body, one statement per line."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)
        self.lines: list[str] = ["def program(inp):"]

    def build(self) -> str:
        self._block(1, loops=0, budget=14)
        return "\n".join(self.lines) + "\n"

    def _emit(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def _block(self, indent: int, loops: int, budget: int) -> None:
        for _ in range(self.random.randint(1, 3)):
            self._statement(indent, loops, budget)
            budget -= 1

    def _statement(self, indent: int, loops: int, budget: int) -> None:
        choices = ["assign", "work", "pass"]
        if budget > 0 and indent < 6:
            choices += ["if", "if", "for", "while", "try", "try", "with"]
        if loops:
            choices += ["break", "continue"]
        choices += ["return", "raise", "assert"]
        kind = self.random.choice(choices)
        inner = budget - 3
        if kind == "assign":
            self._emit(indent, "x = 1")
        elif kind == "work":
            self._emit(indent, "x = inp.work()")
        elif kind == "pass":
            self._emit(indent, "pass")
        elif kind in ("break", "continue", "return", "raise", "assert"):
            self._jump(indent, kind)
        elif kind == "if":
            self._emit(indent, "if inp.cond():")
            self._block(indent + 1, loops, inner)
            if self.random.random() < 0.4:
                self._emit(indent, "elif inp.cond():")
                self._block(indent + 1, loops, inner)
            if self.random.random() < 0.5:
                self._emit(indent, "else:")
                self._block(indent + 1, loops, inner)
        elif kind in ("for", "while"):
            header = "for i in range(inp.count()):" if kind == "for" else "while inp.cond():"
            self._emit(indent, header)
            self._block(indent + 1, loops + 1, inner)
            if self.random.random() < 0.3:
                self._emit(indent, "else:")
                self._block(indent + 1, loops, inner)
        elif kind == "with":
            self._emit(indent, "with Manager(inp.cond()):")
            self._block(indent + 1, loops, inner)
        else:
            self._try(indent, loops, inner)

    def _jump(self, indent: int, kind: str) -> None:
        # Under a test, so the code after it stays reachable.
        self._emit(indent, "if inp.cond():")
        spelled = {"raise": "raise ValueError", "assert": "assert inp.cond()"}
        self._emit(indent + 1, spelled.get(kind, kind))

    def _try(self, indent: int, loops: int, budget: int) -> None:
        self._emit(indent, "try:")
        self._block(indent + 1, loops, budget)
        handlers = self.random.choice([0, 1, 1, 2])
        for spelled in ["except ValueError:", "except KeyError as error:"][:handlers]:
            self._emit(indent, spelled)
            self._block(indent + 1, loops, budget)
        if handlers and self.random.random() < 0.2:
            self._emit(indent, "except:")
            self._block(indent + 1, loops, budget)
        if handlers and self.random.random() < 0.3:
            self._emit(indent, "else:")
            self._block(indent + 1, loops, budget)
        if not handlers or self.random.random() < 0.4:
            self._emit(indent, "finally:")
            self._block(indent + 1, loops, budget)


def _trace(function: Any, inputs: _Inputs) -> tuple[list[int], bool]:
    """The lines ``function`` ran, in order, and whether it raised."""
    lines: list[int] = []
    code = function.__code__

    def tracer(frame: FrameType, event: str, arg: object) -> Any:
        if frame.f_code is not code:
            return None
        if event == "line":
            lines.append(frame.f_lineno)
        return tracer

    sys.settrace(tracer)
    try:
        function(inputs)
        raised = False
    except (ValueError, KeyError, AssertionError):
        raised = True
    finally:
        sys.settrace(None)
    return lines, raised


def _silent(node: Node) -> bool:
    return node.kind not in _EVENTS or node.kind is NodeKind.WITH_EXIT


def _reachable(sources: list[Node], target: Node) -> bool:
    """Whether a path leads from ``sources`` to ``target`` through nodes that raise no
    line event."""
    seen: set[int] = set()
    pending = [successor for node in sources for successor, _ in node.successors]
    while pending:
        node = pending.pop()
        if node.index in seen:
            continue
        seen.add(node.index)
        if node is target:
            return True
        if _silent(node):
            pending.extend(successor for successor, _ in node.successors)
    return False


def _check_run(
    graph: Graph, lines: list[int], raised: bool, source: str, endings: dict[int, range]
) -> None:
    """Follow the run through the graph: the set of nodes it may stand at after each
    line event (a ``finally`` body's last line may be the end of its run, see
    ``_block_endings``, so both readings are kept)."""
    at: list[Node] = [graph.entry]
    for line in lines:
        following = [node for node in graph.nodes if node.kind in _EVENTS and node.line == line]
        reached = [node for node in following if _reachable(at, node)]
        if line in endings:
            reached += [node for node in at if node.line in endings[line]]
        assert reached, f"no edge from line {at[0].line} to line {line}\n{source}"
        at = reached
    end = graph.raise_exit if raised else graph.exit
    assert _reachable(at, end), f"line {at[0].line} to {end}\n{source}"


def _try_lines(tree: ast.AST) -> set[int]:
    """``try:`` raises a line event for a statement that does nothing: not a node."""
    return {node.lineno for node in ast.walk(tree) if isinstance(node, (ast.Try, ast.TryStar))}


def _block_endings(tree: ast.AST) -> dict[int, range]:
    """CPython 3.11 reports the end of a ``finally`` body's run (the re-raise, or the
    return or jump it goes on with) and a ``with`` block's re-raise after ``__exit__``
    as one more line event, at the block's last line or at the statement after it: each
    such line -> the lines of the block the run comes from. The event may be taken as
    that ending, not as a step."""
    first: dict[int, int] = {}
    for node in ast.walk(tree):
        for statement, following in _with_next(node):
            block: list[ast.stmt] = []
            if isinstance(statement, (ast.Try, ast.TryStar)) and statement.finalbody:
                block, start = statement.finalbody, statement.finalbody[0].lineno
            elif isinstance(statement, (ast.With, ast.AsyncWith)):
                block, start = statement.body, statement.lineno
            if not block:
                continue
            last = block[-1].end_lineno or block[-1].lineno
            for line in (last, following.lineno if following else None):
                if line is not None:
                    first[line] = min(first.get(line, start), start)
    return {line: range(start, line + 1) for line, start in first.items()}


def _with_next(node: ast.AST) -> Iterator[tuple[ast.stmt, ast.stmt | None]]:
    """Each statement of the node's bodies with the statement that follows it."""
    for name in ("body", "orelse", "finalbody"):
        body = getattr(node, name, None)
        if isinstance(body, list):
            for position, statement in enumerate(body):
                yield statement, body[position + 1] if position + 1 < len(body) else None


def _programs() -> Iterator[int]:
    return iter(range(PROGRAMS))


@pytest.mark.parametrize("seed", list(_programs()))
def test_runs_take_only_edges_of_the_graph(seed: int) -> None:
    source = _Program(seed).build()
    tree = ast.parse(source)
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    graph = build_graph(function)
    namespace: dict[str, Any] = {"Manager": _Manager}
    exec(compile(source, f"<program {seed}>", "exec"), namespace)
    skipped = _try_lines(tree)
    endings = _block_endings(tree)
    for run in range(RUNS_PER_PROGRAM):
        lines, raised = _trace(namespace["program"], _Inputs(seed * 1000 + run))
        _check_run(graph, [line for line in lines if line not in skipped], raised, source, endings)
