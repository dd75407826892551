"""Ways past a collective taken on a value that differs between ranks.

An *exit* is a ``return`` / ``continue`` / ``break`` under a condition that reads a
divergent value (``values.divergence``) and leaves before a collective or ``backward()``
that the other ranks still run: ``continue`` skips the rest of the loop body, ``break``
the loop body of later iterations, ``return`` the rest of the function (and of the loop
it sits in). A *guarded* call is a collective, or a call that reaches one, itself under
such a condition. Conditions on the rank itself are DDP201's (``rank_reachability``), and
a statement that already runs on some ranks only is left to it too. The exiting branch
that issues a collective of its own is not reported (the ranks may stay in step).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from enum import Enum

import libcst as cst

from ddplint.code.collectives.call_reach import SYNCING, CallReach, Reached, StepEvent
from ddplint.code.ranks.rank_reachability import RankReachability
from ddplint.code.syntax.conditions import Guard, guarding_conditions
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.values.divergence import Divergence, Divergent, Source

_EXITS = (cst.Continue, cst.Break, cst.Return)
_LOOPS = (cst.For, cst.While)


class ExitKind(str, Enum):
    EXIT = "exit"  # continue / break / return on a divergent condition
    GUARDED = "guarded"  # the collective itself under a divergent condition


@dataclass(frozen=True)
class DivergentExit:
    """``statement`` (the exit or the guarded call) is taken where ``guard.test`` holds,
    a value that differs between ranks for ``divergent``'s reason; ``skipped`` is the
    collective (or backward) the ranks that take it miss."""

    kind: ExitKind
    statement: cst.CSTNode
    guard: Guard
    divergent: Divergent
    skipped: Reached


class DivergentExits:
    """Finds the divergent exits and guarded collectives of one module."""

    def __init__(
        self,
        index: ModuleIndex,
        call_reach: CallReach,
        divergence: Divergence,
        reachability: RankReachability,
    ) -> None:
        self._index = index
        self._reach = call_reach
        self._divergence = divergence
        self._reachability = reachability
        self._found: dict[frozenset[Source], list[DivergentExit]] = {}

    def find(self, sources: Collection[Source]) -> list[DivergentExit]:
        """Exits and guarded calls whose condition diverges for one of ``sources``."""
        key = frozenset(sources)
        if key not in self._found:
            found = [*self._exits(key), *self._guarded_calls(key)]
            self._found[key] = sorted(found, key=lambda e: self._index.order[e.statement])
        return self._found[key]

    def _exits(self, sources: frozenset[Source]) -> list[DivergentExit]:
        found = []
        exits = [n for kind in _EXITS for n in self._index.nodes(kind)]
        for node in exits:
            if self._in_handler(node) or self._reachability.guard_of(node) is not None:
                continue
            loop = self._enclosing_loop(node)
            if isinstance(node, (cst.Continue, cst.Break)) and loop is None:
                continue
            stop: cst.CSTNode | None = loop if not isinstance(node, cst.Return) else None
            match = self._divergent_guard(node, stop, sources)
            if match is None:
                continue
            guard, divergent = match
            if self._branch_issues_collective(guard, node):
                continue
            skipped = self._skipped(node, loop)
            if skipped is not None:
                found.append(DivergentExit(ExitKind.EXIT, node, guard, divergent, skipped))
        return found

    def _guarded_calls(self, sources: frozenset[Source]) -> list[DivergentExit]:
        found = []
        seen: set[cst.CSTNode] = set()
        for call in self._index.nodes(cst.Call):
            reached = self._reach.reached(call, {StepEvent.COLLECTIVE})
            if reached is None or self._reachability.guard_of(call) is not None:
                continue
            match = self._divergent_guard(call, None, sources)
            if match is None or match[0].owner in seen:
                continue
            guard, divergent = match
            if self._other_arm_issues_collective(guard):
                continue
            seen.add(guard.owner)
            found.append(DivergentExit(ExitKind.GUARDED, call, guard, divergent, reached))
        return found

    def _divergent_guard(
        self, node: cst.CSTNode, stop: cst.CSTNode | None, sources: frozenset[Source]
    ) -> tuple[Guard, Divergent] | None:
        for guard in guarding_conditions(self._index, node, stop):
            divergent = self._divergence.source_of(guard.test)
            if divergent is not None and divergent.source in sources:
                return guard, divergent
        return None

    def _skipped(self, node: cst.CSTNode, loop: cst.For | cst.While | None) -> Reached | None:
        """What the exit skips: later in the loop body for ``continue``, the loop body
        of later iterations for ``break``, the rest of the function (and loop) for
        ``return``."""
        if isinstance(node, cst.Continue):
            assert loop is not None
            return self._reach.first_in(loop.body, SYNCING, after=node)
        if isinstance(node, cst.Break):
            assert loop is not None
            return self._reach.first_in(loop.body, SYNCING)
        function = self._index.enclosing_function(node)
        root = function.body if function is not None else self._index.module
        later = self._reach.first_in(root, SYNCING, after=node)
        if later is None and loop is not None:
            return self._reach.first_in(loop.body, SYNCING)
        return later

    def _enclosing_loop(self, node: cst.CSTNode) -> cst.For | cst.While | None:
        for ancestor in self._index.ancestors(node):
            if isinstance(ancestor, _LOOPS):
                return ancestor
            if isinstance(ancestor, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return None
        return None

    def _in_handler(self, node: cst.CSTNode) -> bool:
        for ancestor in self._index.ancestors(node):
            if isinstance(ancestor, cst.ExceptHandler):
                return True
            if isinstance(ancestor, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return False
        return False

    def _branch_issues_collective(self, guard: Guard, exit_node: cst.CSTNode) -> bool:
        """The branch that exits reaches a collective before leaving (``if not stats:
        all_gather_object(out, None); return``): the ranks may stay in step."""
        owner = guard.owner
        if not isinstance(owner, (cst.If, cst.While)):
            return False
        branch = owner.orelse if guard.negated and isinstance(owner, cst.If) else owner.body
        if branch is None or not self._index.is_inside(exit_node, branch):
            return False
        order = self._index.order
        return any(
            isinstance(node, cst.Call)
            and order[node] < order[exit_node]
            and self._reach.reached(node, {StepEvent.COLLECTIVE}) is not None
            for node in self._index.walk_within(branch)
        )

    def _other_arm_issues_collective(self, guard: Guard) -> bool:
        """The ranks that do not take the guarded branch issue a collective too: in the
        other arm, or after the ``if`` when the guarded branch leaves the function (``if
        not stats: all_gather_object(out, None); return`` ... ``all_gather_object``)."""
        owner = guard.owner
        if not isinstance(owner, cst.If):
            return False
        other = owner.body if guard.negated else owner.orelse
        if other is not None and self._reach.first_in(other, {StepEvent.COLLECTIVE}):
            return True
        branch = owner.orelse if guard.negated else owner.body
        leaves = branch is not None and any(
            isinstance(node, cst.Return) for node in self._index.walk_within(branch)
        )
        function = self._index.enclosing_function(owner)
        if not leaves or function is None:
            return False
        return self._reach.first_in(function.body, {StepEvent.COLLECTIVE}, after=owner) is not None
