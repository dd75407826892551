"""Collectives that only some ranks reach: by rank class, and in exception handlers.

``rank_class_partings(module)`` (DDP201): the places where rank 0 and the other ranks
(or the local ranks) stop issuing the same collective sequences, a question
``where_ranks_part`` answers for every divergent test; here only the tests on the rank
itself where one class reaches a collective the other does not (``rank_class_parting``:
not a trip count, not two orders, not a collective with a question of its own), each
reported once, at the parting.

``handler_collectives(module)`` (DDP206): a collective in an ``except`` handler whose
``try`` body computes on this rank's values (a forward, a backward: out of memory on
this rank's batch), so that only the ranks that raised run it. Not reported: a handler
that ends loudly on every way (a ``raise``, an error exit: the launcher stops every
rank), a handler whose collectives the ``try`` body's own way issues too (both ways
issue them: they pair), a handler that runs its own function again (a retry), and a
``try`` whose body computes on shared values only (it raises on every rank or none).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ddplint.analysis.api import CHECKPOINT_FUNCTIONS, GROUP_CREATIONS
from ddplint.analysis.control_flow import Node, Scope, ends_loudly
from ddplint.analysis.divergence import Source, Taint
from ddplint.analysis.effects import DDP_FORWARD, Collective
from ddplint.analysis.functions import FunctionFacts, ModuleAnalysis, ways_on
from ddplint.analysis.pairing import kinds, sequences_between
from ddplint.analysis.questions import (
    Parting,
    own_statements,
    per_rank_call,
    statements_in,
    where_ranks_part,
)

#: The implicit collectives of a model wrapped in DDP: a question of their own (DDP213).
_MODEL_COLLECTIVES = frozenset({DDP_FORWARD, "backward"})


def rank_class_partings(analysis: ModuleAnalysis) -> list[Parting]:
    """The partings of the module that ``rank_class_parting`` accepts."""
    return [parting for parting in where_ranks_part(analysis) if rank_class_parting(parting)]


def rank_class_parting(parting: Parting) -> bool:
    """Whether a parting is decided by a test on the rank (not on values a rank
    computes) and one rank class reaches a collective the other does not: not two
    orders of the same collectives (a pairing of different kinds), not a trip count,
    and not a collective asked about on its own (``own_question``)."""
    return (
        parting.taint.source is Source.RANK
        and parting.order is None
        and not parting.loop
        and not own_question(parting)
    )


def own_question(parting: Parting) -> bool:
    """Collectives asked about on their own when some ranks skip them: a DDP model's
    forward or backward however reached, and, called directly, a log synchronised
    across ranks (``sync_dist=True``), checkpoint saving, and making a process group."""
    collective = parting.missed
    name = collective.name
    if name in _MODEL_COLLECTIVES:
        return True
    if parting.through is not None or collective.via is not None:
        return False
    return (
        name.endswith("(sync_dist=True)")
        or name.rsplit(".", 1)[-1] in GROUP_CREATIONS
        or name.endswith("save_checkpoint")
        or name in CHECKPOINT_FUNCTIONS.values()
    )


@dataclass(frozen=True)
class HandlerCollective:
    """A collective issued in ``handler`` (at ``site``, a statement of the handler)
    that only the ranks whose ``try`` body raised reach; ``raised`` says which call of
    the body computes on this rank's values."""

    function: Scope
    handler: ast.ExceptHandler
    site: ast.AST
    collective: Collective
    through: str | None
    raised: Taint
    raised_at: ast.AST


def handler_collectives(analysis: ModuleAnalysis) -> list[HandlerCollective]:
    """Every collective of the module that only the ranks that raised reach."""
    found: list[HandlerCollective] = []
    for scope in analysis.scopes_with_collectives():
        function = analysis.function(scope)
        if function.effects:
            found.extend(_in_handlers(scope, function))
    return found


def _in_handlers(scope: Scope, function: FunctionFacts) -> list[HandlerCollective]:
    nodes_of = {id(node.statement): node for node in function.graph.nodes if node.statement}
    found: list[HandlerCollective] = []
    for statement in own_statements(scope):
        if not isinstance(statement, (ast.Try, ast.TryStar)) or not statement.handlers:
            continue
        body = [nodes_of[id(s)] for s in statements_in(statement.body) if id(s) in nodes_of]
        per_rank = per_rank_call(function, body)
        if per_rank is None:
            continue  # shared values only: every rank raises or none does
        raised, start = per_rank
        dispatch = nodes_of.get(id(statement))
        join = function.dominance.immediate(dispatch) if dispatch is not None else None
        body_kinds = _kinds_after(function, start, join)
        for handler in statement.handlers:
            if _ends_loudly(handler.body):
                continue
            handled = [nodes_of[id(s)] for s in statements_in(handler.body) if id(s) in nodes_of]
            issuing = [node for node in handled if node.index in function.effects]
            if not issuing or _paired(function, handled[0], join, body_kinds):
                continue
            for node in issuing:
                for collective, through in function.effects[node.index]:
                    if through is not None and through == getattr(scope, "name", None):
                        continue  # a retry: the other ranks issue it in their own run
                    assert node.statement is not None
                    found.append(
                        HandlerCollective(
                            scope,
                            handler,
                            node.statement,
                            collective,
                            through,
                            raised,
                            start.statement or statement,
                        )
                    )
    return found


def _ends_loudly(body: list[ast.stmt]) -> bool:
    """Whether every way through a handler's body ends the process with an error: a
    statement of its own level raises (a bare ``raise`` re-raises) or exits with an
    error status."""
    return any(ends_loudly(statement) for statement in body)


def _kinds_after(
    function: FunctionFacts, start: Node, join: Node | None
) -> set[tuple[str, ...]] | None:
    """The kinds of collective sequence the ``try`` body's way issues after the call
    that may raise, up to where the handlers meet it again; None: cannot tell."""
    found: set[tuple[str, ...]] = set()
    for successor, _ in ways_on(start):
        sequences = sequences_between(function, successor, join)
        if sequences is None:
            return None
        found |= {kinds(s) for s in sequences}
    return found


def _paired(
    function: FunctionFacts,
    first: Node,
    join: Node | None,
    body_kinds: set[tuple[str, ...]] | None,
) -> bool:
    """Whether the handler issues only sequences that the ``try`` body's way issues
    too (both ways issue them; the ranks pair them); cannot tell counts as paired."""
    if body_kinds is None:
        return True
    sequences = sequences_between(function, first, join)
    if sequences is None:
        return True
    return {kinds(s) for s in sequences} <= body_kinds
