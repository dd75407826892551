"""Process groups created on some ranks only: a question to the analysis core (DDP207).

``groups_on_some_ranks(analysis)``: each call of the module that creates a process
group itself (``new_group``, ``new_subgroups``, ``new_subgroups_by_enumeration``,
``init_device_mesh``: ``api.GROUP_CREATIONS``) and runs on some ranks only: decided
inside its statement by the rank, control-dependent on a rank test (an ``if`` around
it, an early exit before it), or in a function that runs on one rank
(``@rank_zero_only``): ``rank_guards.guard_of``.

Every rank must create every group, with the same arguments, in the same order. So a
rank test decides nothing when each of its ways creates the same groups with the same
arguments before the ways meet (``if rank == 0: pair = new_group([0, 1])`` / ``else:
pair = new_group([0, 1])``), or, for a test on the rank itself, when rank 0 and the
other ranks walked through the whole function create the same groups
(``pairing.paired_class_walks``). A group created on every rank and kept by its members
(``made = new_group(ranks)`` then ``if rank in ranks: group = made``) has no guard at
all. Where the ways cannot be told apart within the walks' budgets nothing is said; a
way only a single-process job takes is left out.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import partial

from ddplint.analysis.api import GROUP_CREATIONS
from ddplint.analysis.control_flow import Node, Scope
from ddplint.analysis.functions import FunctionFacts, ModuleAnalysis, ways_on
from ddplint.analysis.pairing import (
    Sequence_,
    paired_class_walks,
    sequences_between,
    settled_by_class,
)
from ddplint.analysis.rank_guards import RankGuard, guard_of

#: A group creation as every rank must repeat it: what it calls, and its arguments.
Creation = tuple[str, str]


@dataclass(frozen=True)
class GroupOnSomeRanks:
    """``call`` creates a process group; ``guard`` runs it on some ranks only;
    ``statement`` is the statement of ``scope`` that holds the call."""

    scope: Scope
    call: ast.Call
    statement: ast.AST
    guard: RankGuard


def groups_on_some_ranks(analysis: ModuleAnalysis) -> list[GroupOnSomeRanks]:
    """Every group creation of the module that runs on some ranks only."""
    found: list[GroupOnSomeRanks] = []
    seen: set[int] = set()
    for scope in analysis.scopes_with_collectives():
        function = analysis.function(scope)
        for index in sorted(function.effects):
            node = function.graph.nodes[index]
            for collective, through in function.effects[index]:
                call = collective.call
                if (
                    through is not None
                    or collective.via is not None
                    or collective.name not in GROUP_CREATIONS
                    or id(call) in seen
                    or node.statement is None
                    or analysis.single_process.holds(call)
                ):
                    continue
                seen.add(id(call))
                guard = guard_of(
                    analysis, scope, node, call, balanced=partial(creates_alike, function)
                )
                if guard is not None:
                    found.append(GroupOnSomeRanks(scope, call, node.statement, guard))
    return found


def creates_alike(function: FunctionFacts, test: Node) -> bool:
    """Whether every way of ``test`` creates the same process groups, with the same
    arguments, in the same order (or the rank classes do, across the function); also
    where the walks cannot tell (nothing is said then)."""
    join = function.dominance.immediate(test)
    made: list[set[tuple[Creation, ...]]] = []
    for successor, _ in ways_on(test):
        sequences = sequences_between(function, successor, join)
        if sequences is None:
            return True
        if sequences:  # not every way on ends the job loudly
            made.append({creations(sequence) for sequence in sequences})
    if all(created == made[0] for created in made):
        return True
    if not settled_by_class(function, test):
        return False
    pairs = paired_class_walks(function)
    return bool(pairs) and all(creations(zero) == creations(other) for zero, other in pairs)


def creations(sequence: Sequence_) -> tuple[Creation, ...]:
    """The group creations of a collective sequence, each with its arguments as
    written (every rank must pass the same)."""
    return tuple(
        (element.name, _arguments(element.call))
        for element in sequence
        if not isinstance(element, str) and element.name in GROUP_CREATIONS
    )


def _arguments(call: ast.Call) -> str:
    keywords = sorted(call.keywords, key=lambda keyword: keyword.arg or "")
    return ", ".join(ast.unparse(part) for part in (*call.args, *keywords))


def creations_within(analysis: ModuleAnalysis, statement: ast.AST) -> list[ast.Call]:
    """The calls inside ``statement`` that create a process group themselves."""
    return [
        node
        for node in ast.walk(statement)
        if isinstance(node, ast.Call)
        and (made := analysis.objects.collective(node, False)) is not None
        and made.via is None
        and made.name in GROUP_CREATIONS
    ]
