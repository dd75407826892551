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

A call of a function of the same module that reaches a collective counts as one
(``functions``); pairing and rank classes are ``pairing``'s.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ddplint.analysis.control_flow import (
    JUMPS,
    EdgeKind,
    Node,
    NodeKind,
    Scope,
    ends_loudly,
    holds_node,
)
from ddplint.analysis.divergence import (
    Divergence,
    Facet,
    Source,
    Taint,
    distributed_function,
)
from ddplint.analysis.dominance import avoids, decision_successors
from ddplint.analysis.effects import (
    Collective,
    header_parts,
    own_calls,
)
from ddplint.analysis.functions import FunctionFacts, ModuleAnalysis, calls_in, ways_on
from ddplint.analysis.names import dotted_name
from ddplint.analysis.pairing import (
    arm_sequences,
    arms_agree,
    class_culprits,
    class_order_apart,
    classes_agree_in_turn,
    classes_meet_again,
    expression_arms_pair,
    first_difference,
    rank_classes_agree,
    settled_by_class,
)
from ddplint.analysis.rank_guards import rank_only_decorator
from ddplint.analysis.single_process import reads_rank_variable

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


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
    #: Where both branches issue a collective but of other kinds, the first each issues.
    order: tuple[Collective, Collective] | None = None
    #: The statement of this function that issues ``missed`` (or calls what does).
    site: ast.AST | None = None
    #: ``order`` is that of rank 0 against the other ranks across the whole function
    #: (complementary rank tests), not of one test's two branches.
    classes: bool = False

    @property
    def test_line(self) -> int:
        return getattr(self.test, "lineno", 0)


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
        partings.extend(_handler_exits(scope, function))
    # A single-process job has no peer to part from.
    alone = analysis.single_process
    return [parting for parting in partings if not alone.holds(parting.cause)]


def _rank_only_decorator(
    analysis: ModuleAnalysis, scope: Scope, function: FunctionFacts
) -> Parting | None:
    """A function that runs on one rank only (``@rank_zero_only``,
    ``@accelerator.on_main_process``) and issues a collective."""
    guard = rank_only_decorator(analysis, scope)
    if guard is None:
        return None
    first = min(
        (effect for effects in function.effects.values() for effect in effects),
        key=lambda effect: effect[0].line,
    )
    return Parting(scope, guard.cause, guard.cause, guard.taint, first[0], first[1])


def _partings(analysis: ModuleAnalysis, scope: Scope, function: FunctionFacts) -> Iterator[Parting]:
    reported: set[int] = set()
    agreement: dict[int, bool | None] = {}
    classes_agree: bool | None = None
    culprits: set[int] | None = None
    class_tests: list[Node] | None = None
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
                agreement[test.index] = arms_agree(function, test)
            if agreement[test.index] is not False:
                continue  # the same on every branch, or cannot tell
            if settled_by_class(function, test):
                if classes_agree is None:
                    classes_agree = rank_classes_agree(function) or _halves_agree(analysis, scope)
                if classes_agree:
                    continue
                if class_tests is None:
                    class_tests = _class_tests(function)
                if classes_meet_again(function, test, class_tests):
                    continue  # the other half pairs it further on (main process first)
                if culprits is None:
                    culprits = class_culprits(function, class_tests)
                    ordered = None if culprits else _class_order(scope, function)
                    if ordered is not None:
                        yield ordered
                        return
                if culprits and test.index not in culprits:
                    continue  # paired up; another rank test is the cause
            if not _counted(test, effects):
                continue
            if _decides_membership(analysis, function, test) or _out_of_sight(
                analysis, function, test
            ):
                continue
            reported.add(test.index)
            node = _first_skipped(function, test, node)
            collective, through = function.effects[node.index][0]
            yield Parting(
                scope,
                root_cause(function, test, node),
                test.statement or scope,
                taint,
                collective,
                through,
                loop=test.kind is NodeKind.STEP or isinstance(test.statement, ast.While),
                order=_first_of_each(function, test),
                site=node.statement,
            )


#: The two halves of a context manager, in the order every rank runs them.
_CONTEXT_HALVES = (("__enter__", "__exit__"), ("__aenter__", "__aexit__"))


def _halves_agree(analysis: ModuleAnalysis, scope: Scope) -> bool:
    """Whether ``scope`` is one half of a context manager class whose two halves, run
    in turn, issue the same collectives for rank 0 and the others (``if rank > 0:
    barrier()`` on entry, ``if rank == 0: barrier()`` on exit: main process first)."""
    owner = analysis.nodes.scope_of.get(scope)
    if not isinstance(scope, _FUNCTIONS) or not isinstance(owner, ast.ClassDef):
        return False
    methods = {m.name: m for m in owner.body if isinstance(m, _FUNCTIONS)}
    for halves in _CONTEXT_HALVES:
        if scope.name in halves and all(name in methods for name in halves):
            return classes_agree_in_turn([analysis.function(methods[n]) for n in halves])
    return False


def _class_order(scope: Scope, function: FunctionFacts) -> Parting | None:
    """Rank 0 and the other ranks issue the same collectives in another order: one
    parting, at the rank test that decides rank 0's first collective out of order."""
    order = class_order_apart(function)
    if order is None:
        return None
    mine = order[0]
    for node in function.graph.nodes:
        if not any(c is mine for c, _ in function.effects.get(node.index, [])):
            continue
        for dependence in function.dominance.all_dependences(node):
            test = dependence.test
            taint = function.divergence.test_taint(test)
            if taint is not None and settled_by_class(function, test):
                statement = test.statement or scope
                return Parting(
                    scope,
                    statement,
                    statement,
                    taint,
                    mine,
                    order=order,
                    classes=True,
                    site=node.statement,
                )
    return None


def _handler_exits(scope: Scope, function: FunctionFacts) -> Iterator[Parting]:
    """A ``return`` / ``break`` / ``continue`` in an ``except`` handler whose ``try``
    body computes on this rank's values (a model's forward, a backward of its loss):
    the exception is per-rank data, raised on some ranks only, and the handler's exit
    skips a collective the ranks that did not raise go on to issue. A ``try`` body
    that computes on shared values only (``torch.load(path)``) raises on every rank or
    on none."""
    nodes_of = {id(node.statement): node for node in function.graph.nodes if node.statement}
    for statement in own_statements(scope):
        if not isinstance(statement, ast.Try) or not statement.handlers:
            continue
        body = [nodes_of[id(s)] for s in statements_in(statement.body) if id(s) in nodes_of]
        found = per_rank_call(function, body)
        if found is None:
            continue
        raised, start = found
        for handler in statement.handlers:
            handled = [nodes_of[id(s)] for s in statements_in(handler.body) if id(s) in nodes_of]
            if any(node.index in function.effects for node in handled):
                continue  # the handler issues collectives of its own: pairing unknown
            several = reached_by_several(function, handled)
            for jump in handled:
                if not isinstance(jump.statement, JUMPS) or jump.index not in several:
                    continue
                head = _loop_head(scope, function, jump, nodes_of)
                missed = _skipped_by(function, start, jump, head)
                if missed is not None:
                    collective, through = missed
                    yield Parting(scope, jump.statement, handler, raised, collective, through)


def reached_by_several(function: FunctionFacts, handled: list[Node]) -> set[int]:
    """The nodes of a handler a job of several processes reaches: a way that passes
    the one-process branch of a test (``if dist.is_initialized(): raise``, then
    ``continue``) or ends loudly goes no further."""
    inside = {node.index for node in handled}
    reached: set[int] = set()
    pending = handled[:1]
    while pending:
        node = pending.pop()
        if node.index in reached or node.index not in inside:
            continue
        reached.add(node.index)
        alone = function.divergence.one_process_edge(node)
        pending.extend(s for s, edge in ways_on(node) if edge is not alone)
    return reached


def per_rank_call(
    function: FunctionFacts, body: list[Node], view: Divergence | None = None
) -> tuple[Taint, Node] | None:
    """The first statement of the ``try`` body with a call that computes on values
    that differ between ranks (the exception it may raise is then this rank's own),
    and the reason; ``view``: the divergence to ask (a batch view), the function's own
    by default."""
    divergence = view if view is not None else function.divergence
    for node in body:
        for call in own_calls(node.statement) if node.statement is not None else ():
            taint = divergence.taint(call, node)
            if taint is not None and not _reads_rank_alone(divergence, call, node, taint):
                spelled = f"{ast.unparse(call.func)}(...)"
                return Taint(Facet.CONTENTS, Source.RAISED, call.lineno, spelled), node
    return None


def _reads_rank_alone(divergence: Divergence, call: ast.Call, node: Node, taint: Taint) -> bool:
    """A call that reads the rank from nothing that differs (``dist.get_rank()``,
    ``torch.distributed.get_world_size(group)``), or converts the rank as read
    (``int(os.environ["RANK"])``): its value is this rank's own, but whether it raises
    (no process group yet, no launcher's variable) is alike on every process."""
    if taint.source is not Source.RANK:
        return False
    inputs: list[ast.expr] = [*call.args, *(k.value for k in call.keywords)]
    if isinstance(call.func, ast.Attribute):
        inputs.append(call.func.value)
    if isinstance(call.func, ast.Name) and call.func.id in _CONVERSIONS:
        return all(reads_rank_variable(value, divergence.evaluator.names) for value in inputs)
    return all(divergence.taint(value, node) is None for value in inputs)


#: Builtins that turn a rank read from the launcher's variables into a number or text;
#: a rank is always one, so they raise on no rank's value.
_CONVERSIONS = frozenset({"int", "str"})


def _skipped_by(
    function: FunctionFacts, start: Node, jump: Node, head: Node
) -> tuple[Collective, str | None] | None:
    """The first collective after ``start`` (the call that may raise) that the ``try``
    body's way reaches before ``head`` (the loop step, or the function's entry for a
    ``return``) and the jump's way does not."""
    for index in sorted(function.effects, key=lambda i: function.graph.nodes[i].line):
        target = function.graph.nodes[index]
        if target is start:
            continue
        if not avoids(start, target, head) and avoids(jump, target, head):
            return function.effects[index][0]
    return None


def _loop_head(
    scope: Scope, function: FunctionFacts, jump: Node, nodes_of: dict[int, Node]
) -> Node:
    """The node a ``break`` / ``continue`` returns to: its loop's step or test (the
    function's entry for a ``return``: no way goes back there)."""
    statement = jump.statement
    if isinstance(statement, (ast.Break, ast.Continue)):
        return loop_head(scope, function, statement, nodes_of)
    return function.graph.entry


def loop_head(
    scope: Scope, function: FunctionFacts, statement: ast.stmt, nodes_of: dict[int, Node]
) -> Node:
    """The step or test of the innermost loop of ``scope`` whose body holds
    ``statement``: where the next iteration starts (the function's entry outside any)."""
    loops = [
        loop
        for loop in own_statements(scope)
        if isinstance(loop, (ast.For, ast.AsyncFor, ast.While))
        and any(inner is statement for inner in statements_in(loop.body))
    ]
    if loops:
        innermost = max(loops, key=lambda loop: (loop.lineno, loop.col_offset))
        head = nodes_of.get(id(innermost))
        if head is not None:
            return head
    return function.graph.entry


def own_statements(scope: Scope) -> Iterator[ast.stmt]:
    """The statements of a scope's own code (not of functions or classes nested in
    it)."""
    body = getattr(scope, "body", [])
    yield from statements_in(body if isinstance(body, list) else [])


def statements_in(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    pending = list(reversed(body))
    while pending:
        statement = pending.pop()
        yield statement
        if isinstance(statement, (*_FUNCTIONS, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            pending.extend(reversed(getattr(statement, field, [])))
        for handler in getattr(statement, "handlers", []):
            pending.extend(reversed(handler.body))
        for case in getattr(statement, "cases", []):
            pending.extend(reversed(case.body))


def _first_of_each(function: FunctionFacts, test: Node) -> tuple[Collective, Collective] | None:
    """Where the two branches of ``test`` each issue one sequence and, at the first
    place they differ, both issue a collective (of other kinds): those two."""
    sequences = arm_sequences(function, test)
    if sequences is None or len(sequences) != 2:
        return None
    difference = first_difference(*sequences)
    if difference is None:
        return None
    mine, theirs = difference
    if isinstance(mine, Collective) and isinstance(theirs, Collective):
        return mine, theirs
    return None


def _class_tests(function: FunctionFacts) -> list[Node]:
    """The function's rank tests that each rank class settles and whose branches issue
    different collectives."""
    return [
        node
        for node in function.graph.nodes
        if node.kind is NodeKind.TEST
        and function.divergence.test_taint(node) is not None
        and settled_by_class(function, node)
        and arms_agree(function, node) is False
    ]


def _decides_membership(analysis: ModuleAnalysis, function: FunctionFacts, test: Node) -> bool:
    """Whether the test's branch makes the process group it then uses: the ranks that
    skip it are not members, and wait in no collective of it."""
    for node in function.dominance.region(test):
        if node.statement is None:
            continue
        for call in own_calls(node.statement):
            if distributed_function(analysis.names.resolve(call.func)) == "init_process_group":
                return True
    return False


def _out_of_sight(analysis: ModuleAnalysis, function: FunctionFacts, test: Node) -> bool:
    """Whether the test's branch defines a function that issues collectives, or hands
    one on as a value (a callback: ``button.click(fn=generate)``, a serving loop's
    handler), itself or through a local function it calls: how often that call runs
    it cannot be seen. Each node of the branch is asked for what it runs itself (a
    compound statement's header: its body has nodes of its own); a node every way to
    the test passes (a call earlier in the same loop trip, in the branch only because
    a ``break`` on the test skips the later trips) runs on both sides before they part."""
    for node in function.dominance.region(test):
        statement = node.statement
        if statement is None or avoids(function.graph.entry, test, node):
            continue
        if isinstance(statement, _FUNCTIONS) and statement.name in analysis.reaching_names():
            return True
        if _hands_on_callback(analysis, own_calls(statement), set()):
            return True
        if any(
            isinstance(inner, ast.Lambda) and any(True for _ in _collectives_in(analysis, inner))
            for part in header_parts(statement)
            for inner in ast.walk(part)
        ):
            return True
    return False


#: How many local calls deep a callback handed on is looked for.
_CALLBACK_DEPTH = 3


def _hands_on_callback(analysis: ModuleAnalysis, calls: Iterable[ast.Call], seen: set[str]) -> bool:
    """Whether one of ``calls`` hands a local function that reaches a collective to a
    call as a value (not calling it), or calls a local function that does."""
    reaching = analysis.reaching_names()
    for call in calls:
        values = [*call.args, *(keyword.value for keyword in call.keywords)]
        if any(dotted_name(value) in reaching for value in values):
            return True
        callee = dotted_name(call.func)
        if callee is None or callee in seen or len(seen) >= _CALLBACK_DEPTH:
            continue
        definition = analysis.local_function(callee)
        if definition is not None and _hands_on_callback(
            analysis, calls_in(definition), seen | {callee}
        ):
            return True
    return False


def _collectives_in(analysis: ModuleAnalysis, node: ast.AST) -> Iterator[Collective]:
    for call in calls_in(node):
        found = analysis.objects.collective(call, False)
        if found is not None:
            yield found


def _expression_guards(scope: Scope, function: FunctionFacts) -> Iterator[Parting]:
    """Collectives inside an expression that a divergent value guards: ``x if rank ==
    0 else None``, ``is_main and dist.barrier()``; one parting per guard (its first
    collective), however many collectives its arms issue."""
    for node in function.graph.nodes:
        effects = function.effects.get(node.index)
        if not effects or node.statement is None:
            continue
        issued = [collective for collective, _ in effects]
        decided: set[int] = set()
        for collective, through in effects:
            guard = expression_guard(node.statement, collective.call, issued)
            if guard is None or id(guard) in decided:
                continue
            decided.add(id(guard))
            taint = function.divergence.taint(guard, node)
            if taint is not None:
                yield Parting(
                    scope, node.statement, guard, taint, collective, through, site=node.statement
                )


def expression_guard(
    statement: ast.AST, call: ast.Call, issued: list[Collective] | None = None
) -> ast.expr | None:
    """The expression that decides, inside ``statement``, whether ``call`` runs; a
    conditional expression whose arms both issue the same kinds of ``issued`` (the
    collectives of the statement) decides nothing: either arm pairs."""
    for parent in ast.walk(statement):
        if isinstance(parent, ast.IfExp) and (
            holds_node(parent.body, call) or holds_node(parent.orelse, call)
        ):
            if issued is not None and expression_arms_pair(parent, issued):
                continue
            return parent.test
        if isinstance(parent, ast.BoolOp):
            for position, value in enumerate(parent.values[1:], start=1):
                if holds_node(value, call):
                    return parent.values[position - 1]
    return None


def _condition_spelled(test: Node, collective: Collective) -> bool:
    """Whether a conditional collective's test already names its condition (``or
    distributed_type == DistributedType.DEEPSPEED``): then every rank takes it there."""
    if collective.condition is None or test.statement is None:
        return False
    statement = test.statement
    spelled = ast.unparse(statement.test) if isinstance(statement, (ast.If, ast.While)) else ""
    return any(marker in spelled for marker in ("DEEPSPEED", "FSDP", "MEGATRON"))


def _counted(test: Node, effects: list[tuple[Collective, str | None]]) -> bool:
    """Whether a node's collectives can part the ranks at ``test``: none of them is
    issued on a group or under a condition that spells the test itself."""
    return not any(_condition_spelled(test, c) or c.group is not None for c, _ in effects)


def _first_skipped(function: FunctionFacts, test: Node, found: Node) -> Node:
    """The collective node of the test's branch that the ranks reach first after the
    test (nearest along the graph's ways, exception edges left out), ``found`` where
    none is nearer: after a ``break`` in a loop, the collective later in the same trip,
    not the one of the next trip that comes earlier in the text."""
    branch = {node.index for node in function.dominance.region(test)}
    seen = {test.index}
    layer = [successor for successor, _ in decision_successors(test)]
    while layer:
        following: list[Node] = []
        for node in layer:
            if node.index in seen:
                continue
            seen.add(node.index)
            effects = function.effects.get(node.index) if node.index in branch else None
            if node is found or (effects and _counted(test, effects)):
                return node
            following.extend(successor for successor, _ in decision_successors(node))
        layer = following
    return found


def root_cause(function: FunctionFacts, test: Node, skipped: Node) -> ast.AST:
    """The root cause to report: the one jump in the test's region that avoids the
    skipped collective, else the test."""
    if test.kind is NodeKind.STEP or test.statement is None:
        return test.statement or function.graph.scope
    jumps = [
        node.statement
        for node in function.dominance.region(test)
        if _leaves(node) and avoids(node, skipped, test) and avoids(skipped, node, test)
    ]
    if len(jumps) == 1 and jumps[0] is not None:
        return jumps[0]
    return test.statement


def _leaves(node: Node) -> bool:
    """The exits a parting is reported at (a ``raise`` is an error path, never a
    parting): a ``return`` / ``break`` / ``continue``, or an exit that ends the process as a
    success (``sys.exit(0)``, ``raise SystemExit``): the peers go on without it."""
    if isinstance(node.statement, JUMPS):
        return True
    raises = any(edge is EdgeKind.RAISE for _, edge in node.successors)
    return raises and not ends_loudly(node.statement)
