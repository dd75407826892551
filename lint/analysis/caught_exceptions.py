"""Exceptions of this rank's batch caught and turned into a skip of the step (DDP212).

Where the per-batch work runs (a training loop's body, whose items are this rank's
batch: ``batches``, also a loop that runs its backward through a local helper; a
LightningModule's step method; a local function a training loop hands this rank's
batch, the parameters that receive it seeded as the batch), a ``try`` whose body
computes on this rank's data (the batch view of the divergence: the exception is
raised on some ranks only) has a handler the caller selects (by the exceptions it
names). The handler *skips* a later backward (itself, or through a local function that
runs one) or collective (``effects``, local functions that reach one included) when
the ``try`` body's way reaches it before the next iteration (or the end of the step)
and no way out of the handler does:
``continue``, ``return``, or a fall-through past a ``try`` that held the backward.

Not a skip: a handler that ends the job loudly on every way (re-raises, ``sys.exit(1)``),
or that issues collectives of its own (which it pairs with cannot be told); a failure
recorded in a flag the ranks reduce before deciding (every rank's way then reaches the
backward: the flag's test is uniform after the all-reduce); a ``try`` whose body reads
only values every rank shares (it raises on every rank or on none); a way only a
single-process job takes.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ddplint.analysis.batches import step_method, training_loops
from ddplint.analysis.control_flow import Node, Scope, ends_loudly
from ddplint.analysis.divergence import Source
from ddplint.analysis.dominance import avoids
from ddplint.analysis.effects import own_calls
from ddplint.analysis.functions import FunctionFacts, ModuleAnalysis
from ddplint.analysis.names import dotted_name
from ddplint.analysis.questions import (
    loop_head,
    own_statements,
    per_rank_call,
    reached_by_several,
    statements_in,
)

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_TRIES = (ast.Try, ast.TryStar)


@dataclass(frozen=True)
class StepEvent:
    """A backward or a collective of a function: ``label`` names it (``loss.backward()``,
    ``all_reduce``), ``through`` the local function that runs it, if not run here."""

    node: Node
    call: ast.Call
    label: str
    backward: bool
    through: str | None = None


@dataclass(frozen=True)
class SwallowedException:
    """``handler`` catches an exception ``raised`` (a call on this rank's data in the
    ``try`` body) may raise, and its ways skip ``skipped``."""

    handler: ast.ExceptHandler
    raised: ast.AST
    skipped: StepEvent


def swallowed_exceptions(
    analysis: ModuleAnalysis, catches: Callable[[ast.ExceptHandler], bool]
) -> list[SwallowedException]:
    """Each handler ``catches`` selects that skips the step on the rank that raised."""
    found: list[SwallowedException] = []
    scopes = list(_scopes_with_handlers(analysis, catches))
    handed = handed_batches(analysis) if scopes else {}
    for scope in scopes:
        found.extend(_in_scope(analysis, scope, catches, handed.get(scope)))
    alone = analysis.single_process
    found = [f for f in found if not alone.holds(f.handler)]
    return sorted(found, key=lambda f: (f.handler.lineno, f.handler.col_offset))


def _scopes_with_handlers(
    analysis: ModuleAnalysis, catches: Callable[[ast.ExceptHandler], bool]
) -> Iterator[Scope]:
    for scope in (analysis.module, *analysis.nodes.functions()):
        if any(
            isinstance(statement, _TRIES) and any(catches(h) for h in statement.handlers)
            for statement in own_statements(scope)
        ):
            yield scope


def handed_batches(analysis: ModuleAnalysis) -> dict[Scope, frozenset[str]]:
    """The local functions a training loop's body calls with this rank's batch, and the
    parameters that receive it."""
    helpers = frozenset(analysis.backward_functions)
    handed: dict[Scope, set[str]] = {}
    for caller in (analysis.module, *analysis.nodes.functions()):
        loops = training_loops(caller, helpers)
        if not loops:
            continue
        function = analysis.function(caller)
        view = analysis.batch_view(caller)
        inside = {id(s) for loop in loops for s in statements_in(loop.body)}
        for node in function.graph.nodes:
            if node.statement is None or id(node.statement) not in inside:
                continue
            for call in own_calls(node.statement):
                callee = analysis.local_callee(dotted_name(call.func) or "", caller)
                if callee is None:
                    continue
                definition, positional = callee
                given = [*zip(positional, call.args, strict=False)]
                given += [(k.arg, k.value) for k in call.keywords if k.arg is not None]
                for parameter, value in given:
                    taint = view.taint(value, node)
                    if taint is not None and taint.source is Source.BATCH:
                        handed.setdefault(definition, set()).add(parameter)
    return {scope: frozenset(names) for scope, names in handed.items()}


def _in_scope(
    analysis: ModuleAnalysis,
    scope: Scope,
    catches: Callable[[ast.ExceptHandler], bool],
    handed: frozenset[str] | None,
) -> Iterator[SwallowedException]:
    function = analysis.function(scope)
    helpers = frozenset(analysis.backward_functions)
    loops = training_loops(scope, helpers)
    whole_step = step_method(scope, function.in_lightning_class) or handed is not None
    view = analysis.batch_view(scope, handed=handed or frozenset())
    events = list(step_events(analysis, function))
    nodes_of = {id(node.statement): node for node in function.graph.nodes if node.statement}
    for statement in own_statements(scope):
        if not isinstance(statement, _TRIES) or not events:
            continue
        in_loop = any(
            any(inner is statement for inner in statements_in(loop.body)) for loop in loops
        )
        if not in_loop and not whole_step:
            continue  # not the per-batch work
        body = [nodes_of[id(s)] for s in statements_in(statement.body) if id(s) in nodes_of]
        raised = per_rank_call(function, body, view)
        if raised is None:
            continue  # the body reads shared values: it raises on every rank or none
        start = raised[1]
        head = loop_head(scope, function, statement, nodes_of)
        for handler in statement.handlers:
            if not catches(handler) or _ends_loudly(handler):
                continue
            handled = [nodes_of[id(s)] for s in statements_in(handler.body) if id(s) in nodes_of]
            if not handled or any(node.index in function.effects for node in handled):
                continue  # no way on, or collectives of its own: pairing unknown
            several = reached_by_several(function, handled)
            if handled[0].index not in several:
                continue
            skipped = _skipped(events, start, handled[0], head)
            if skipped is not None:
                yield SwallowedException(handler, start.statement or statement, skipped)


def _ends_loudly(handler: ast.ExceptHandler) -> bool:
    """A handler whose own statements end the job on every way (``raise``,
    ``sys.exit(1)`` among its top-level statements): nothing is swallowed."""
    return any(ends_loudly(statement) for statement in handler.body)


def step_events(analysis: ModuleAnalysis, function: FunctionFacts) -> Iterator[StepEvent]:
    """The function's backward calls (its own, and its calls of local functions that
    run one) and collectives, node by node."""
    backward = analysis.backward_functions
    for node in function.graph.nodes:
        if node.statement is None:
            continue
        for call in own_calls(node.statement):
            label = analysis.backward_label(call)
            callee = dotted_name(call.func)
            if label is not None:
                yield StepEvent(node, call, label, True)
            elif callee is not None and callee in backward:
                yield StepEvent(node, call, backward[callee], True, callee)
        for collective, through in function.effects.get(node.index, []):
            if collective.name != "backward":  # the gradient all-reduce: its call above
                yield StepEvent(node, collective.call, collective.name, False, through)


def _skipped(events: list[StepEvent], start: Node, handler: Node, head: Node) -> StepEvent | None:
    """The event the handler's ways skip: one the ``try`` body's way from ``start``
    reaches before ``head`` (the next iteration, or the end of the step) and no way
    from the handler does; a backward before a collective (the gradient all-reduce is
    the one users know), else the first by line."""
    skipped = [
        event
        for event in events
        if not avoids(start, event.node, head) and avoids(handler, event.node, head)
    ]
    skipped.sort(key=lambda event: (not event.backward, event.call.lineno, event.call.col_offset))
    return skipped[0] if skipped else None
