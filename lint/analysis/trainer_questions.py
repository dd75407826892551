"""Questions about a Lightning ``Trainer`` used on some ranks only.

``log_dirs_on_some_ranks`` (DDP214): reads of ``trainer.log_dir``, a property that
broadcasts, that run on some ranks only (a rank test, a ``@rank_zero_only`` function).
``should_stop_on_some_ranks`` (DDP215): ``trainer.should_stop = ...`` set on some ranks
only: under a test whose answer differs between ranks (the rank, this rank's loss or
batch, a local probe) or to such a value, never shared, nor set again to a shared value
on every way out of its function. The trainer is known by what
made it (``trainers``), the guard by control dependence on the divergence
(``rank_guards``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ddplint.analysis.control_flow import Node, Scope
from ddplint.analysis.divergence import VALUES, Taint
from ddplint.analysis.dominance import avoids
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.rank_guards import RankGuard, guard_of, own_reads
from ddplint.analysis.trainers import LightningTrainers


@dataclass(frozen=True)
class OnSomeRanks:
    """``target`` (a read, or an assignment) runs on some ranks only because of
    ``guard``; or it stores ``value``, a value that differs between ranks."""

    target: ast.AST
    guard: RankGuard | None
    value: Taint | None = None


def log_dirs_on_some_ranks(analysis: ModuleAnalysis) -> list[OnSomeRanks]:
    """Each read of a trainer's ``log_dir`` that runs on some ranks only."""
    spelled = [a for a in analysis.nodes.of_type(ast.Attribute) if a.attr == "log_dir"]
    if not spelled:
        return []
    trainers = LightningTrainers(analysis)
    found: list[OnSomeRanks] = []
    for read, scope, node in own_reads(analysis, list(spelled)):
        assert isinstance(read, ast.Attribute)
        if not isinstance(read.ctx, ast.Load) or not trainers.holds(read.value, scope):
            continue
        guard = guard_of(analysis, scope, node, read)
        if guard is not None:
            found.append(OnSomeRanks(read, guard))
    return _in_order(found)


def should_stop_on_some_ranks(analysis: ModuleAnalysis) -> list[OnSomeRanks]:
    """Each ``trainer.should_stop = value`` (not ``False``) set on some ranks only."""
    stores = [
        assignment
        for assignment in analysis.nodes.of_type(ast.Assign)
        if any(_stop_flag(target) for target in assignment.targets)
        and not (isinstance(assignment.value, ast.Constant) and assignment.value.value is False)
    ]
    if not stores:
        return []
    trainers = LightningTrainers(analysis)
    found: list[tuple[OnSomeRanks, Scope, Node]] = []
    agreed: dict[tuple[int, str], set[int]] = {}
    for statement, scope, node in own_reads(analysis, list(stores)):
        assert isinstance(statement, ast.Assign)
        flags = [
            t
            for t in statement.targets
            if isinstance(t, ast.Attribute) and _stop_flag(t) and trainers.holds(t.value, scope)
        ]
        if not flags:
            continue
        view = analysis.batch_view(scope)
        guard = guard_of(analysis, scope, node, statement, lambda _: True, view)
        if guard is not None:
            found.append((OnSomeRanks(statement, guard), scope, node))
            continue
        value = view.taint(statement.value, node)
        value = value.only(VALUES) if value is not None else None  # its truth, not its device
        if value is not None:
            found.append((OnSomeRanks(statement, None, value), scope, node))
            continue
        for flag in flags:
            agreed.setdefault((id(scope), ast.unparse(flag)), set()).add(node.index)
    return _in_order(
        [
            store
            for store, scope, node in found
            if not _agreed_before_return(analysis, store.target, scope, node, agreed)
        ]
    )


def _agreed_before_return(
    analysis: ModuleAnalysis,
    store: ast.AST,
    scope: Scope,
    node: Node,
    agreed: dict[tuple[int, str], set[int]],
) -> bool:
    """Whether every way from ``store`` to the end of its function sets the same flag
    again, on every rank, to a value every rank shares (``trainer.should_stop =
    trainer.strategy.reduce_boolean_decision(trainer.should_stop, all=False)``): no
    rank leaves the function holding its own value."""
    assert isinstance(store, ast.Assign)
    later: set[int] = set()
    for target in store.targets:
        later |= agreed.get((id(scope), ast.unparse(target)), set())
    later.discard(node.index)
    if not later:
        return False
    graph = analysis.function(scope).graph
    return avoids(node, graph.exit, later)


def _stop_flag(target: ast.expr) -> bool:
    return isinstance(target, ast.Attribute) and target.attr == "should_stop"


def _in_order(found: list[OnSomeRanks]) -> list[OnSomeRanks]:
    return sorted(
        found, key=lambda f: (getattr(f.target, "lineno", 0), getattr(f.target, "col_offset", 0))
    )
