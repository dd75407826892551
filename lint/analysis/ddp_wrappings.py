"""Where a module turns on DDP for a model, and which classes of the module the model is
built from: ``DistributedDataParallel(...)``, Lightning's ``DDPStrategy(...)`` and
``Trainer(strategy="ddp")`` (the models handed to the module's ``.fit(...)`` calls).

The class a model is built from follows names and ``self.x`` fields to their value where
the wrapping runs (a re-bound name is its latest value, ``WholeForwards.built_class``),
and a parameter of a function of the module that wraps what it is handed to what every
caller in the module hands it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ddplint.analysis.api import (
    DDP_STRATEGY_NAMES,
    DDP_WRAPPERS,
    LIGHTNING_DDP_STRATEGIES,
    LIGHTNING_TRAINERS,
)
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.names import call_argument, dotted_name, keyword_argument


@dataclass(frozen=True)
class DataParallelWrapping:
    """One call that turns on DDP, and the models it wraps (DDP's first argument; for
    Lightning, the model handed to each ``.fit(...)`` of the module)."""

    call: ast.Call
    models: tuple[tuple[ast.expr, ast.Call], ...]
    #: ``Trainer(strategy="ddp")``: the strategy's text, when that is how DDP is chosen.
    strategy: ast.Constant | None = None

    @property
    def find_unused(self) -> ast.keyword | None:
        return keyword_argument(self.call, "find_unused_parameters")


def data_parallel_wrappings(analysis: ModuleAnalysis) -> list[DataParallelWrapping]:
    """Every call of the module that turns on DDP, in source order."""
    calls = analysis.nodes.calls_in_order()
    fitted = tuple(
        (model, call)
        for call in calls
        if isinstance(call.func, ast.Attribute) and call.func.attr == "fit"
        for model in (call_argument(call, 0, "model"),)
        if model is not None
    )
    found = []
    for call in calls:
        resolved = analysis.names.resolve(call.func)
        if resolved in DDP_WRAPPERS:
            module = call_argument(call, 0, "module")
            found.append(DataParallelWrapping(call, ((module, call),) if module else ()))
        elif resolved in LIGHTNING_DDP_STRATEGIES:
            found.append(DataParallelWrapping(call, fitted))
        elif resolved in LIGHTNING_TRAINERS:
            given = keyword_argument(call, "strategy")
            if (
                given is not None
                and isinstance(given.value, ast.Constant)
                and given.value.value in DDP_STRATEGY_NAMES
            ):
                found.append(DataParallelWrapping(call, fitted, given.value))
    return found


def wrapped_classes(analysis: ModuleAnalysis, model: ast.expr, call: ast.Call) -> list[str]:
    """The classes of this module the wrapped ``model`` is built from: the one it builds
    in place or through a name; for a parameter of a function of this module that wraps
    what it is handed, the classes every caller in the module hands it (none when one
    caller's cannot be told)."""
    whole = analysis.whole_forwards
    built = whole.built_class(model, call)
    if built is not None:
        return [built]
    scope = analysis.nodes.scope_of_call(call)
    if not isinstance(model, ast.Name) or not isinstance(
        scope, (ast.FunctionDef, ast.AsyncFunctionDef)
    ):
        return []
    arguments = scope.args
    positional = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
    if model.id not in positional + [a.arg for a in arguments.kwonlyargs]:
        return []
    if any(
        isinstance(node, ast.Name) and node.id == model.id and isinstance(node.ctx, ast.Store)
        for node in ast.walk(scope)
    ):
        return []
    position = positional.index(model.id) if model.id in positional else -1
    found: list[str] = []
    for caller in analysis.nodes.calls_in_order():
        if dotted_name(caller.func) != scope.name or analysis.callee_of(caller) is not scope:
            continue
        handed = call_argument(caller, position, model.id)
        built = whole.built_class(handed, caller) if handed is not None else None
        if built is None:
            return []
        if built not in found:
            found.append(built)
    return found


def sets_static_graph(analysis: ModuleAnalysis, call: ast.Call) -> bool:
    """Whether a DDP wrapping sets ``static_graph`` to anything but False (DDP then
    reads the graph once, and ``find_unused_parameters`` neither costs nor helps)."""
    static = keyword_argument(call, "static_graph")
    if static is None:
        return False
    scope = analysis.nodes.scope_of_call(call)
    return analysis.constants.value(static.value, scope) is not False
