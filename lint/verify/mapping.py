"""Map what the run showed to the static findings on the same code.

Before launch, every rank probes the lines that hold a finding (``probes``), so the
mapping knows, per rank, whether each flagged statement ran. A finding is **confirmed**
by a runtime problem when the flagged code ran and explains it, in one of these ways:

1. one of the problem's evidence frames (the call path of a rank at the divergence, a
   hung rank's stack, a failure's traceback) lies on the flagged lines;
2. such a frame lies inside the flagged compound statement (a flagged ``if rank == 0:``,
   loop or decorated function encloses it);
3. such a frame lies in the code a flagged early exit skips (the rest of its loop or
   function), *and* the exit itself ran on some rank;
4. a flagged line ran, before the divergence, on exactly the ranks on one side of it
   (those that issued a collective the others did not, or a different one) and on none
   of the other: how a rank-0-only ``self.log(sync_dist=True)`` is tied to the all-reduce
   Lightning issues later from its own frames.

Otherwise a finding in a probed file **ran, not the cause** (some flagged line ran) or
was **not reached** (none ran); without probes it is **not reproduced** (nothing is
known). Problems no finding explains are **new**. Files are parsed with ``ast``;
nothing is imported.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable
from dataclasses import dataclass

from ddplint.finding import Finding
from ddplint.verify.compare import RuntimeProblem
from ddplint.verify.frames import Frame
from ddplint.verify.scope import Execution, finding_lines

EXITS = (ast.Continue, ast.Break, ast.Return, ast.Raise)
LOOPS = (ast.For, ast.AsyncFor, ast.While)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class Confirmation:
    finding: Finding
    problem: RuntimeProblem
    frame: Frame
    reason: str


@dataclass(frozen=True)
class Mapping:
    confirmed: tuple[Confirmation, ...]
    not_reproduced: tuple[Finding, ...]
    new: tuple[RuntimeProblem, ...]
    ran_not_cause: tuple[Finding, ...] = ()
    not_reached: tuple[Finding, ...] = ()


def _start(node: ast.AST) -> int:
    decorators = getattr(node, "decorator_list", None) or []
    return min([int(getattr(node, "lineno", 0)), *(d.lineno for d in decorators)])


def _end(node: ast.AST) -> int:
    end = getattr(node, "end_lineno", None)
    return int(end) if end is not None else _start(node)


class StatementIndex:
    """The statements of one file, with their parents, found by line."""

    def __init__(self, tree: ast.Module) -> None:
        self.parent: dict[ast.AST, ast.AST] = {}
        self.statements: list[ast.stmt] = []
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parent[child] = node
            if isinstance(node, ast.stmt):
                self.statements.append(node)

    @classmethod
    def parse(cls, path: str) -> StatementIndex | None:
        try:
            with open(path, "rb") as handle:
                return cls(ast.parse(handle.read(), filename=path))
        except (OSError, SyntaxError, ValueError):
            return None

    def statement_at(self, line: int) -> ast.stmt | None:
        """The innermost statement covering ``line`` (decorators count as the def's)."""
        covering = [s for s in self.statements if _start(s) <= line <= _end(s)]
        if not covering:
            return None
        return min(covering, key=lambda s: (_end(s) - _start(s), -self._depth(s)))

    def _depth(self, node: ast.AST) -> int:
        depth = 0
        while node in self.parent:
            node = self.parent[node]
            depth += 1
        return depth

    def enclosing(self, node: ast.AST, kinds: tuple[type, ...]) -> ast.AST | None:
        current = self.parent.get(node)
        while current is not None and not isinstance(current, kinds):
            current = self.parent.get(current)
        return current

    @staticmethod
    def early_exit(statement: ast.stmt) -> ast.stmt | None:
        """The ``continue``/``break``/``return``/``raise`` a flagged statement is, or ends
        its ``if`` body with."""
        if isinstance(statement, EXITS):
            return statement
        if isinstance(statement, ast.If):
            return next((s for s in statement.body if isinstance(s, EXITS)), None)
        return None

    def skipped_region(self, statement: ast.stmt) -> tuple[int, int] | None:
        """Lines an early exit at ``statement`` skips: the rest of its loop or function."""
        exit_node = self.early_exit(statement)
        if exit_node is None:
            return None
        if isinstance(exit_node, (ast.Continue, ast.Break)):
            target = self.enclosing(exit_node, LOOPS)
            if target is None:
                return None
            if isinstance(exit_node, ast.Break):  # later iterations are skipped too
                return (_start(target), _end(target))
            return (_end(exit_node) + 1, _end(target))
        target = self.enclosing(exit_node, FUNCTIONS)
        end = _end(target) if target is not None else 10**9
        return (_end(exit_node) + 1, end)


def _relation(
    finding: Finding,
    frame: Frame,
    index: StatementIndex | None,
    path: str,
    execution: Execution,
) -> str | None:
    """Rules 1-3: how an evidence frame ties to the finding, or None."""
    if finding.line <= frame.line <= max(finding.end_line, finding.line):
        return "the flagged line is on the call path"
    statement = index.statement_at(finding.line) if index else None
    if statement is None or index is None:
        return None
    body = getattr(statement, "body", None)
    if isinstance(body, list) and _start(statement) <= frame.line <= _end(statement):
        return "the flagged statement encloses the call path"
    region = index.skipped_region(statement)
    if region and region[0] <= frame.line <= region[1]:
        exit_node = index.early_exit(statement)
        exit_lines = range(_start(exit_node), _end(exit_node) + 1) if exit_node else range(0)
        ranks = sorted({r for line in exit_lines for r in execution.ranks_at(path, line)})
        if ranks:
            shown = ", ".join(map(str, ranks))
            return f"the flagged early exit ran on rank {shown} and skips the call path"
    return None


def _rank_split(
    finding: Finding, problem: RuntimeProblem, path: str, execution: Execution
) -> str | None:
    """Rule 4: a flagged line ran on exactly one side of the divergence, before it."""
    if problem.apart is None or not execution.knows(path):
        return None
    sides = [frozenset(side) for side in problem.apart]
    issued_at = dict(problem.issued_at)
    for line in finding_lines(finding):
        ran = execution.ranks_at(path, line)
        if any(t > issued_at.get(rank, t) for rank, t in ran.items()):
            continue  # it ran on some rank only after that rank's divergent collective
        ranks = frozenset(ran)
        if ranks and ranks in sides:
            others = next(side for side in sides if side != ranks)
            return (
                f"line {line} ran on rank {_ranks(ranks)} and never on rank {_ranks(others)}, "
                "before the ranks split"
            )
    return None


def _ranks(ranks: frozenset[int]) -> str:
    return ", ".join(map(str, sorted(ranks)))


def _confirm(
    finding: Finding,
    problem: RuntimeProblem,
    path: str,
    index: StatementIndex | None,
    execution: Execution,
) -> Confirmation | None:
    for frame in problem.evidence:
        if os.path.realpath(frame.file) == path:
            reason = _relation(finding, frame, index, path, execution)
            if reason:
                return Confirmation(finding, problem, frame, reason)
    reason = _rank_split(finding, problem, path, execution)
    if reason:
        return Confirmation(finding, problem, Frame(path, finding.line, "(line probe)"), reason)
    return None


def map_findings(
    findings: Iterable[Finding],
    problems: Iterable[RuntimeProblem],
    root: str,
    execution: Execution | None = None,
) -> Mapping:
    """Confirmed / ran, not the cause / not reached / not reproduced / new. ``root``
    resolves the findings' relative paths."""
    execution = execution or Execution()
    problems = list(problems)
    indexes: dict[str, StatementIndex | None] = {}
    confirmed: list[Confirmation] = []
    ran: list[Finding] = []
    unreached: list[Finding] = []
    unknown: list[Finding] = []
    explained: set[int] = set()
    for finding in findings:
        path = os.path.realpath(os.path.join(root, finding.path))
        if path not in indexes:
            indexes[path] = StatementIndex.parse(path) if path.endswith(".py") else None
        match = None
        for number, problem in enumerate(problems):
            match = _confirm(finding, problem, path, indexes[path], execution)
            if match:
                explained.add(number)
                break
        if match:
            confirmed.append(match)
        elif not execution.knows(path):
            unknown.append(finding)
        elif execution.ran(path, finding_lines(finding)):
            ran.append(finding)
        else:
            unreached.append(finding)
    new = tuple(p for n, p in enumerate(problems) if n not in explained)
    return Mapping(tuple(confirmed), tuple(unknown), new, tuple(ran), tuple(unreached))
