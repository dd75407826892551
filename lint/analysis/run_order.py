"""The calls a piece of code makes in the order they run, entering the functions of the
same module it calls, on CPython's ``ast``: for questions about order ("is the short
timeout set before the work one rank does while the others wait?"). In ``run_order``
source order stands for run order, branches and loops flattened; ``GraphOrder`` traces
along each scope's control-flow graph: dead code is left out, and of two calls one may
run after the other only where the graph reaches it (not from the other arm of an
``if``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from ddplint.analysis.effects import own_calls
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.names import dotted_name

#: How many same-module calls deep a trace follows (each hop is a guess about order).
MAX_DEPTH = 3

_Function = ast.FunctionDef | ast.AsyncFunctionDef
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def entry_points(analysis: ModuleAnalysis) -> list[ast.Module | _Function]:
    """The module itself and each function no code of the module calls (a worker
    handed to ``mp.spawn``, a ``main`` run from elsewhere)."""
    called: set[int] = set()
    for function in (analysis.module, *analysis.nodes.functions()):
        for call in own_calls_in_order(function):
            callee = analysis.callee_of(call)
            if callee is not None and callee is not function:
                called.add(id(callee))
    functions = [f for f in analysis.nodes.functions() if id(f) not in called]
    functions.sort(key=lambda function: (function.lineno, function.col_offset))
    return [analysis.module, *functions]


def run_order(analysis: ModuleAnalysis, root: ast.Module | _Function) -> list[ast.Call]:
    """The calls ``root`` makes, in source order, each call of a same-module function
    followed by that function's own calls."""
    return list(_trace(analysis, root, 0, frozenset()))


def _trace(
    analysis: ModuleAnalysis, root: ast.Module | _Function, depth: int, entered: frozenset[int]
) -> Iterator[ast.Call]:
    for call in own_calls_in_order(root):
        yield call
        callee = analysis.callee_of(call)
        if callee is None or id(callee) in entered or depth >= MAX_DEPTH:
            continue
        yield from _trace(analysis, callee, depth + 1, entered | {id(root), id(callee)})


def own_calls_in_order(root: ast.Module | _Function) -> list[ast.Call]:
    """The calls of ``root``'s own code (not of the functions and classes it defines),
    in source order."""
    found: list[ast.Call] = []
    pending: list[ast.AST] = list(root.body)
    while pending:
        node = pending.pop()
        if isinstance(node, _NESTED):
            continue
        if isinstance(node, ast.Call):
            found.append(node)
        pending.extend(ast.iter_child_nodes(node))
    return sorted(found, key=lambda call: (call.lineno, call.col_offset))


@dataclass(frozen=True)
class TracedCall:
    """One call of an entry point's run: ``sites`` are the same-module calls entered to
    reach it (outermost first, each with the scope that makes it), ``scope`` the scope
    whose own code makes it."""

    call: ast.Call
    scope: ast.Module | _Function
    sites: tuple[tuple[ast.Call, ast.Module | _Function], ...] = ()

    @property
    def chain(self) -> tuple[str, ...]:
        """The names of the functions entered to reach the call (outermost first)."""
        return tuple(dotted_name(call.func) or "?" for call, _ in self.sites)


class GraphOrder:
    """Run-order traces of one module's entry points along their control-flow graphs:
    what a trace holds and which of two calls may run after the other."""

    def __init__(self, analysis: ModuleAnalysis) -> None:
        self._analysis = analysis
        self._statements: dict[int, dict[int, ast.AST]] = {}
        self._reachable: dict[int, set[int]] = {}

    def trace(self, root: ast.Module | _Function) -> list[TracedCall]:
        """The calls ``root`` makes that its graph reaches from its entry (dead code
        after a ``return`` left out), each call of a same-module function followed by
        that function's own calls; in source order within a scope."""
        return list(self._traced(root, (), frozenset()))

    def _traced(
        self,
        root: ast.Module | _Function,
        sites: tuple[tuple[ast.Call, ast.Module | _Function], ...],
        entered: frozenset[int],
    ) -> Iterator[TracedCall]:
        reachable = self._reachable_statements(root)
        for call in own_calls_in_order(root):
            statement = self._statement_of(root, call)
            if statement is not None and id(statement) not in reachable:
                continue
            yield TracedCall(call, root, sites)
            callee = self._analysis.callee_of(call)
            if callee is None or id(callee) in entered or len(sites) >= MAX_DEPTH:
                continue
            inner = (*sites, (call, root))
            yield from self._traced(callee, inner, entered | {id(root), id(callee)})

    def may_run_after(self, first: TracedCall, later: TracedCall) -> bool:
        """Whether ``later`` may run after ``first`` in one run of the entry point both
        were traced from, along the graph of the deepest scope both runs pass through
        (each stands there for itself or the call that entered its function); a call
        that runs inside the other's callee runs neither before nor after it."""
        first_path = [*first.sites, (first.call, first.scope)]
        later_path = [*later.sites, (later.call, later.scope)]
        depth = 0
        while (
            depth < min(len(first_path), len(later_path)) - 1
            and first_path[depth][0] is later_path[depth][0]
        ):
            depth += 1
        (a, scope), (b, _) = first_path[depth], later_path[depth]
        if a is b:
            return False
        a_statement = self._statement_of(scope, a)
        b_statement = self._statement_of(scope, b)
        if a_statement is None or b_statement is None or a_statement is b_statement:
            return (b.lineno, b.col_offset) > (a.lineno, a.col_offset)
        graph = self._analysis.graphs.graph(scope)
        targets = {node.index for node in graph.nodes_of(b_statement)}
        after = [s for node in graph.nodes_of(a_statement) for s, _ in node.successors]
        return any(node.index in targets for node in graph.reached_from(after))

    def _reachable_statements(self, scope: ast.Module | _Function) -> set[int]:
        """``id`` of each statement of ``scope`` its graph reaches from the entry."""
        if id(scope) not in self._reachable:
            graph = self._analysis.graphs.graph(scope)
            self._reachable[id(scope)] = {
                id(node.statement)
                for node in graph.reached_from([graph.entry])
                if node.statement is not None
            }
        return self._reachable[id(scope)]

    def _statement_of(self, scope: ast.Module | _Function, call: ast.Call) -> ast.AST | None:
        """The statement of ``scope``'s graph whose own code makes ``call`` (None for a
        call in a lambda, which has a graph of its own)."""
        if id(scope) not in self._statements:
            graph = self._analysis.graphs.graph(scope)
            self._statements[id(scope)] = {
                id(made): statement
                for statement in graph.statements()
                for made in own_calls(statement)
            }
        return self._statements[id(scope)].get(id(call))
