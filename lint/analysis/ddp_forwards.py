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
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ddplint.analysis.divergence import Source, Taint
from ddplint.analysis.effects import DDP_FORWARD, Collective, own_calls
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.rank_guards import RankGuard, guard_of, paired_tests


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
                    found.append(ForwardOnSomeRanks(call, model, guard, inner, wrapping))
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
