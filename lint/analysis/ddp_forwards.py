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
built with ``broadcast_buffers=False``, ``model.module`` and a model unwrapped before the
call issue nothing (the effects).

``trains``: whether the forward runs in training (its result reaches a backward in its
function, with autograd on there; for a function handed the model, the forward inside
it): calling the inner module there would also turn off DDP's gradient reduction.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ddplint.analysis.control_flow import holds_node, own_nodes
from ddplint.analysis.divergence import Source, Taint
from ddplint.analysis.effects import DDP_FORWARD, Collective, own_calls
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.names import dotted_name
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


def ddp_forwards_on_some_ranks(analysis: ModuleAnalysis) -> list[ForwardOnSomeRanks]:
    """Every DDP forward of the module run on some ranks only, in source order."""
    found: list[ForwardOnSomeRanks] = []
    for scope in analysis.scopes_with_collectives():
        function = analysis.function(scope)
        paired = paired_tests(analysis, scope)
        for node in function.graph.nodes:
            for collective, through in function.effects.get(node.index, ()):
                if collective.name != DDP_FORWARD or node.statement is None:
                    continue
                forward = _forward_at(analysis, node.statement, collective, through)
                if forward is None:
                    continue
                call, model = forward
                guard = guard_of(analysis, scope, node, call, _on_rank, balanced=paired)
                if guard is not None:
                    inner = collective.call if through is not None else None
                    wrapping = analysis.objects.ddp_wrapping(model, call)
                    trains = feeds_a_backward(analysis, collective.call)
                    found.append(ForwardOnSomeRanks(call, model, guard, inner, wrapping, trains))
    return sorted(found, key=lambda f: (f.call.lineno, f.call.col_offset))


def _on_rank(taint: Taint) -> bool:
    return taint.source is Source.RANK


def _forward_at(
    analysis: ModuleAnalysis, statement: ast.AST, collective: Collective, through: str | None
) -> tuple[ast.Call, ast.expr] | None:
    """The call of ``statement`` that runs the forward, and the wrapped model it runs:
    the forward itself, or a call of ``through`` handed a wrapped model."""
    if through is None:
        model = collective.call.func
        if isinstance(model, ast.Attribute) and model.attr == "forward":
            model = model.value
        return collective.call, model
    objects = analysis.objects
    callee = analysis.local_function(through)
    for call in own_calls(statement):
        if callee is None or analysis.callee_of(call) is not callee:
            continue
        handed = [*call.args, *(k.value for k in call.keywords)]
        wrapped = next((a for a in handed if objects.ddp_model(a, call)), None)
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


def _without_grad(analysis: ModuleAnalysis, scope: ast.AST, call: ast.Call) -> bool:
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
