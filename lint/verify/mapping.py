"""Map what the run showed to the static findings on the same code.

A finding is **confirmed** by a runtime problem when, in the same file, one of the
problem's evidence frames (the call path of a rank at the divergence, a hung rank's
stack, a failure's traceback)

1. lies on the flagged lines (the flagged call is on the call path),
2. lies inside the flagged compound statement (a flagged ``if rank == 0:``, loop or
   decorated function encloses it), or
3. lies after a flagged early exit in the code it skips (a ``continue`` / ``break`` /
   ``return`` / ``raise``, or an ``if`` whose body ends in one, before it in the same
   loop or function).

Findings that confirm nothing are **not reproduced**; problems no finding explains are
**new** (found only at run time). Files are parsed with ``ast``; nothing is imported.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable
from dataclasses import dataclass

from ddplint.finding import Finding
from ddplint.verify.compare import RuntimeProblem
from ddplint.verify.frames import Frame

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

    def skipped_region(self, statement: ast.stmt) -> tuple[int, int] | None:
        """Lines an early exit at ``statement`` skips: the rest of its loop or function."""
        exit_node = statement if isinstance(statement, EXITS) else None
        if exit_node is None and isinstance(statement, ast.If):
            exit_node = next((s for s in statement.body if isinstance(s, EXITS)), None)
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


def _relation(finding: Finding, frame: Frame, index: StatementIndex | None) -> str | None:
    if finding.line <= frame.line <= max(finding.end_line, finding.line):
        return "the flagged line is on the call path"
    statement = index.statement_at(finding.line) if index else None
    if statement is None:
        return None
    body = getattr(statement, "body", None)
    if isinstance(body, list) and _start(statement) <= frame.line <= _end(statement):
        return "the flagged statement encloses the call path"
    region = index.skipped_region(statement) if index else None
    if region and region[0] <= frame.line <= region[1]:
        return "the flagged early exit skips the call path"
    return None


def map_findings(
    findings: Iterable[Finding], problems: Iterable[RuntimeProblem], root: str
) -> Mapping:
    """Confirmed / not reproduced / new. ``root`` resolves the findings' relative paths."""
    problems = list(problems)
    indexes: dict[str, StatementIndex | None] = {}
    confirmed: list[Confirmation] = []
    not_reproduced: list[Finding] = []
    explained: set[int] = set()
    for finding in findings:
        path = os.path.realpath(os.path.join(root, finding.path))
        match = None
        for number, problem in enumerate(problems):
            for frame in problem.evidence:
                if os.path.realpath(frame.file) != path:
                    continue
                if path not in indexes:
                    indexes[path] = StatementIndex.parse(path)
                index = indexes[path]
                reason = _relation(finding, frame, index)
                if reason:
                    match = Confirmation(finding, problem, frame, reason)
                    explained.add(number)
                    break
            if match:
                break
        if match:
            confirmed.append(match)
        else:
            not_reproduced.append(finding)
    new = tuple(p for n, p in enumerate(problems) if n not in explained)
    return Mapping(tuple(confirmed), tuple(not_reproduced), new)
