"""The forward of a ``DistributedDataParallel`` model run on some ranks only: a question
to the analysis core (DDP213).

``ddp_forwards_on_some_ranks(analysis)``: each call of a wrapped model's forward (the
effects' implicit "DistributedDataParallel forward": ``model(x)``, ``model.forward(x)``;
the model known by the wrapping call, ``self.x`` fields, or the project's callers that
hand a parameter a wrapped model) and each call of a local function that reaches one
with a wrapped model as an argument (``evaluate(ddp_model, loader)``), that runs on some
ranks only because of a test on the rank itself (``rank_guards.guard_of``; a test whose
ways both run the same forward and collectives decides nothing). A flag set on some ranks
(``Source.DECIDED``: ``need_break`` set on a NaN loss) that skips a forward is DDP211's
finding, a test on this rank's values DDP219's: one finding per root cause. A wrapper
built with ``broadcast_buffers=False``, a model of a class of the module that holds no
buffers (``model_buffers``), ``model.module`` and a model unwrapped before the call issue
nothing (the effects).

``trains``: whether the forward runs in training (its result reaches a backward in its
function, with autograd on there; for a function handed the model, the forward inside
it): calling the inner module there would also turn off DDP's gradient reduction.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace

from ddplint.analysis.control_flow import JUMPS, Graph, Node, holds_node, own_nodes
from ddplint.analysis.divergence import Source, Taint
from ddplint.analysis.effects import DDP_FORWARD, Collective, own_calls
from ddplint.analysis.functions import FunctionFacts, ModuleAnalysis
from ddplint.analysis.names import dotted_name
from ddplint.analysis.questions import root_cause
from ddplint.analysis.rank_guards import RankGuard, guard_of, paired_tests
from ddplint.analysis.step_paths import NO_GRAD_CONTEXTS


@dataclass(frozen=True)
class ForwardOnSomeRanks:
    """``call`` runs the forward of ``model`` (a wrapped model) on some ranks only
    because of ``guard``; ``inner``: the forward inside the local function ``call``
    hands the model to (None when ``call`` is the forward)."""

    call: ast.Call
    model: ast.expr
    guard: RankGuard
    inner: ast.Call | None = None
    #: The ``DistributedDataParallel(...)`` call that made the model (None: a model its
    #: callers pass in).
    wrapping: ast.Call | None = None
    #: Whether the forward runs in training (``feeds_a_backward``).
    trains: bool = False
    #: The model of each later forward of the same model under the same guard that
    #: issues nothing only because this one ran first without grad: once this one is
    #: changed, the first of them broadcasts instead (a fix changes them all).
    shadowed: tuple[ast.expr, ...] = ()
    #: The ``return`` / ``break`` / ``continue`` taken on the guard's test that skips
    #: the forward on some ranks (``questions.root_cause``), None where the forward
    #: sits inside the test's branch itself.
    exit: ast.AST | None = None


def ddp_forwards_on_some_ranks(analysis: ModuleAnalysis) -> list[ForwardOnSomeRanks]:
    """Every DDP forward of the module run on some ranks only, in source order."""
    found: list[ForwardOnSomeRanks] = []
    for scope in analysis.scopes_with_collectives():
        function = analysis.function(scope)
        paired = paired_tests(analysis, scope)
        forwards = [
            (node, collective, through, forward)
            for node in function.graph.nodes
            for collective, through in function.effects.get(node.index, ())
            if collective.name == DDP_FORWARD
            and node.statement is not None
            and (forward := _forward_at(analysis, node, collective, through))
        ]
        here: list[ForwardOnSomeRanks] = []
        quiet: list[tuple[ast.expr, RankGuard]] = []
        for node, collective, through, (call, model) in forwards:
            trains = feeds_a_backward(analysis, collective.call)
            guard = guard_of(analysis, scope, node, call, _on_rank, balanced=paired)
            if not trains and _after_forward_without_grad(
                analysis, function.graph, node, model, forwards
            ):
                if guard is not None:
                    quiet.append((model, guard))
                continue  # DDP broadcasts buffers only after a forward with grad
            if guard is not None:
                inner = collective.call if through is not None else None
                wrapping = analysis.objects.ddp_wrapping(model, call)
                exit_ = _exit_taken(function, guard, node)
                here.append(
                    ForwardOnSomeRanks(call, model, guard, inner, wrapping, trains, exit=exit_)
                )
        found.extend(_with_shadowed(forward, quiet) for forward in here)
    return sorted(found, key=lambda f: (f.call.lineno, f.call.col_offset))


def _exit_taken(function: FunctionFacts, guard: RankGuard, node: Node) -> ast.AST | None:
    """The jump on the guard's test that skips ``node`` (``questions.root_cause``), if
    the test decides it through one."""
    if guard.where is None or guard.where[1].statement is None:
        return None
    cause = root_cause(function, guard.where[1], node)
    return cause if isinstance(cause, JUMPS) else None


def _with_shadowed(
    forward: ForwardOnSomeRanks, quiet: list[tuple[ast.expr, RankGuard]]
) -> ForwardOnSomeRanks:
    """``forward`` with the later forwards of its model under its guard that only its own
    no-grad run keeps quiet."""
    spelled = dotted_name(forward.model)
    shadowed = tuple(
        model
        for model, guard in quiet
        if spelled is not None
        and dotted_name(model) == spelled
        and guard.cause is forward.guard.cause
        and (model.lineno, model.col_offset) > (forward.model.lineno, forward.model.col_offset)
    )
    return replace(forward, shadowed=shadowed) if shadowed else forward


Forward = tuple[Node, Collective, str | None, tuple[ast.Call, ast.expr]]


def _after_forward_without_grad(
    analysis: ModuleAnalysis, graph: Graph, node: Node, model: ast.expr, forwards: list[Forward]
) -> bool:
    """Whether every way to ``node`` runs a forward of the same model with autograd off
    (``with torch.no_grad()``, there or in the function it is handed to) after the last
    forward of it with autograd on: DDP broadcasts buffers before a forward only when
    the previous one ran with grad (``require_forward_param_sync``, set after each
    forward), so this forward issues no collective. (A forward that feeds a backward
    is asked anyway: the backward's gradient all-reduce waits for the peers.)"""
    spelled = dotted_name(model)
    same = [
        (other, not _runs_with_grad(analysis, collective, call))
        for other, collective, _, (call, used) in forwards
        if other.index != node.index and spelled is not None and dotted_name(used) == spelled
    ]
    with_grad = {other.index for other, off in same if not off}
    return any(
        off and _dominates(graph, other, node) and not _between(graph, other, node, with_grad)
        for other, off in same
    )


def _runs_with_grad(analysis: ModuleAnalysis, collective: Collective, call: ast.Call) -> bool:
    """Whether a forward (``collective.call``, run by ``call`` of this function) runs
    with autograd on: neither it nor the call that reaches it is under ``no_grad``."""
    return not _off_in_function(analysis, collective.call) and not _off_in_function(analysis, call)


def _off_in_function(analysis: ModuleAnalysis, call: ast.Call) -> bool:
    """``_without_grad`` of ``call`` in its function, through the comprehensions and
    lambdas it stands in (``[model(b) for b in loader]`` under ``no_grad``)."""
    node: ast.AST = call
    scope = analysis.nodes.scope_of_call(call)
    while True:
        if _without_grad(analysis, scope, node):
            return True
        if isinstance(scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return False
        parent = analysis.nodes.scope_of.get(scope)
        if parent is None:
            return False
        node, scope = scope, parent


def _reachable(start: Node, avoiding: int | None = None) -> set[int]:
    """The nodes reachable from ``start`` (itself included), not passing ``avoiding``."""
    seen: set[int] = set()
    pending = [start]
    while pending:
        current = pending.pop()
        if current.index in seen or current.index == avoiding:
            continue
        seen.add(current.index)
        pending.extend(successor for successor, _ in current.successors)
    return seen


def _dominates(graph: Graph, first: Node, second: Node) -> bool:
    """Whether every way from the function's entry to ``second`` passes ``first``."""
    return second.index not in _reachable(graph.entry, avoiding=first.index)


def _between(graph: Graph, first: Node, second: Node, nodes: set[int]) -> bool:
    """Whether one of ``nodes`` lies on a way from ``first`` to ``second``."""
    after = {
        index
        for successor, _ in first.successors
        for index in _reachable(successor, avoiding=first.index)
    }
    return any(
        index in after and second.index in _reachable(graph.nodes[index], avoiding=first.index)
        for index in nodes
    )


def _on_rank(taint: Taint) -> bool:
    return taint.source is Source.RANK


def _forward_at(
    analysis: ModuleAnalysis, node: Node, collective: Collective, through: str | None
) -> tuple[ast.Call, ast.expr] | None:
    """The call of ``node``'s statement that runs the forward, and the wrapped model it
    runs: the forward itself, or a call of ``through`` handed a wrapped model."""
    if through is None:
        model = collective.call.func
        if isinstance(model, ast.Attribute) and model.attr == "forward":
            model = model.value
        return collective.call, model
    callee = analysis.local_function(through)
    for call in own_calls(node.statement) if node.statement is not None else ():
        if callee is None or analysis.callee_of(call) is not callee:
            continue
        handed = [*call.args, *(k.value for k in call.keywords)]
        wrapped = next((a for a in handed if analysis.ddp_model_at(a, call, node)), None)
        if wrapped is not None:
            return call, wrapped
    return None


def feeds_a_backward(analysis: ModuleAnalysis, forward: ast.Call) -> bool:
    """Whether the result of ``forward`` reaches a backward in its function (``loss =
    criterion(model(x), y); loss.backward()``, ``model(x).sum().backward()``), with
    autograd on where it runs (not under ``torch.no_grad()`` / ``inference_mode``)."""
    scope = analysis.nodes.scope_of_call(forward)
    if _without_grad(analysis, scope, forward):
        return False
    derived: set[str] = set()
    assignments = [n for n in own_nodes(scope) if isinstance(n, (ast.Assign, ast.AugAssign))]
    grown = True
    while grown:
        grown = False
        for assignment in assignments:
            if not _reads_result(assignment.value, forward, derived):
                continue
            targets = (
                assignment.targets if isinstance(assignment, ast.Assign) else [assignment.target]
            )
            for target in targets:
                for name in ast.walk(target):
                    spelled = dotted_name(name)
                    if spelled is not None and spelled not in derived:
                        derived.add(spelled)
                        grown = True
    backward_functions = analysis.backward_functions
    for node in own_nodes(scope):
        if not isinstance(node, ast.Call):
            continue
        if (
            analysis.backward_label(node) is None
            and dotted_name(node.func) not in backward_functions
        ):
            continue
        if _reads_result(node, forward, derived):
            return True
    return False


def _reads_result(expression: ast.AST, forward: ast.Call, derived: set[str]) -> bool:
    """Whether ``expression`` holds ``forward`` or reads a name bound from its result."""
    return any(
        node is forward
        or (isinstance(node, (ast.Name, ast.Attribute)) and dotted_name(node) in derived)
        for node in ast.walk(expression)
    )


def _without_grad(analysis: ModuleAnalysis, scope: ast.AST, call: ast.AST) -> bool:
    """Whether ``call`` runs with autograd off: inside ``with torch.no_grad():`` (or
    ``inference_mode``) in its function, or in a function decorated with one."""
    resolve = analysis.names.resolve

    def turns_off(expression: ast.expr) -> bool:
        target = expression.func if isinstance(expression, ast.Call) else expression
        return resolve(target) in NO_GRAD_CONTEXTS

    if any(turns_off(d) for d in getattr(scope, "decorator_list", [])):
        return True
    return any(
        isinstance(node, (ast.With, ast.AsyncWith))
        and any(turns_off(item.context_expr) for item in node.items)
        and any(holds_node(statement, call) for statement in node.body)
        for node in own_nodes(scope)
    )
