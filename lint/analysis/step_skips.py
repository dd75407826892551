"""Rank-local skips of a training step decided on this rank's data (DDP204).

In the per-batch work (a training loop, ``batches``; a LightningModule's step method; a
local function a training loop hands its batch to) a test whose decision reads this
rank's batch, loss or model output (the batch view of the divergence) skips a backward
or a collective on some ranks only when:

- the backward or collective is control-dependent on it and stands in one of its arms
  (``if torch.isfinite(loss): loss.backward()``; also after the loop, on a flag its
  batches set: ``if not need_break: evaluate()``): reported at the call;
- a ``continue`` / ``break`` / ``return`` it decides comes before one
  (``if torch.isnan(loss): continue``): reported at the exit, or at the test where the
  skipped call stands in its arm and another test, every rank's alike, decides the
  exit (``if shape_ok: if resumed: continue ... backward()``);
- an ``except`` handler of a step failure (out of memory, ``RuntimeError``, a bare
  ``except``) swallows a ``try`` body's failure on this rank's data
  (``caught_exceptions``).

A counter is no data: a loop's turn number, an ``enumerate`` index, a ``range`` wrapped
in a progress bar on some ranks and the entries of a mapping are the same on every rank
in the same turn (``batches``). A value made the same by a collective, a way only a
single-process job takes, and a lossless return of an automatically optimised
``training_step`` (DDP205's) are left out.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ddplint.analysis.batches import step_method, training_loops
from ddplint.analysis.caught_exceptions import (
    StepEvent,
    handed_batches,
    step_events,
    swallowed_exceptions,
)
from ddplint.analysis.control_flow import Node, NodeKind, Scope
from ddplint.analysis.divergence import Divergence, Source
from ddplint.analysis.effects import own_calls
from ddplint.analysis.functions import FunctionFacts, ModuleAnalysis
from ddplint.analysis.names import dotted_name
from ddplint.analysis.questions import statements_in
from ddplint.analysis.step_returns import lossless_step_returns

_EXITS = (ast.Continue, ast.Break, ast.Return)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
#: How many tests a value decided under a test is followed back through.
_FOLLOWED_TESTS = 3
#: Reasons a decision is this rank's own data.
_DATA = frozenset({Source.BATCH, Source.OUTPUT})


@dataclass(frozen=True)
class DataSkip:
    """A way past ``skipped`` that some ranks take on their own data. ``at``: where it
    is reported (the exit, the guarded call, the test, or the handler's exception);
    ``test`` / ``negated``: the deciding test and whether its false arm skips;
    ``handler``: the handler that swallows a failure."""

    at: ast.AST
    skipped: StepEvent
    test: ast.expr | None = None
    negated: bool = False
    exit: bool = False
    handler: ast.ExceptHandler | None = None


def data_dependent_skips(
    analysis: ModuleAnalysis, catches: Callable[[ast.ExceptHandler], bool]
) -> list[DataSkip]:
    """Every skip of a backward or collective decided on this rank's data; ``catches``
    selects the handlers that count (the step failures)."""
    found: list[DataSkip] = []
    handed = handed_batches(analysis)
    lossless = {id(step.path.node) for step in lossless_step_returns(analysis)}
    for scope in (analysis.module, *analysis.nodes.functions()):
        found.extend(_in_scope(analysis, scope, handed.get(scope), lossless))
    for swallowed in swallowed_exceptions(analysis, catches):
        handler = swallowed.handler
        at: ast.AST = handler.type if handler.type is not None else handler
        found.append(DataSkip(at, swallowed.skipped, handler=handler))
    alone = analysis.single_process
    found = [
        skip
        for skip in found
        if not alone.holds(_statement_of(skip))
        and not (skip.handler is not None and alone.swallows_alone(skip.handler))
    ]
    return sorted(found, key=lambda s: (getattr(s.at, "lineno", 0), getattr(s.at, "col_offset", 0)))


def _statement_of(skip: DataSkip) -> ast.AST:
    return skip.handler if skip.handler is not None else skip.at


def _in_scope(
    analysis: ModuleAnalysis,
    scope: Scope,
    handed: frozenset[str] | None,
    lossless: set[int],
) -> Iterator[DataSkip]:
    helpers = frozenset(analysis.backward_functions)
    loops = training_loops(scope, helpers)
    function = analysis.function(scope)
    whole = step_method(scope, function.in_lightning_class) or handed is not None
    if not loops and not whole:
        return
    events = sorted(
        step_events(analysis, function),
        key=lambda e: (call_site(e).lineno, call_site(e).col_offset),
    )
    if not events:
        return
    view = analysis.batch_view(scope, handed=handed or frozenset())
    in_loops = {id(s) for loop in loops for s in statements_in(loop.body)}
    everywhere = {id(s) for s in statements_in(_body(scope))}
    inside = everywhere if whole else in_loops
    per_batch = [
        node
        for node in function.graph.nodes
        if node.statement is not None and id(node.statement) in inside
    ]
    guarded: dict[int, DataSkip] = {}
    for event in events:
        # After a training loop too: a flag its batches set decides a later collective.
        test = _nearest_data_test(function, view, event.node, everywhere)
        if test is None or test.index in guarded:
            continue
        site = call_site(event)
        if _in_arms(site, test) and not _paired(events, event, test):
            guarded[test.index] = DataSkip(site, event, _test_of(test), _negated_arm(site, test))
    yield from guarded.values()
    seen_tests: set[int] = set(guarded)
    for node in per_batch:
        statement = node.statement
        if not isinstance(statement, _EXITS) or node.kind is not NodeKind.STATEMENT:
            continue
        if id(statement) in lossless or not _leaves_per_batch(scope, statement, loops, whole):
            continue
        test = _enclosing_data_test(function, view, statement, inside)
        if test is None:
            continue
        skipped = _skipped_after(events, statement, _region_of(scope, statement, loops))
        if skipped is None:
            continue
        if _in_arms(call_site(skipped), test):
            if test.index not in seen_tests:
                seen_tests.add(test.index)
                yield DataSkip(_test_of(test), skipped, _test_of(test))
            continue
        yield DataSkip(statement, skipped, _test_of(test), _negated_arm(statement, test), exit=True)


def call_site(event: StepEvent) -> ast.Call:
    """The call of this function that runs the event: the event's own call, or the
    call of the local function (``run_eval(...)``) that runs it."""
    if event.through is None or event.node.statement is None:
        return event.call
    for call in own_calls(event.node.statement):
        if dotted_name(call.func) == event.through:
            return call
    return event.call


def _paired(events: list[StepEvent], event: StepEvent, test: Node) -> bool:
    """Whether the test's other arm runs the same backward or collective
    (``if captions: model(x, captions) else: model(x)``): every rank runs it."""
    negated = _negated_arm(call_site(event), test)
    return any(
        other.label == event.label
        and _in_arms(call_site(other), test)
        and _negated_arm(call_site(other), test) != negated
        for other in events
    )


def _body(scope: Scope) -> list[ast.stmt]:
    body = getattr(scope, "body", [])
    return body if isinstance(body, list) else []


def _nearest_data_test(
    function: FunctionFacts, view: Divergence, node: Node, inside: set[int]
) -> Node | None:
    """The nearest ``if`` deciding ``node``, in the per-batch work, whose decision reads
    this rank's data (a ``while`` test decides a trip count: DDP219's question)."""
    for dependence in function.dominance.all_dependences(node):
        test = dependence.test
        statement = test.statement
        if test.kind is not NodeKind.TEST or not isinstance(statement, ast.If):
            continue
        if id(statement) not in inside:
            continue
        if _reads_data(function, view, test):
            return test
    return None


def _enclosing_data_test(
    function: FunctionFacts, view: Divergence, statement: ast.stmt, inside: set[int]
) -> Node | None:
    """The innermost ``if`` around an exit, in the per-batch work, whose
    decision reads this rank's data (the exit's own test: control dependence gives
    none where the exit is the loop's only way out, ``while True: ... break``)."""
    around = [
        node
        for node in function.graph.nodes
        if node.kind is NodeKind.TEST
        and isinstance(node.statement, ast.If)
        and id(node.statement) in inside
        and _in_arms(statement, node)
    ]
    for test in sorted(around, key=lambda n: n.line, reverse=True):
        if _reads_data(function, view, test):
            return test
    return None


def _reads_data(function: FunctionFacts, view: Divergence, test: Node) -> bool:
    """Whether this rank's data decides ``test`` (a rank test is DDP201's, DDP219's)."""
    taint = view.test_taint(test)
    if taint is None:
        return False
    return taint.source in _DATA or not _reads_rank(function, test, _FOLLOWED_TESTS)


def _reads_rank(function: FunctionFacts, test: Node, depth: int) -> bool:
    """Whether the plain divergence finds ``test`` rank-dependent for a reason other
    than this rank's data: a value set under a test counts by that test's reason."""
    taint = function.divergence.test_taint(test)
    if taint is None or taint.source in _DATA:
        return False
    if taint.source is not Source.DECIDED:
        return True
    deciding = [
        node
        for node in function.graph.nodes
        if node.kind is NodeKind.TEST and node.line == taint.line and node.index != test.index
    ]
    if depth <= 0 or not deciding:
        return True
    return any(_reads_rank(function, node, depth - 1) for node in deciding)


def _test_of(test: Node) -> ast.expr:
    statement = test.statement
    assert isinstance(statement, ast.If)
    return statement.test


def _in_arms(node: ast.AST, test: Node) -> bool:
    """Whether ``node`` stands in the body or ``else`` of the test's statement."""
    statement = test.statement
    assert isinstance(statement, ast.If)
    return any(
        inner is node for part in (*statement.body, *statement.orelse) for inner in ast.walk(part)
    )


def _negated_arm(node: ast.AST, test: Node) -> bool:
    """Whether ``node`` stands in the ``else`` of the test (it runs unless it holds)."""
    statement = test.statement
    assert isinstance(statement, ast.If)
    return any(inner is node for part in statement.orelse for inner in ast.walk(part))


def _leaves_per_batch(
    scope: Scope, statement: ast.stmt, loops: list[ast.For | ast.AsyncFor | ast.While], whole: bool
) -> bool:
    """A ``continue`` / ``break`` of a training loop (not of a loop inside one), or a
    ``return`` in a training loop or a step method."""
    if isinstance(statement, ast.Return):
        return whole or _innermost_loop(scope, statement) is not None
    loop = _innermost_loop(scope, statement)
    return loop is not None and any(loop is training for training in loops)


def _innermost_loop(scope: Scope, statement: ast.stmt) -> ast.stmt | None:
    found: ast.stmt | None = None
    for candidate in statements_in(_body(scope)):
        if isinstance(candidate, _LOOPS) and any(
            inner is statement for part in candidate.body for inner in statements_in([part])
        ):
            found = candidate  # later candidates are nested deeper
    return found


def _region_of(
    scope: Scope, statement: ast.stmt, loops: list[ast.For | ast.AsyncFor | ast.While]
) -> list[ast.stmt]:
    """The statements whose later calls an exit skips: its loop's body, or the
    function's for a ``return``."""
    if isinstance(statement, (ast.Continue, ast.Break)):
        loop = _innermost_loop(scope, statement)
        assert loop is not None and isinstance(loop, _LOOPS)
        return loop.body
    return _body(scope)


def _skipped_after(
    events: list[StepEvent], statement: ast.stmt, region: list[ast.stmt]
) -> StepEvent | None:
    """The event an exit skips: the first backward after it in its region (the
    gradient all-reduce is the one users know), else the first collective."""
    within = {id(inner) for part in region for inner in ast.walk(part)}
    after = [
        event
        for event in events
        if id(call_site(event)) in within
        and (call_site(event).lineno, call_site(event).col_offset)
        > (statement.lineno, statement.col_offset)
    ]
    backward = [event for event in after if event.backward]
    chosen = backward or after
    return chosen[0] if chosen else None
