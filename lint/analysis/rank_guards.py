"""Where a statement runs on some ranks only: a question to the analysis core.

``guard_of(analysis, scope, node, part)``: the innermost reason the statement of graph
node ``node`` (or ``part``, an expression inside it) runs on some ranks only: the
expression that decides it inside the statement (``is_main and f()``, ``f() if rank ==
0 else None``), the nearest test it is control-dependent on (an ``if`` / ``while``
around it, a ``return`` / ``continue`` / ``break`` before it) whose answer may differ
between ranks (the divergence analysis), or the decorator that runs its function on one
rank (``@rank_zero_only``). A test one of whose ways ends the job loudly (``raise``, a
failing ``assert``) decides nothing: the job stops. ``accepted`` says which reasons
count (the rank only, or any value that differs between ranks).

``own_reads(analysis, wanted)``: where each of some expressions is evaluated, its
scope and graph node, found by walking only the scopes that hold one.

``admits_global_zero``: whether a guard lets global rank 0
through and no other rank (rank 0 and every other rank each answer its test alike, and
it reads no rank within a node: ``local_rank == 0`` lets one rank of each node through).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ddplint.analysis.api import GLOBAL_ZERO_DECORATORS, LOCAL_RANK_SPELLINGS
from ddplint.analysis.control_flow import JUMPS, EdgeKind, Node, Scope, ends_loudly, holds_node
from ddplint.analysis.divergence import Divergence, Facet, Source, Taint
from ddplint.analysis.dominance import Dependence, decision_successors
from ddplint.analysis.effects import header_parts
from ddplint.analysis.functions import (
    Facts,
    ModuleAnalysis,
    implied_facts,
    truth_under,
    ways_on,
)
from ddplint.analysis.names import dotted_name
from ddplint.analysis.pairing import arms_agree, class_truth

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_WORD = re.compile(r"\w+")
#: What a statement does not evaluate where it stands (a comprehension it does).
_NOT_INLINE = (*_FUNCTIONS, ast.ClassDef, ast.Lambda, ast.stmt)
#: Scopes with a place in the text (the module has none; comprehensions run inline).
_Placed = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda
#: Reasons that part the ranks by the rank itself (or a value set under a rank test).
BY_RANK = frozenset({Source.RANK, Source.DECIDED})


@dataclass(frozen=True)
class RankGuard:
    """``test`` (an expression, or the decorator) decides whether the guarded code runs,
    on a value that differs between ranks for ``taint``'s reason; ``runs_when`` is the
    answer under which it runs (None for a decorator); ``cause`` is the statement that
    holds the test, or the decorator."""

    cause: ast.AST
    test: ast.AST
    taint: Taint
    runs_when: bool | None
    #: The function a decorator runs on one rank.
    function: str | None = None
    #: The scope and graph node of ``test`` (the decorated function for a decorator).
    where: tuple[Scope, Node] | None = None

    @property
    def line(self) -> int:
        return getattr(self.test, "lineno", self.taint.line)


def guard_of(
    analysis: ModuleAnalysis,
    scope: Scope,
    node: Node,
    part: ast.AST | None = None,
    accepted: Callable[[Taint], bool] | None = None,
    view: Divergence | None = None,
    balanced: Callable[[Node], bool] = lambda test: False,
) -> RankGuard | None:
    """The innermost guard that runs ``node`` (``part`` of it) on some ranks only (none
    where it runs only in a single-process job);
    ``view``: the divergence to ask (a batch view), the function's own by default;
    ``balanced``: tests whose ways all do alike what the question asks about (each
    way creates the same process groups), which decide nothing for it."""
    guard = _innermost_guard(analysis, scope, node, part, accepted, view, balanced)
    statement = node.statement
    if guard is not None and statement is not None and analysis.single_process.holds(statement):
        return None  # it runs only in a single-process job: no peer to part from
    return guard


def _innermost_guard(
    analysis: ModuleAnalysis,
    scope: Scope,
    node: Node,
    part: ast.AST | None,
    accepted: Callable[[Taint], bool] | None,
    view: Divergence | None,
    balanced: Callable[[Node], bool],
) -> RankGuard | None:
    """``guard_of`` before the single-process question (asked only of a guard found)."""
    facts = analysis.function(scope)
    divergence = view if view is not None else facts.divergence
    accepted = accepted or by_rank
    if part is not None and node.statement is not None:
        inside = _expression_guard(node.statement, part)
        if inside is not None:
            taint = divergence.taint(inside[0], node)
            if taint is not None and accepted(taint):
                return RankGuard(node.statement, inside[0], taint, inside[1], where=(scope, node))
    dependences = facts.dominance.all_dependences(node)
    for dependence in dependences:
        test = dependence.test
        if test.statement is None or len(list(ways_on(test))) < 2:
            continue
        if _others_end_loudly(test, dependence.edge):
            continue  # ``if rank != 0: raise``: the other ranks stop the job
        if _jumps_alone(analysis, test.statement, node.statement):
            continue  # ``if rank == 0: if rank == -1 and stop: break``: never in a job
        taint = divergence.test_taint(test)
        if taint is None or not accepted(taint) or balanced(test):
            continue
        decided = getattr(test.statement, "test", test.statement)
        runs_when = dependence.edge is not EdgeKind.FALSE
        shared = _shared_facts(dependences, divergence)
        if isinstance(decided, ast.expr) and truth_under(decided, shared) is runs_when:
            continue  # the shared tests that also decide it settle this one's answer
        return RankGuard(test.statement, decided, taint, runs_when, where=(scope, test))
    return rank_only_decorator(analysis, scope)


_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _jumps_alone(analysis: ModuleAnalysis, test: ast.AST, guarded: ast.AST | None) -> bool:
    """Whether ``test`` decides ``guarded`` (a statement outside it) only through jumps
    that a single-process run alone takes (``if rank == -1 and stop: break``): in a job
    of several processes no rank takes them, so the test parts no ranks there."""
    if guarded is None or any(n is guarded for n in ast.walk(test)):
        return False
    jumps: list[ast.stmt] = []
    pending = [*getattr(test, "body", []), *getattr(test, "orelse", [])]
    while pending:
        statement = pending.pop()
        if isinstance(statement, JUMPS):
            jumps.append(statement)
        elif not isinstance(statement, _NESTED):
            pending.extend(c for c in ast.iter_child_nodes(statement) if isinstance(c, ast.stmt))
    alone = analysis.single_process
    return bool(jumps) and all(alone.holds(jump) for jump in jumps)


def _shared_facts(dependences: list[Dependence], divergence: Divergence) -> Facts:
    """What the tests every rank answers alike tell of the names they read, on the ways
    that lead to the guarded node: under ``if kind == "sharded":`` inside ``if (rank ==
    0 and kind == "full") or kind == "sharded":``, the outer test holds on every rank."""
    found: set[tuple[str, bool]] = set()
    for dependence in dependences:
        statement = dependence.test.statement
        if not isinstance(statement, (ast.If, ast.While)) or dependence.edge not in (
            EdgeKind.TRUE,
            EdgeKind.FALSE,
        ):
            continue
        if divergence.test_taint(dependence.test) is None:
            found.update(implied_facts(statement.test, dependence.edge is EdgeKind.TRUE))
    return frozenset(found)


def paired_tests(analysis: ModuleAnalysis, scope: Scope) -> Callable[[Node], bool]:
    """The tests of ``scope`` whose ways issue the same collectives in the same order
    (``pairing.arms_agree``): as ``balanced`` for ``guard_of``, they decide nothing."""
    function = analysis.function(scope)
    return lambda test: arms_agree(function, test) is True


def by_rank(taint: Taint) -> bool:
    """A reason that parts the ranks by the rank itself (``BY_RANK``)."""
    return taint.source in BY_RANK


def _others_end_loudly(test: Node, edge: EdgeKind) -> bool:
    """Whether every other way of ``test`` starts with a statement that ends the job
    loudly (``raise``, ``sys.exit(1)``)."""
    others = [successor for successor, taken in decision_successors(test) if taken is not edge]
    return bool(others) and all(ends_loudly(successor.statement) for successor in others)


def rank_only_decorator(analysis: ModuleAnalysis, scope: Scope) -> RankGuard | None:
    """The decorator that runs a function on one rank only (``@rank_zero_only``)."""
    found = analysis.names.rank_only_decorator(scope)
    if found is None:
        return None
    decorator, target = found
    taint = Taint(Facet.CONTENTS, Source.RANK, decorator.lineno, ast.unparse(target))
    assert isinstance(scope, _FUNCTIONS)
    return RankGuard(decorator, decorator, taint, None, scope.name)


def instance_parameter(function: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The parameter a method's instance is bound to (``self``); None for a static
    method or a function with no parameter."""
    if any(dotted_name(d) == "staticmethod" for d in function.decorator_list):
        return None
    positional = [*function.args.posonlyargs, *function.args.args]
    return positional[0].arg if positional else None


def admits_global_zero(analysis: ModuleAnalysis, guard: RankGuard) -> bool:
    """Whether ``guard`` lets global rank 0 through and no other rank."""
    if guard.runs_when is None:
        target = guard.test.func if isinstance(guard.test, ast.Call) else guard.test
        resolved = analysis.names.resolve(target) or dotted_name(target) or ""
        return resolved.rsplit(".", 1)[-1] in GLOBAL_ZERO_DECORATORS
    if guard.where is None or _reads_local_rank(guard.test, guard.taint):
        return False
    scope, node = guard.where
    function = analysis.function(scope)
    zero = class_truth(guard.test, True, function, node)
    others = class_truth(guard.test, False, function, node)
    return zero is guard.runs_when and others is (not guard.runs_when)


def _reads_local_rank(test: ast.AST, taint: Taint) -> bool:
    """Whether a rank test reads the rank within a node (``local_rank``, ``LOCAL_RANK``)."""
    spelled = [taint.spelled]
    for part in ast.walk(test):
        if isinstance(part, (ast.Name, ast.Attribute)):
            spelled.append(dotted_name(part) or "")
        elif isinstance(part, ast.Constant) and isinstance(part.value, str):
            spelled.append(part.value)
    return any(word in LOCAL_RANK_SPELLINGS for text in spelled for word in _WORD.findall(text))


def _expression_guard(statement: ast.AST, part: ast.AST) -> tuple[ast.expr, bool] | None:
    """The innermost expression inside ``statement`` that decides whether ``part``
    runs, and the answer under which it does."""
    found: tuple[ast.expr, bool] | None = None
    for parent in _header_nodes(statement):
        if isinstance(parent, ast.IfExp):
            if holds_node(parent.body, part):
                found = (parent.test, True)
            elif holds_node(parent.orelse, part):
                found = (parent.test, False)
        elif isinstance(parent, ast.BoolOp):
            for position, value in enumerate(parent.values[1:], start=1):
                if holds_node(value, part):
                    found = (parent.values[position - 1], isinstance(parent.op, ast.And))
    return found


def _header_nodes(statement: ast.AST) -> Iterator[ast.AST]:
    """The nodes a statement evaluates itself, outermost first."""
    pending = list(header_parts(statement))
    while pending:
        current = pending.pop(0)
        if isinstance(current, _NOT_INLINE) and current is not statement:
            continue
        yield current
        pending.extend(ast.iter_child_nodes(current))


def own_reads(
    analysis: ModuleAnalysis, wanted: list[ast.AST]
) -> Iterator[tuple[ast.AST, Scope, Node]]:
    """Each wanted expression with the scope and graph node that evaluate it (none for
    an expression no statement of its scope evaluates: a default value, a decorator).
    Only the graphs of the scopes that hold one are built."""
    by_scope: dict[int, tuple[Scope, dict[int, ast.AST]]] = {}
    scopes = _scopes_by_position(analysis)
    for expression in wanted:
        holder: Scope = _innermost(scopes, expression) or analysis.module
        by_scope.setdefault(id(holder), (holder, {}))[1][id(expression)] = expression
    for scope, remaining in by_scope.values():
        graph = analysis.graphs.graph(scope)
        for statement in list(graph.statements()):
            node = graph.nodes_of(statement)[0]
            for part in _header_nodes(statement):
                if id(part) in remaining:
                    yield remaining.pop(id(part)), scope, node


def _scopes_by_position(analysis: ModuleAnalysis) -> list[_Placed]:
    """The module's functions, classes and lambdas (comprehensions run in the
    statement that holds them)."""
    nodes = analysis.nodes
    return [*nodes.functions(), *nodes.of_type(ast.ClassDef), *nodes.of_type(ast.Lambda)]


def _innermost(scopes: list[_Placed], expression: ast.AST) -> _Placed | None:
    """The innermost scope whose text holds ``expression``."""
    where = (getattr(expression, "lineno", 0), getattr(expression, "col_offset", 0))
    holding = [
        scope
        for scope in scopes
        if (scope.lineno, scope.col_offset)
        <= where
        <= (scope.end_lineno or scope.lineno, scope.end_col_offset or 0)
    ]
    return max(holding, key=lambda scope: (scope.lineno, scope.col_offset), default=None)
