"""A skip decided by one rank's data: a question to the analysis core (DDP216).

``skips_decided_by_one_rank(analysis)``: in a training loop (``batches``) or a
LightningModule's step method, a ``broadcast`` / ``broadcast_object_list`` of a flag
computed from this rank's batch, loss or model output (the batch view of the
divergence), whose value then decides a ``continue`` / ``break`` / ``return`` after it
(control dependence on a test that reads the flag). The ranks stay in step, but only the
source rank's data decides. A flag reduced (``all_reduce(flag, op=MAX)``) is every
rank's decision; a broadcast value that is no rank's data (a config) decides nothing of
this kind.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ddplint.analysis.batches import step_method, training_loops
from ddplint.analysis.control_flow import Node, Scope
from ddplint.analysis.divergence import Source, Taint
from ddplint.analysis.functions import FunctionFacts, ModuleAnalysis

_BROADCASTS = frozenset({"broadcast", "broadcast_object_list"})
_EXITS = (ast.Continue, ast.Break, ast.Return)
#: Reasons a value is this rank's own data.
_DATA = frozenset({Source.BATCH, Source.OUTPUT})


@dataclass(frozen=True)
class OneRankSkip:
    """``broadcast`` hands one rank's ``flag`` (``taint``: why it is that rank's data)
    to every rank, and ``exit`` obeys it."""

    broadcast: ast.Call
    flag: str
    taint: Taint
    exit: ast.stmt


def skips_decided_by_one_rank(analysis: ModuleAnalysis) -> list[OneRankSkip]:
    """Every broadcast of a flag from this rank's data that decides a later exit."""
    found: list[OneRankSkip] = []
    for scope in analysis.scopes_with_collectives():
        facts = analysis.function(scope)
        broadcasts = [
            (node, collective.call)
            for node in facts.graph.nodes
            for collective, through in facts.effects.get(node.index, [])
            if through is None
            and collective.name in _BROADCASTS
            and collective.call.args
            and isinstance(collective.call.args[0], ast.Name)
        ]
        if not broadcasts:
            continue
        lightning = facts.in_lightning_class
        loops = training_loops(scope, frozenset(analysis.backward_functions))
        whole = scope if step_method(scope, lightning) else None
        view = analysis.batch_view(scope)
        for node, call in broadcasts:
            region = next((loop for loop in loops if _inside(call, loop.body)), whole)
            if region is None:
                continue
            flag = call.args[0]
            assert isinstance(flag, ast.Name)
            taint = view.taint(flag, node)
            if taint is None or taint.source not in _DATA:
                continue
            exit_ = _decided_exit(facts, region, call, flag.id)
            if exit_ is not None:
                found.append(OneRankSkip(call, flag.id, taint, exit_))
    return sorted(found, key=lambda s: (s.broadcast.lineno, s.broadcast.col_offset))


def _inside(call: ast.Call, body: list[ast.stmt]) -> bool:
    return any(node is call for statement in body for node in ast.walk(statement))


def _decided_exit(
    facts: FunctionFacts,
    region: Scope | ast.For | ast.AsyncFor | ast.While,
    call: ast.Call,
    flag: str,
) -> ast.stmt | None:
    """The first exit after ``call`` in ``region`` that a test reading ``flag`` decides."""
    inside = {id(node) for node in ast.walk(region)}
    exits: list[Node] = [
        node
        for node in facts.graph.nodes
        if isinstance(node.statement, _EXITS)
        and id(node.statement) in inside
        and (node.statement.lineno, node.statement.col_offset) > (call.lineno, call.col_offset)
    ]
    for node in sorted(exits, key=lambda n: n.line):
        for dependence in facts.dominance.all_dependences(node):
            test = getattr(dependence.test.statement, "test", None)
            if test is not None and _reads(test, flag):
                assert isinstance(node.statement, ast.stmt)
                return node.statement
    return None


def _reads(expression: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(expression))
