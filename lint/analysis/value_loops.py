"""Collectives counted by the values in this rank's batch: a question to the core (DDP217).

``collectives_per_batch_value(analysis)``: a collective issued in a loop over the values
a batch holds (``for c in y.unique():``, ``for lang in set(batch["lang"]):``), and a
``self.log_dict(..., sync_dist=True)`` of a dictionary whose keys come from such a loop
or comprehension. What a loop walks is asked of the batch view of the divergence
(``ModuleAnalysis.batch_view``): a value selection (``VALUE_SELECTIONS``) of this rank's
batch, model output, share of a collective or a value set on some ranks. One finding
per loop.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from ddplint.analysis.control_flow import Node, Scope, own_nodes
from ddplint.analysis.divergence import Divergence, Source
from ddplint.analysis.forms import VALUE_SELECTIONS
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.names import dotted_name

#: Reasons the values a batch holds differ between ranks.
_PER_RANK = frozenset({Source.BATCH, Source.OUTPUT, Source.CONTRIBUTED, Source.DECIDED})
_LOOPS = (ast.For, ast.AsyncFor)
_COMPREHENSIONS = (ast.DictComp, ast.ListComp, ast.GeneratorExp)
#: Collectives that reduce each key of what they are given with one all-reduce.
_LOGS = ("self.log(sync_dist=True)", "self.log_dict(sync_dist=True)")


@dataclass(frozen=True)
class ValueLoop:
    """``call`` runs once per value of ``iterable`` (``inside`` the loop), or reduces one
    key per value (the dictionary it logs is filled by the loop)."""

    call: ast.Call
    loop: ast.AST
    iterable: ast.expr
    inside: bool


def collectives_per_batch_value(analysis: ModuleAnalysis) -> list[ValueLoop]:
    """Each loop over this rank's batch values that repeats a collective, at its first."""
    found: list[ValueLoop] = []
    reported: set[int] = set()
    for scope in analysis.scopes_with_collectives():
        facts = analysis.function(scope)
        direct = [
            (node, collective)
            for node in facts.graph.nodes
            for collective, through in facts.effects.get(node.index, [])
            if through is None
        ]
        if not direct:
            continue
        loops = [n for n in own_nodes(scope) if isinstance(n, _LOOPS)]
        if not loops and not any(c.name in _LOGS for _, c in direct):
            continue  # nothing repeats a collective here
        view = analysis.batch_view(scope)
        for node, collective in sorted(direct, key=lambda pair: _position(pair[1].call)):
            found_loop = _value_loop(analysis, scope, view, loops, node, collective.call)
            if found_loop is None and collective.name in _LOGS and collective.call.args:
                found_loop = _logged_loop(analysis, scope, view, loops, node, collective.call)
            if found_loop is not None and id(found_loop.loop) not in reported:
                reported.add(id(found_loop.loop))
                found.append(found_loop)
    return sorted(found, key=lambda loop: _position(loop.call))


def _position(node: ast.AST) -> tuple[int, int]:
    return getattr(node, "lineno", 0), getattr(node, "col_offset", 0)


def _value_loop(
    analysis: ModuleAnalysis,
    scope: Scope,
    view: Divergence,
    loops: list[ast.For | ast.AsyncFor],
    node: Node,
    call: ast.Call,
) -> ValueLoop | None:
    """The innermost loop around ``call`` that walks this rank's batch values."""
    around = [loop for loop in loops if _holds(loop.body, call)]
    for loop in sorted(around, key=_position, reverse=True):
        if _selects_values(analysis, scope, view, loop.iter, loop):
            return ValueLoop(call, loop, loop.iter, True)
    return None


def _logged_loop(
    analysis: ModuleAnalysis,
    scope: Scope,
    view: Divergence,
    loops: list[ast.For | ast.AsyncFor],
    node: Node,
    call: ast.Call,
) -> ValueLoop | None:
    """The comprehension or earlier loop that gives a logged dictionary its keys."""
    logged = call.args[0]
    if isinstance(logged, _COMPREHENSIONS):
        for clause in logged.generators:
            if _selects_values(analysis, scope, view, clause.iter, node.statement):
                return ValueLoop(call, logged, clause.iter, False)
        return None
    if not isinstance(logged, ast.Name):
        return None
    for loop in loops:
        if (
            _position(loop) < _position(call)
            and _fills(loop, logged.id)
            and _selects_values(analysis, scope, view, loop.iter, loop)
        ):
            return ValueLoop(call, loop, loop.iter, False)
    return None


def _fills(loop: ast.For | ast.AsyncFor, name: str) -> bool:
    """Whether the loop's body sets ``name[key] = ...``."""
    return any(
        isinstance(node, ast.Assign)
        and any(
            isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == name
            for t in node.targets
        )
        for statement in loop.body
        for node in (statement, *own_nodes(statement))
    )


def _selects_values(
    analysis: ModuleAnalysis,
    scope: Scope,
    view: Divergence,
    iterable: ast.expr,
    where: ast.AST | None,
) -> bool:
    """``labels.unique()``, ``set(batch["lang"])``, ``y.tolist()`` of this rank's batch,
    read where the statement ``where`` starts."""
    nodes = analysis.function(scope).graph.nodes_of(where) if where is not None else []
    if not nodes:
        return False
    for selection in _selections(iterable):
        taint = view.taint(selection, nodes[0])
        if taint is not None and taint.source in _PER_RANK:
            return True
    return False


def _selections(iterable: ast.expr) -> Iterator[ast.Call]:
    for node in ast.walk(iterable):
        if isinstance(node, ast.Call):
            name = (dotted_name(node.func) or "").rsplit(".", 1)[-1]
            if name in VALUE_SELECTIONS:
                yield node


def _holds(body: list[ast.stmt], call: ast.Call) -> bool:
    return any(node is call for statement in body for node in ast.walk(statement))
