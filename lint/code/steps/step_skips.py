"""Rank-local skips of a training step: the facts behind DDP204 (and DDP208's exits).

In a training loop or a ``training_step``, a skip is a ``continue`` / ``break`` /
``return`` whose condition reads this rank's batch or loss (``torch.isnan(loss)``,
``loss.item() > x``, ``batch is None``) placed before ``backward()`` or a collective; a
``backward()`` or collective itself under such a condition; or an exception handler
(``except RuntimeError`` / ``OutOfMemoryError``) that swallows the failure of a step. The
skipping rank misses the call while its peers make it. A skip decided collectively (the
condition went through ``all_reduce``/``broadcast`` first) or on a value every rank
shares (``batch_idx < start_step``, the epoch) is not rank-local and is not reported.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from enum import Enum

import libcst as cst

from ddplint.analysis.api import STEP_FAILURES
from ddplint.code.collectives.call_reach import SYNCING, CallReach, Reached, StepEvent
from ddplint.code.ranks.one_process import OneProcessPaths
from ddplint.code.steps.lossless_returns import is_constant_tensor, is_none_return
from ddplint.code.steps.training_steps import TrainingSteps
from ddplint.code.syntax.conditions import Guard, guarding_conditions
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import ImportTable, dotted_name
from ddplint.code.values.data_dependence import DataDependence, bound_names, value_names_read

_EXITS = (cst.Continue, cst.Break, cst.Return)


class SkipKind(str, Enum):
    EXIT = "exit"  # continue / break / return under a rank-local condition
    GUARDED = "guarded"  # the backward or collective itself under a rank-local condition
    HANDLER = "handler"  # a swallowed failure


@dataclass(frozen=True)
class StepSkip:
    """A rank-local way past ``skipped`` in a training step; ``statement`` is what to
    point at (the exit, the guarded call, or the handler's exception type).

    ``guard`` is the rank-local condition; ``handler`` the exception handler for a
    swallowed failure.
    """

    kind: SkipKind
    statement: cst.CSTNode
    skipped: Reached
    guard: Guard | None = None
    handler: cst.ExceptHandler | None = None


class StepSkips:
    """Finds the rank-local skips of one module."""

    def __init__(
        self,
        index: ModuleIndex,
        names: ImportTable,
        call_reach: CallReach,
        training_steps: TrainingSteps,
        data: DataDependence,
        one_process: OneProcessPaths | None = None,
    ) -> None:
        self._one_process = one_process
        self._index = index
        self._names = names
        self._reach = call_reach
        self._steps = training_steps
        self._data = data
        self._found: dict[frozenset[StepEvent], list[StepSkip]] = {}

    def find(self, kinds: Collection[StepEvent] = SYNCING) -> list[StepSkip]:
        """Every rank-local skip that misses a later event of ``kinds`` (by default a
        backward or a collective). Guarded calls and swallowed failures are looked for
        with the default."""
        key = frozenset(kinds)
        if key not in self._found:
            self._found[key] = self._find(key)
        return self._found[key]

    def _find(self, kinds: frozenset[StepEvent]) -> list[StepSkip]:
        found: list[StepSkip] = []
        exits = [n for t in _EXITS for n in self._index.nodes(t)]
        for node in sorted(exits, key=self._index.order.__getitem__):
            skip = self._conditional_skip(node, kinds)
            if skip is not None:
                found.append(skip)
        if kinds == SYNCING:
            found.extend(self._guarded_events())
            for try_node in try_statements(self._index):
                found.extend(self._swallowed_failures(try_node))
        found = [skip for skip in found if not self._alone(skip)]
        return sorted(_one_per_condition(found), key=lambda s: self._index.order[s.statement])

    def _alone(self, skip: StepSkip) -> bool:
        """The skip happens only in a single-process job: no peer waits for it."""
        if self._one_process is None:
            return False
        if skip.handler is not None:
            return self._one_process.swallows_alone(skip.handler)
        return self._one_process.holds(skip.statement)

    def _guarded_events(self) -> list[StepSkip]:
        """Backward or collective calls in a training step under a rank-local condition
        (one per condition: the first call it guards)."""
        found: list[StepSkip] = []
        seen: set[cst.CSTNode] = set()
        for call in self._index.nodes(cst.Call):
            owner = self._step_owner(call)
            if owner is None:
                continue
            reached = self._reach.reached(call)
            if reached is None:
                continue
            guard = self._rank_local_guard(call, owner)
            if guard is None or guard.owner in seen:
                continue
            seen.add(guard.owner)
            found.append(StepSkip(SkipKind.GUARDED, call, reached, guard=guard))
        return found

    def _step_owner(self, node: cst.CSTNode) -> cst.For | cst.While | cst.FunctionDef | None:
        """The innermost training loop, or else the ``training_step``, holding ``node``."""
        loop = self._steps.training_loop_of(node)
        if loop is not None:
            return loop
        function = self._index.enclosing_function(node)
        return function if self._steps.is_training_step(function) else None

    def _rank_local_guard(self, node: cst.CSTNode, stop: cst.CSTNode | None) -> Guard | None:
        """The innermost condition (below ``stop``) on ``node`` that reads this rank's
        batch or loss."""
        return next(
            (
                g
                for g in guarding_conditions(self._index, node, stop)
                if self._data.is_data_dependent(g.test)
            ),
            None,
        )

    def _region(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The body whose later backward/collective calls the exit ``node`` skips: the
        loop it leaves, or for ``return`` its function; None outside a training step."""
        if isinstance(node, (cst.Continue, cst.Break)):
            loop = self._steps.loop_of(node)
            if loop is None or not self._steps.is_training_loop(loop):
                return None
            return loop.body
        function = self._index.enclosing_function(node)
        if function is None or self._step_owner(node) is None:
            return None
        return function.body

    def is_left_to_ddp205(self, node: cst.CSTNode) -> bool:
        """A ``return None`` or constant-tensor return from an automatically optimised
        ``training_step``: Lightning fails on that rank (DDP205 reports it)."""
        if not isinstance(node, cst.Return):
            return False
        lossless = is_none_return(node) or (
            node.value is not None and is_constant_tensor(node.value, self._names)
        )
        function = self._index.enclosing_function(node)
        return (
            lossless
            and function is not None
            and self._steps.is_training_step(function)
            and self._steps.training_loop_of(node) is None
            and not self._steps.uses_manual_optimization(function)
        )

    def _conditional_skip(self, node: cst.CSTNode, kinds: Collection[StepEvent]) -> StepSkip | None:
        """An exit under a rank-local condition before a skipped event. When that
        condition also holds the event (``if shape_ok: if resumed: continue ...
        backward()``), the exit is decided by what sits between (here the uniform resume
        test) and the per-rank skip is the condition itself: it is reported there."""
        region = self._region(node)
        if region is None or self._in_handler(node, region) or self.is_left_to_ddp205(node):
            return None
        guard = self._rank_local_guard(node, self._index.parent.get(region))
        if guard is None:
            return None
        skipped = self._first_after(region, kinds, node)
        if skipped is None:
            return None
        if not skipped.chain and self._index.is_inside(skipped.target, _arm(guard)):
            return StepSkip(SkipKind.GUARDED, guard.test, skipped, guard=guard)
        return StepSkip(SkipKind.EXIT, node, skipped, guard=guard)

    def _first_after(
        self, region: cst.CSTNode, kinds: Collection[StepEvent], node: cst.CSTNode | None
    ) -> Reached | None:
        """The event skipped: a later backward when there is one (the gradient
        all-reduce is what users know), else the first later event of ``kinds``."""
        if StepEvent.BACKWARD in kinds:
            backward = self._reach.first_in(region, {StepEvent.BACKWARD}, after=node)
            if backward is not None:
                return backward
        return self._reach.first_in(region, kinds, after=node)

    def _in_handler(self, node: cst.CSTNode, region: cst.CSTNode) -> bool:
        for ancestor in self._index.ancestors(node):
            if ancestor is region:
                return False
            if isinstance(ancestor, cst.ExceptHandler):
                return True
        return False

    def _swallowed_failures(self, try_node: cst.Try | cst.TryStar) -> list[StepSkip]:
        owner = self._step_owner(try_node)
        if owner is None:
            return []
        region = owner.body
        found = []
        for handler in try_node.handlers:
            if not isinstance(handler, cst.ExceptHandler):
                continue
            if not _catches_step_failure(handler) or _always_raises(handler):
                continue
            exit_node = self._exit_in(handler)
            if exit_node is None and self._agreed_after(try_node, handler):
                continue
            skipped = self._first_after(try_node.body, SYNCING, None)
            if skipped is None and exit_node is not None:
                skipped = self._first_after(region, SYNCING, try_node)
            if skipped is None:
                continue
            where = handler.type or exit_node or _first_statement(handler.body)
            found.append(StepSkip(SkipKind.HANDLER, where, skipped, handler=handler))
        return found

    def _agreed_after(self, try_node: cst.Try | cst.TryStar, handler: cst.ExceptHandler) -> bool:
        """The handler only records the failure in a flag, and right after the ``try``
        the first collective every rank runs carries that flag (``all_reduce(flag,
        MAX)``): the ranks then decide the skip together."""
        derived = {
            name
            for node in self._index.walk_within(handler.body)
            if isinstance(node, cst.Assign)
            for target in node.targets
            for name in bound_names(target.target)
        }
        block = self._index.parent.get(try_node)
        statements = list(getattr(block, "body", ()))
        if not derived or try_node not in statements:
            return False
        for statement in statements[statements.index(try_node) + 1 :]:
            for node in (statement, *self._index.walk_within(statement)):
                if isinstance(node, cst.Assign) and _reads_any(node.value, derived):
                    for target in node.targets:
                        derived.update(bound_names(target.target))
                elif isinstance(node, cst.Call) and self._data.is_synchronising(node):
                    return any(_reads_any(arg.value, derived) for arg in node.args)
        return False

    def _exit_in(self, handler: cst.ExceptHandler) -> cst.CSTNode | None:
        for node in self._index.walk_within(handler.body):
            if isinstance(node, _EXITS):
                return node
        return None


def _arm(guard: Guard) -> cst.CSTNode:
    """The part of the guard's statement that runs under it (``else`` when negated)."""
    owner = guard.owner
    if guard.negated and isinstance(owner, (cst.If, cst.IfExp)) and owner.orelse is not None:
        return owner.orelse
    return owner.body


def _one_per_condition(skips: list[StepSkip]) -> list[StepSkip]:
    """Guarded skips reported once per condition: the guarded call when it is seen,
    else the condition (several exits under it)."""
    guarded_calls = {
        s.guard.owner
        for s in skips
        if s.kind is SkipKind.GUARDED and s.guard is not None and s.statement is not s.guard.test
    }
    kept: list[StepSkip] = []
    seen: set[cst.CSTNode] = set()
    for skip in skips:
        if skip.guard is not None and skip.statement is skip.guard.test:
            if skip.guard.owner in guarded_calls or skip.guard.owner in seen:
                continue
            seen.add(skip.guard.owner)
        kept.append(skip)
    return kept


def _reads_any(expr: cst.CSTNode, names: Collection[str]) -> bool:
    return any(n.value in names for n in value_names_read(expr, rank_view=True))


def try_statements(index: ModuleIndex) -> list[cst.Try | cst.TryStar]:
    """Every ``try`` statement, ``except*`` ones included."""
    tries: list[cst.Try | cst.TryStar] = [*index.nodes(cst.Try), *index.nodes(cst.TryStar)]
    return tries


def _catches_step_failure(handler: cst.ExceptHandler) -> bool:
    caught = handler.type
    if caught is None:
        return True
    elements = [e.value for e in caught.elements] if isinstance(caught, cst.Tuple) else [caught]
    return any((dotted_name(e) or "").rsplit(".", 1)[-1] in STEP_FAILURES for e in elements)


def _always_raises(handler: cst.ExceptHandler) -> bool:
    """A top-level ``raise`` in the handler: the failure is not swallowed."""
    body = handler.body
    statements = body.body if isinstance(body, cst.IndentedBlock) else (body,)
    for statement in statements:
        small = statement.body if isinstance(statement, cst.SimpleStatementLine) else ()
        if isinstance(statement, cst.SimpleStatementSuite):
            small = statement.body
        if any(isinstance(s, cst.Raise) for s in small):
            return True
    return False


def _first_statement(block: cst.BaseSuite) -> cst.CSTNode:
    if isinstance(block, cst.IndentedBlock) and block.body:
        return block.body[0]
    return block
