"""The questions rank rules ask, answered from the floors below.

``where_ranks_part(module)``: in each function, the places where ranks stop issuing the
same sequence of collectives. A test (or loop step) whose decision may differ between
ranks parts them when its branches issue different collective sequences before they
meet again; the report sits at the root cause: the ``return`` / ``break`` / ``continue``
/ ``raise`` that leaves, or the test itself, naming the first collective one side runs
and the other does not.

Two kinds of code are correct by construction and not reported:

- *pairing*: both branches issue the same sequence (send and receive arms, one
  ``all_gather`` per path);
- *rank classes*: where every divergent test of a function is a rank predicate, the
  whole function is walked once as rank 0 and once as another rank; when both walks
  issue the same sequences, complementary tests (main-process-first: ``if not main:
  barrier()`` ... ``if main: barrier()``) pair up.

A call of a function of the same module that reaches a collective counts as one.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

from ddplint.analysis.api import RANK_ONLY_DECORATORS
from ddplint.analysis.control_flow import (
    SCOPE_TYPES,
    EdgeKind,
    Graph,
    Node,
    NodeKind,
    Scope,
    ScopeGraphs,
)
from ddplint.analysis.divergence import (
    Divergence,
    Facet,
    Source,
    Taint,
    distributed_function,
    spawned_functions,
)
from ddplint.analysis.dominance import PostDominance, decision_successors
from ddplint.analysis.effects import (
    Collective,
    FrameworkObjects,
    node_collectives,
    own_calls,
    reads_unsharded_model,
    sharded_later,
)
from ddplint.analysis.module_nodes import ModuleNodes
from ddplint.analysis.names import Names, dotted_name

#: Paths walked per question before the answer is "cannot tell" (then nothing is said).
MAX_PATHS = 256
#: Steps a walk may take per question before the answer is "cannot tell".
MAX_STEPS = 20_000
#: Exits a parting is reported at (a ``raise`` is an error path, never a parting).
_JUMPS = (ast.Return, ast.Break, ast.Continue)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)

Sequence_ = tuple[str, ...]
#: What is known on a way through the code: (dotted name, its truth).
Facts = frozenset[tuple[str, bool]]
#: How deep call-site facts follow local calls.
CALL_DEPTH = 4


@dataclass(frozen=True)
class Parting:
    """Ranks stop issuing the same collectives at ``cause`` (an exit or a test),
    decided by ``test`` on a value that differs between ranks for ``taint``'s reason;
    ``missed`` is the first collective one side issues and the other does not."""

    function: Scope
    cause: ast.AST
    test: ast.AST
    taint: Taint
    missed: Collective
    through: str | None = None  # the local function that issues it, if not issued here
    loop: bool = False  # the trip count itself differs

    @property
    def test_line(self) -> int:
        return getattr(self.test, "lineno", 0)


@dataclass
class _Function:
    graph: Graph
    dominance: PostDominance
    divergence: Divergence
    in_lightning_class: bool
    effects: dict[int, list[tuple[Collective, str | None]]] = field(default_factory=dict)
    _ways: dict[int, list[tuple[Node, EdgeKind]]] = field(default_factory=dict)
    _kept: set[int] | None = None

    def ways(self, node: Node) -> list[tuple[Node, EdgeKind]]:
        """``_ways_on(node)``, each way run on past the nodes where nothing happens (no
        collective, one way on, no join): the walks below step from event to event."""
        found = self._ways.get(node.index)
        if found is None:
            join = self._quiet_join(node)
            if join is not None:
                found = [(self._next_kept(join), EdgeKind.NEXT)]
            else:
                found = [(self._next_kept(s), edge) for s, edge in _ways_on(node)]
            self._ways[node.index] = found
        return found

    def _quiet_join(self, node: Node) -> Node | None:
        """Where a decision's branches meet again when no branch issues a collective on
        the way: a walk goes straight there."""
        if node.kind not in (NodeKind.TEST, NodeKind.STEP):
            return None
        join = self.dominance.immediate(node)
        if join is None or join.index == node.index:
            return None
        if any(inner.index in self.effects for inner in self.dominance.region(node)):
            return None
        return join

    def ways_from(self, node: Node) -> Node:
        """The first node a walk from ``node`` must stop at (``node`` itself if kept)."""
        return self._next_kept(node)

    def _next_kept(self, node: Node) -> Node:
        if self._kept is None:
            self._kept = self._kept_nodes()
        seen: set[int] = set()
        while node.index not in self._kept and node.index not in seen:
            seen.add(node.index)
            (node, _), *_ = list(_ways_on(node))
        return node

    def _kept_nodes(self) -> set[int]:
        """Nodes a walk must stop at: collectives, decisions, ends, joins, error exits."""
        kept = set(self.effects)
        for node in self.graph.nodes:
            ways = list(_ways_on(node))
            if (
                len(ways) != 1
                or node.kind in (NodeKind.TEST, NodeKind.STEP, NodeKind.EXIT, NodeKind.RAISE)
                or sum(1 for _, e in node.predecessors if e is not EdgeKind.EXCEPTION) > 1
            ):
                kept.add(node.index)
            if len(list(decision_successors(node))) > 1:
                join = self.dominance.immediate(node)
                if join is not None:
                    kept.add(join.index)
        return kept


class ModuleAnalysis:
    """The analysis of one module: graphs, dominance, divergence and effects per
    function, built on first use."""

    def __init__(self, module: ast.Module) -> None:
        self.module = module
        self.nodes = ModuleNodes(module)
        self.names = Names(module)
        self.objects = FrameworkObjects(self.nodes, self.names)
        self.graphs = ScopeGraphs(module)
        calls = [call for found in self.nodes.calls_by_scope.values() for call in found]
        self._spawned = spawned_functions(calls, self.names)
        self._functions: dict[Scope, _Function] = {}
        self._definitions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        for function in sorted(self.nodes.functions(), key=lambda f: (f.lineno, f.col_offset)):
            self._definitions.setdefault(self._key_of(function), function)
        self._reached_memo: dict[tuple[str, Facts], Collective | None] = {}
        self._sharded = sharded_later(calls, self.names)
        self._reaching = self._functions_reaching_collectives()

    def _key_of(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
        """How calls name a local function: ``f`` for a function, ``self.f`` for a method
        (a builtin ``open()`` is never a class's ``open`` method)."""
        if isinstance(self.nodes.scope_of.get(function), ast.ClassDef):
            return f"self.{function.name}"
        return function.name

    def _in_lightning_class(self, scope: ast.AST) -> bool:
        return self.nodes.scope_of.get(scope) in self.objects.lightning_classes

    def function(self, scope: Scope) -> _Function:
        found = self._functions.get(scope)
        if found is None:
            graph = self.graphs.graph(scope)
            dominance = PostDominance(graph)
            rank_parameters: frozenset[str] = frozenset()
            if isinstance(scope, _FUNCTIONS) and scope.name in self._spawned and scope.args.args:
                rank_parameters = frozenset({scope.args.args[0].arg})
            divergence = Divergence(
                graph,
                dominance,
                self.names,
                rank_parameters,
                self.objects.agreeing_receivers(),
            )
            in_lightning = self._in_lightning_class(scope)
            found = _Function(graph, dominance, divergence, in_lightning)
            for node in graph.nodes:
                effects = [
                    (collective, through)
                    for collective, through in self._node_effects(node, in_lightning, dominance)
                    if not reads_unsharded_model(collective, self._sharded)
                ]
                if effects:
                    found.effects[node.index] = effects
            self._functions[scope] = found
        return found

    def _node_effects(
        self, node: Node, in_lightning: bool, dominance: PostDominance | None
    ) -> list[tuple[Collective, str | None]]:
        """The collectives a node issues, and those of the local functions it calls
        that reach one on the way this call takes (its constant arguments and the
        tests on ``self`` around it settle the callee's own tests)."""
        effects: list[tuple[Collective, str | None]] = [
            (c, None) for c in node_collectives(node, self.objects, in_lightning)
        ]
        if node.statement is None or node.kind not in (NodeKind.STATEMENT, NodeKind.TEST):
            return effects
        facts = _path_facts(node, dominance) if dominance is not None else frozenset()
        for call in own_calls(node.statement):
            callee = _local_callee(call)
            if callee is None or callee not in self._reaching:
                continue
            reached = self._reached(callee, _call_facts(call, self._definition(callee), facts))
            if reached is not None:
                effects.append((reached, callee))
        return effects

    def _definition(self, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        return self._definitions.get(name)

    def _reached(self, name: str, facts: Facts, depth: int = CALL_DEPTH) -> Collective | None:
        """The first collective the local function ``name`` reaches when ``facts`` hold
        (None: not on the ways those facts leave open)."""
        key = (name, facts)
        if key in self._reached_memo:
            return self._reached_memo[key]
        self._reached_memo[key] = None  # recursion: assume none while asking
        definition = self._definition(name)
        found: Collective | None = None
        if definition is None or depth == 0:
            found = self._reaching.get(name)
        else:
            found = self._reached_in(definition, facts, depth)
        self._reached_memo[key] = found
        return found

    def _reached_in(
        self, definition: ast.FunctionDef | ast.AsyncFunctionDef, facts: Facts, depth: int
    ) -> Collective | None:
        graph = self.graphs.graph(definition)
        in_lightning = self._in_lightning_class(definition)
        inherited = frozenset(fact for fact in facts if fact[0].startswith("self."))
        seen: set[int] = set()
        pending = [graph.entry]
        while pending:
            node = pending.pop()
            if node.index in seen:
                continue
            seen.add(node.index)
            own = [
                c
                for c in node_collectives(node, self.objects, in_lightning)
                if not reads_unsharded_model(c, self._sharded)
            ]
            if own:
                return own[0]
            if node.statement is not None and node.kind in (NodeKind.STATEMENT, NodeKind.TEST):
                for call in own_calls(node.statement):
                    callee = _local_callee(call)
                    if callee is None or callee not in self._reaching:
                        continue
                    handed = _call_facts(call, self._definition(callee), inherited)
                    reached = self._reached(callee, handed, depth - 1)
                    if reached is not None:
                        return reached
            settled = _settled_edge(node, facts)
            for successor, edge in decision_successors(node):
                if settled is None or edge is settled:
                    pending.append(successor)
        return None

    def _functions_reaching_collectives(self) -> dict[str, Collective]:
        """Local function name -> the first collective it reaches (through local calls,
        to a fixed point)."""
        direct: dict[str, Collective] = {}
        calls: dict[str, set[str]] = {}
        for function in self.nodes.functions():
            in_lightning = self._in_lightning_class(function)
            for call in self.nodes.calls_by_scope.get(function, []):
                found = self.objects.collective(call, in_lightning)
                key = self._key_of(function)
                if found is not None and key not in direct:
                    direct[key] = found
                callee = _local_callee(call)
                if callee is not None:
                    calls.setdefault(key, set()).add(callee)
        reaching = dict(direct)
        changed = True
        while changed:
            changed = False
            for name, callees in calls.items():
                if name in reaching:
                    continue
                for callee in sorted(callees):
                    if callee in reaching:
                        reaching[name] = reaching[callee]
                        changed = True
                        break
        return reaching

    def reaching_names(self) -> frozenset[str]:
        """Names of the module's functions that reach a collective."""
        return frozenset(self._reaching)

    def scopes_with_collectives(self) -> Iterator[Scope]:
        """The functions (and module code) whose own calls issue a collective or call a
        local function that reaches one: the only ones worth a graph."""
        for scope, calls in self.nodes.calls_by_scope.items():
            if not isinstance(scope, (*_FUNCTIONS, ast.Module)):
                continue
            in_lightning = self._in_lightning_class(scope)
            if any(
                self.objects.collective(call, in_lightning) is not None
                or _local_callee(call) in self._reaching
                for call in calls
            ):
                yield scope


def _condition_fact(test: ast.expr) -> tuple[str, bool] | None:
    """(name, truth it must have) for a test that is a plain name or its negation."""
    negated = False
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, negated = test.operand, not negated
    spelled = dotted_name(test)
    return None if spelled is None else (spelled, not negated)


def _path_facts(node: Node, dominance: PostDominance) -> Facts:
    """The truths of plain-name tests that decide whether ``node`` runs."""
    facts = set()
    for dependence in dominance.all_dependences(node):
        statement = dependence.test.statement
        if not isinstance(statement, (ast.If, ast.While)):
            continue
        fact = _condition_fact(statement.test)
        if fact is not None and dependence.edge in (EdgeKind.TRUE, EdgeKind.FALSE):
            name, truth = fact
            facts.add((name, truth if dependence.edge is EdgeKind.TRUE else not truth))
    return frozenset(facts)


def _call_facts(
    call: ast.Call, definition: ast.FunctionDef | ast.AsyncFunctionDef | None, facts: Facts
) -> Facts:
    """What the callee knows on entry: the caller's facts on ``self``, and its
    parameters given a constant at the call."""
    known = {fact for fact in facts if fact[0].startswith("self.")}
    if definition is None:
        return frozenset(known)
    parameters = [a.arg for a in definition.args.posonlyargs + definition.args.args]
    if parameters and parameters[0] in ("self", "cls") and isinstance(call.func, ast.Attribute):
        parameters = parameters[1:]
    given = list(zip(parameters, call.args, strict=False))
    given += [(k.arg, k.value) for k in call.keywords if k.arg is not None]
    for name, value in given:
        if isinstance(value, ast.Constant) and isinstance(value.value, (bool, int, type(None))):
            known.add((name, bool(value.value)))
    return frozenset(known)


def _settled_edge(node: Node, facts: Facts) -> EdgeKind | None:
    """The one edge a test takes when ``facts`` settle it."""
    statement = node.statement
    if node.kind is not NodeKind.TEST or not isinstance(statement, (ast.If, ast.While)):
        return None
    fact = _condition_fact(statement.test)
    if fact is None:
        return None
    name, truth = fact
    for known, value in facts:
        if known == name:
            return EdgeKind.TRUE if value == truth else EdgeKind.FALSE
    return None


def _calls_in(node: ast.AST) -> Iterator[ast.Call]:
    """The calls inside ``node``, not inside scopes nested in it."""
    pending = list(ast.iter_child_nodes(node))
    while pending:
        current = pending.pop()
        if isinstance(current, SCOPE_TYPES):
            continue
        if isinstance(current, ast.Call):
            yield current
        pending.extend(ast.iter_child_nodes(current))


def _local_callee(call: ast.Call) -> str | None:
    """``f`` for ``f(...)``, ``self.f`` for ``self.f(...)``: a function or method the
    module may define."""
    if isinstance(call.func, ast.Name):
        return call.func.id
    spelled = dotted_name(call.func)
    if spelled is not None and spelled.startswith("self.") and spelled.count(".") == 1:
        return spelled
    return None


# -- collective sequences --------------------------------------------------------------


def _ways_on(node: Node) -> Iterator[tuple[Node, EdgeKind]]:
    """The decision successors a hang can follow: a ``raise`` or a failing ``assert``
    ends the job loudly (the launcher stops every rank), so no way goes on from it;
    ``sys.exit()`` leaves quietly and counts."""
    for successor, edge in decision_successors(node):
        if edge is EdgeKind.RAISE and isinstance(node.statement, (ast.Raise, ast.Assert)):
            continue
        yield successor, edge


def _sequences(function: _Function, start: Node, stop: Node | None) -> set[Sequence_] | None:
    """The collective sequences issued on the ways from ``start`` to ``stop`` (or out of
    the function), each loop taken at most once; None past ``MAX_PATHS`` paths or
    ``MAX_STEPS`` steps (cannot tell)."""
    found: set[Sequence_] = set()
    steps = 0
    start = function.ways_from(start)
    stack: list[tuple[Node, Sequence_, frozenset[int]]] = [(start, (), frozenset())]
    while stack:
        node, issued, visited = stack.pop()
        steps += 1
        if steps > MAX_STEPS:
            return None
        if node is stop or node.kind in (NodeKind.EXIT, NodeKind.RAISE) or node.index in visited:
            found.add(issued)
            if len(found) > MAX_PATHS:
                return None
            continue
        issued = issued + tuple(c.name for c, _ in function.effects.get(node.index, []))
        for successor, _ in function.ways(node):
            stack.append((successor, issued, visited | {node.index}))
    return found


def _arms_agree(function: _Function, test: Node) -> bool | None:
    """Whether every branch of ``test`` issues the same collective sequence before the
    branches meet again (None: cannot tell)."""
    join = function.dominance.immediate(test)
    seen: set[Sequence_] | None = None
    arms = list(_ways_on(test))  # a failing assert is an error path
    if len(arms) < 2:
        return True
    for successor, _ in arms:
        sequences = _sequences(function, successor, join)
        if sequences is None:
            return None
        if sequences == set():
            continue  # every way on is an error path
        if len(sequences) != 1:
            return False
        if seen is not None and sequences != seen:
            return False
        seen = sequences
    return True


# -- rank classes ----------------------------------------------------------------------


def _rank_value(expression: ast.AST, zero: bool, divergence: Divergence, node: Node) -> object:
    """The value a rank read takes for rank 0 (``zero``) or for another rank: ``True`` /
    ``False`` for ``is_*`` predicates, ``0`` or ``_OTHER`` for numbers; None if
    ``expression`` is no rank read."""
    while (
        isinstance(expression, ast.Call)
        and isinstance(expression.func, ast.Name)
        and expression.func.id in ("int", "str", "bool")
        and len(expression.args) == 1
    ):
        expression = expression.args[0]
    taint = divergence.taint(expression, node)
    if taint is None or taint.source is not Source.RANK:
        return None
    if taint.spelled != ast.unparse(expression) and not isinstance(expression, ast.Name):
        return None
    last = (dotted_name(expression) or ast.unparse(expression)).rsplit(".", 1)[-1]
    if last.startswith("is_") or last.startswith("is_global_zero"):
        return zero
    return 0 if zero else _OTHER


class _Other:
    """Any rank but 0 (and not -1): larger than every constant up to 0."""


_OTHER = _Other()


def _evaluate(
    test: ast.AST, zero: bool, function: _Function, node: Node, facts: Facts
) -> bool | None:
    """A test's truth for rank 0 (``zero``) or another rank, with the truths ``facts``
    give plain names; None if unknown. Raises ``_Unsettled`` for a test on the rank
    that a class does not settle (``rank == 1``, ``rank % 2``)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _evaluate(test.operand, zero, function, node, facts)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        values = [_evaluate(v, zero, function, node, facts) for v in test.values]
        if isinstance(test.op, ast.And):
            return False if False in values else (None if None in values else True)
        return True if True in values else (None if None in values else False)
    divergence = function.divergence
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left = _rank_value(test.left, zero, divergence, node)
        truth = _compare(left, test.ops[0], test.comparators[0])
    else:
        value = _rank_value(test, zero, divergence, node)
        truth = value if isinstance(value, bool) else (None if value is None else value is _OTHER)
    if truth is not None:
        return truth
    taint = divergence.taint(test, node)
    if taint is not None and taint.source is Source.RANK:
        raise _Unsettled
    key, negated = _leaf_key(test)
    known = next((value for name, value in facts if name == key), None)
    return None if known is None else known != negated


_NEGATED_OPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.NotEq: ast.Eq,
    ast.NotIn: ast.In,
    ast.IsNot: ast.Is,
}


def _leaf_key(test: ast.AST) -> tuple[str, bool]:
    """The name a fact about ``test`` is kept under, and whether the fact is about its
    negation (``kind != "x"`` is kept as ``kind == "x"`` being false)."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        negated_op = _NEGATED_OPS.get(type(test.ops[0]))
        if negated_op is not None:
            positive = ast.Compare(test.left, [negated_op()], test.comparators)
            return ast.unparse(positive), True
    return dotted_name(test) or ast.unparse(test), False


def _implied(
    test: ast.AST, truth: bool, facts: Facts, zero: bool, function: _Function, node: Node
) -> Facts | None:
    """``facts`` with what taking ``test`` as ``truth`` says of the parts of it that are
    the same on every rank; None when that contradicts them."""
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, truth = test.operand, not truth
    if isinstance(test, ast.BoolOp):
        every = truth == isinstance(test.op, ast.And)
        values = test.values
        if not every:
            # One part decided it: known only when no part is known to have done so
            # and a single part is left open.
            truths = [_evaluate(v, zero, function, node, facts) for v in values]
            open_parts = [v for v, t in zip(values, truths, strict=True) if t is None]
            decided = truth in truths
            values = open_parts if len(open_parts) == 1 and not decided else []
        for value in values:
            implied = _implied(value, truth, facts, zero, function, node)
            if implied is None:
                return None
            facts = implied
        return facts
    taint = function.divergence.taint(test, node)
    if taint is not None and taint.source is Source.RANK:
        return facts
    key, negated = _leaf_key(test)
    kept = truth != negated
    if dict(facts).get(key, kept) != kept:
        return None
    return facts | {(key, kept)}


def _compare(left: object, op: ast.cmpop, right: ast.AST) -> bool | None:
    if left is None:
        return None
    try:
        literal = ast.literal_eval(right)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    constants = list(literal) if isinstance(literal, (tuple, list, set, frozenset)) else [literal]
    if not constants:
        return None
    if not all(isinstance(c, (int, bool)) for c in constants):
        return None
    if left is _OTHER:
        if any(c > 0 for c in constants if isinstance(c, int)):
            return None  # rank 1, 2... are not one class against a positive constant
        equal = False
        order = {ast.Gt: True, ast.GtE: True, ast.Lt: False, ast.LtE: False}
    else:
        equal = left in constants
        value = left if isinstance(left, int) else 0
        constant = constants[0] if isinstance(constants[0], int) else 0
        order = {
            ast.Gt: value > constant,
            ast.GtE: value >= constant,
            ast.Lt: value < constant,
            ast.LtE: value <= constant,
        }
    if isinstance(op, (ast.Eq, ast.In, ast.Is)):
        return equal
    if isinstance(op, (ast.NotEq, ast.NotIn, ast.IsNot)):
        return not equal
    return order.get(type(op))


Walk = tuple[Facts, Sequence_]


def _class_walks(function: _Function, zero: bool) -> list[Walk] | None:
    """The ways through the whole function for rank 0 or for another rank: what each
    way's tests and loop steps said of values every rank shares (a later test of the
    same flag goes the same way), and the collectives it issues; None past
    ``MAX_PATHS``. A way that comes round a loop whose trip issued collectives ends
    there, marked as going on with the loop; a trip that issued none goes on past the
    loop."""
    found: list[Walk] = []
    empty: Facts = frozenset()
    start: tuple[Node, Sequence_, dict[int, int], Facts] = (function.graph.entry, (), {}, empty)
    stack = [start]
    steps = 0
    while stack:
        node, issued, entered, facts = stack.pop()
        steps += 1
        if steps > MAX_STEPS:
            return None
        if node.kind in (NodeKind.EXIT, NodeKind.RAISE):
            found.append((facts, issued))
        elif node.index in entered:
            if len(issued) > entered[node.index]:
                found.append((facts, (*issued, f"#loop{node.index}")))
            else:
                for successor, _ in function.ways(node):
                    if successor.index not in entered:
                        stack.append((successor, issued, entered, facts))
        else:
            stack.extend(_class_steps(function, zero, node, issued, entered, facts))
        if len(found) > MAX_PATHS:
            return None
    return found


def _class_steps(
    function: _Function,
    zero: bool,
    node: Node,
    issued: Sequence_,
    entered: dict[int, int],
    facts: Facts,
) -> Iterator[tuple[Node, Sequence_, dict[int, int], Facts]]:
    """The ways on from ``node`` that a rank of the class can take."""
    entered = {**entered, node.index: len(issued)}
    issued = issued + tuple(c.name for c, _ in function.effects.get(node.index, []))
    statement = node.statement
    # An assert the class fails is an error path: the way ends there.
    test = statement.test if isinstance(statement, (ast.If, ast.While, ast.Assert)) else None
    if node.kind is not NodeKind.TEST:
        test = None
    ways = function.ways(node)
    if [edge for _, edge in ways] == [EdgeKind.NEXT]:
        test = None  # no branch issues anything: nothing to settle
    truth = _evaluate(test, zero, function, node, facts) if test is not None else None
    for successor, edge in ways:
        following: Facts | None = facts
        taken = edge is EdgeKind.TRUE
        if edge is EdgeKind.NEXT:
            pass  # a decision no branch of which issues anything: straight to its join
        elif test is not None:
            if truth is not None and truth != taken:
                continue
            following = _implied(test, taken, facts, zero, function, node)
        elif node.kind is NodeKind.STEP:
            following = facts | {(f"#step{node.index}", taken)}
        if following is not None:
            yield successor, issued, entered, following


def _compatible(first: Facts, second: Facts) -> bool:
    known = dict(first)
    return all(known.get(name, truth) == truth for name, truth in second)


class _Unsettled(Exception):
    """A test on the rank that a class walk cannot settle."""


def _rank_classes_agree(function: _Function) -> bool:
    """Whether rank 0 and the other ranks issue the same collectives whenever the
    values they share are the same."""
    try:
        zero = _class_walks(function, True)
        other = _class_walks(function, False)
    except _Unsettled:
        return False
    if zero is None or other is None:
        return False
    return all(
        first == second
        for zero_facts, first in zero
        for other_facts, second in other
        if _compatible(zero_facts, other_facts)
    )


# -- the question ----------------------------------------------------------------------


def where_ranks_part(analysis: ModuleAnalysis) -> list[Parting]:
    """Every place in the module where ranks stop issuing the same collectives."""
    partings: list[Parting] = []
    for scope in analysis.scopes_with_collectives():
        function = analysis.function(scope)
        if not function.effects:
            continue
        decorated = _rank_only_decorator(analysis, scope, function)
        if decorated is not None:
            partings.append(decorated)
            continue
        partings.extend(_partings(analysis, scope, function))
        partings.extend(_expression_guards(scope, function))
    return partings


def _rank_only_decorator(
    analysis: ModuleAnalysis, scope: Scope, function: _Function
) -> Parting | None:
    """A function that runs on one rank only (``@rank_zero_only``,
    ``@accelerator.on_main_process``) and issues a collective."""
    if not isinstance(scope, _FUNCTIONS):
        return None
    for decorator in scope.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        resolved = analysis.names.resolve(target) or ""
        if resolved.rsplit(".", 1)[-1] not in RANK_ONLY_DECORATORS:
            continue
        first = min(
            (effect for effects in function.effects.values() for effect in effects),
            key=lambda effect: effect[0].line,
        )
        taint = Taint(Facet.CONTENTS, Source.RANK, decorator.lineno, ast.unparse(target))
        return Parting(scope, decorator, decorator, taint, first[0], first[1])
    return None


def _partings(analysis: ModuleAnalysis, scope: Scope, function: _Function) -> Iterator[Parting]:
    reported: set[int] = set()
    agreement: dict[int, bool | None] = {}
    classes_agree: bool | None = None
    for node in function.graph.nodes:
        effects = function.effects.get(node.index)
        if not effects:
            continue
        for dependence in function.dominance.all_dependences(node):
            test = dependence.test
            if test.index in reported:
                continue
            taint = function.divergence.test_taint(test)
            if taint is None:
                continue
            if test.index not in agreement:
                agreement[test.index] = _arms_agree(function, test)
            if agreement[test.index] is not False:
                continue  # the same on every branch, or cannot tell
            if _settled_by_class(function, test):
                if classes_agree is None:
                    classes_agree = _rank_classes_agree(function)
                if classes_agree:
                    continue
            if any(_condition_spelled(test, c) or c.group is not None for c, _ in effects):
                continue
            if _decides_membership(analysis, function, test) or _out_of_sight(
                analysis, function, test
            ):
                continue
            reported.add(test.index)
            collective, through = effects[0]
            yield Parting(
                scope,
                _cause(function, test, node),
                test.statement or scope,
                taint,
                collective,
                through,
                loop=test.kind is NodeKind.STEP or isinstance(test.statement, ast.While),
            )


def _decides_membership(analysis: ModuleAnalysis, function: _Function, test: Node) -> bool:
    """Whether the test's branch makes the process group it then uses: the ranks that
    skip it are not members, and wait in no collective of it."""
    for node in function.dominance.region(test):
        if node.statement is None:
            continue
        for call in own_calls(node.statement):
            if distributed_function(analysis.names.resolve(call.func)) == "init_process_group":
                return True
    return False


def _out_of_sight(analysis: ModuleAnalysis, function: _Function, test: Node) -> bool:
    """Whether the test's branch defines a function that issues collectives (a
    callback handed to a call): how often that call runs it cannot be seen."""
    for node in function.dominance.region(test):
        statement = node.statement
        if isinstance(statement, _FUNCTIONS) and statement.name in analysis.reaching_names():
            return True
        if statement is not None and any(
            isinstance(inner, ast.Lambda) and any(True for _ in _collectives_in(analysis, inner))
            for inner in ast.walk(statement)
        ):
            return True
    return False


def _collectives_in(analysis: ModuleAnalysis, node: ast.AST) -> Iterator[Collective]:
    for call in _calls_in(node):
        found = analysis.objects.collective(call, False)
        if found is not None:
            yield found


def _expression_guards(scope: Scope, function: _Function) -> Iterator[Parting]:
    """Collectives inside an expression that a divergent value guards: ``x if rank ==
    0 else None``, ``is_main and dist.barrier()``."""
    for node in function.graph.nodes:
        effects = function.effects.get(node.index)
        if not effects or node.statement is None:
            continue
        for collective, through in effects:
            guard = _guard_within(node.statement, collective.call)
            if guard is None:
                continue
            taint = function.divergence.taint(guard, node)
            if taint is not None:
                yield Parting(scope, node.statement, guard, taint, collective, through)


def _guard_within(statement: ast.AST, call: ast.Call) -> ast.expr | None:
    """The expression that decides, inside ``statement``, whether ``call`` runs."""
    for parent in ast.walk(statement):
        if (isinstance(parent, ast.IfExp) and _holds(parent.body, call)) or (
            isinstance(parent, ast.IfExp) and _holds(parent.orelse, call)
        ):
            return parent.test
        if isinstance(parent, ast.BoolOp):
            for position, value in enumerate(parent.values[1:], start=1):
                if _holds(value, call):
                    return parent.values[position - 1]
    return None


def _holds(expression: ast.AST, call: ast.Call) -> bool:
    return any(node is call for node in ast.walk(expression))


def _settled_by_class(function: _Function, test: Node) -> bool:
    """Whether ``test`` reads the rank only in ways each rank class answers for itself
    (the rest of it is the same on every rank)."""
    statement = test.statement
    if test.kind is not NodeKind.TEST or not isinstance(statement, (ast.If, ast.While)):
        return False
    taint = function.divergence.test_taint(test)
    if taint is None or taint.source is not Source.RANK:
        return False
    try:
        for zero in (True, False):
            _evaluate(statement.test, zero, function, test, frozenset())
    except _Unsettled:
        return False
    return True


def _condition_spelled(test: Node, collective: Collective) -> bool:
    """Whether a conditional collective's test already names its condition (``or
    distributed_type == DistributedType.DEEPSPEED``): then every rank takes it there."""
    if collective.condition is None or test.statement is None:
        return False
    statement = test.statement
    spelled = ast.unparse(statement.test) if isinstance(statement, (ast.If, ast.While)) else ""
    return any(marker in spelled for marker in ("DEEPSPEED", "FSDP", "MEGATRON"))


def _cause(function: _Function, test: Node, skipped: Node) -> ast.AST:
    """The root cause to report: the one jump in the test's region that avoids the
    skipped collective, else the test."""
    if test.kind is NodeKind.STEP or test.statement is None:
        return test.statement or function.graph.scope
    jumps = [
        node.statement
        for node in function.dominance.region(test)
        if isinstance(node.statement, _JUMPS)
        and _avoids(node, skipped, test)
        and _avoids(skipped, node, test)
    ]
    if len(jumps) == 1 and jumps[0] is not None:
        return jumps[0]
    return test.statement


def _avoids(start: Node, target: Node, test: Node) -> bool:
    """Whether no way from ``start`` reaches ``target`` before the function ends or the
    test is asked again (a jump that avoids the collective, and is not taken after it)."""
    seen: set[int] = {test.index}
    pending = [start]
    while pending:
        node = pending.pop()
        if node is target:
            return False
        if node.index in seen:
            continue
        seen.add(node.index)
        pending.extend(s for s, _ in decision_successors(node))
    return True
