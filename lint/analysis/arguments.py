"""Collective arguments that every rank must pass alike, and where they differ.

``disagreeing_arguments(module)``: for each collective of ``torch.distributed``, its
root (``src`` / ``dst``, ``group_src`` / ``group_dst``), its reduction ``op`` and, for
collectives whose tensors must match, the tensor's shape and dtype. An argument
disagrees when:

- its value differs between ranks by the divergence analysis: a root or an op by its
  contents, a tensor by its shape or dtype facet (a tensor whose numbers differ but
  whose shape does not, every loss all-reduced, is correct); or
- two ways the ranks take issue the same kinds of collective in the same order but pass
  one of them a plainly different root, op or group (the branches of a test that
  differs between ranks, or rank 0 against the other ranks walked through the whole
  function: ``if rank == 0: reduce(t, dst=0)`` / ``else: reduce(t, dst=1)``).

A collective on a named process group is left alone for its per-rank values: which group
a rank is in follows its rank, and the group's own root (its first member) with it.
Point-to-point ``send`` / ``recv`` are no collectives (their peer is per rank by design).

``misplaced_lists(module)``: the list of ``scatter`` / ``gather`` that the root alone
passes (torch raises on a root without one and on another rank with one), walked as
rank 0 and as another rank: rank 0, the root, passing none; the other ranks passing
one the same on every rank; rank 0 passing one to another root.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from ddplint.analysis.api import ROOT_LISTS
from ddplint.analysis.control_flow import Node, NodeKind, Scope
from ddplint.analysis.divergence import DECIDING, Facet, Taint
from ddplint.analysis.effects import Collective, default_group
from ddplint.analysis.functions import FunctionFacts, ModuleAnalysis
from ddplint.analysis.names import call_argument
from ddplint.analysis.pairing import (
    ArgumentsApart,
    arguments_apart,
    arm_sequences,
    arms_agree,
    class_arguments_apart,
    class_sequences,
    settled_by_class,
)

#: What must agree of each kind of argument, and the facet that decides it.
_NEEDED: dict[str, tuple[tuple[str, Facet], ...]] = {
    "root": (("value", DECIDING),),
    "op": (("value", DECIDING),),
    "tensor": (("shape", Facet.SHAPE), ("dtype", Facet.DTYPE)),
}


@dataclass(frozen=True)
class Disagreement:
    """The ``keyword`` argument of ``collective`` differs between ranks: its ``what``
    (value, shape, dtype) for ``taint``'s reason, decided at ``decided`` (a statement of
    the function, when found); or, for ``apart``, two ways pass it apart."""

    scope: Scope
    collective: Collective
    keyword: str
    what: str
    taint: Taint | None = None
    decided: ast.AST | None = None
    apart: ArgumentsApart | None = None


def disagreeing_arguments(analysis: ModuleAnalysis) -> list[Disagreement]:
    """Every collective argument of the module that differs between ranks."""
    found: list[Disagreement] = []
    for scope in analysis.scopes_with_collectives():
        function = analysis.function(scope)
        if not function.effects:
            continue
        found.extend(_divergent_arguments(scope, function))
        reported = {id(d.collective.call) for d in found}
        for apart in _ways_apart(function):
            if id(apart.first.call) not in reported and id(apart.second.call) not in reported:
                reported |= {id(apart.first.call), id(apart.second.call)}
                found.append(Disagreement(scope, apart.first, apart.keyword, "value", apart=apart))
    return found


def _divergent_arguments(scope: Scope, function: FunctionFacts) -> Iterator[Disagreement]:
    for node in function.graph.nodes:
        effects = function.effects.get(node.index, [])
        if effects and _on_a_paired_branch(function, node):
            continue  # pairing compares the branches' arguments
        for collective, through in effects:
            if through is not None:
                continue  # a local function's collective: asked in its own scope
            agreed = list(collective.agreed())
            if _named_group(agreed) or _split_sizes(agreed):
                continue
            for kind, keyword, given in agreed:
                if given is None:
                    continue
                taint = function.divergence.taint(given, node)
                if taint is None:
                    continue
                for what, facet in _NEEDED.get(kind, ()):
                    if taint.facets & facet:
                        yield Disagreement(
                            scope, collective, keyword, what, taint, _statement_at(function, taint)
                        )
                        break
                else:
                    continue
                break  # one finding per collective


def _on_a_paired_branch(function: FunctionFacts, node: Node) -> bool:
    """Whether ``node`` runs on one branch of a test whose branches each issue the same
    kinds of collective: the sending rank's ``broadcast(t, src=rank)`` against the
    others' ``broadcast(t, src=holder)`` (a test that tells the sender apart, whether
    or not the analysis sees it differ), which rank reads alone cannot compare."""
    for dependence in function.dominance.all_dependences(node):
        test = dependence.test
        if test.kind is NodeKind.TEST and _both_branches_issue(function, test):
            return True
    return False


def _both_branches_issue(function: FunctionFacts, test: Node) -> bool:
    sequences = arm_sequences(function, test)
    return (
        sequences is not None
        and len(sequences) == 2
        and all(sequences)
        and arms_agree(function, test) is True
    )


def _named_group(agreed: list[tuple[str, str, ast.expr | None]]) -> bool:
    return any(
        kind == "group" and given is not None and not default_group(given)
        for kind, _, given in agreed
    )


def _split_sizes(agreed: list[tuple[str, str, ast.expr | None]]) -> bool:
    """``all_to_all_single`` with split sizes: its tensors' shapes may differ."""
    return any(
        kind == "split"
        and given is not None
        and not (isinstance(given, ast.Constant) and given.value is None)
        for kind, _, given in agreed
    )


def _statement_at(function: FunctionFacts, taint: Taint) -> ast.AST | None:
    """The statement of the function on the line a taint names (where the value was
    decided), if the function has one there."""
    for node in function.graph.nodes:
        if node.line == taint.line and node.statement is not None:
            return node.statement
    return None


def _ways_apart(function: FunctionFacts) -> Iterator[ArgumentsApart]:
    """Where two ways the ranks take issue the same kinds of collective but pass one of
    them an agreed argument apart: the branches of each test that differs between
    ranks, and the rank classes walked through the function."""
    if not _several_of_a_kind(function):
        return
    settled = False
    for node in function.graph.nodes:
        if node.kind is not NodeKind.TEST or function.divergence.test_taint(node) is None:
            continue
        settled = settled or settled_by_class(function, node)
        arms = _arms_of(function, node)
        if arms is not None:
            first, second = arms
            apart = arguments_apart(first, second)
            if apart is not None:
                yield apart
    if settled:
        apart = class_arguments_apart(function)
        if apart is not None:
            yield apart


def _arms_of(function: FunctionFacts, test: Node) -> tuple[tuple, tuple] | None:
    sequences = arm_sequences(function, test)
    if sequences is None or len(sequences) != 2:
        return None
    return sequences[0], sequences[1]


def _several_of_a_kind(function: FunctionFacts) -> bool:
    """Whether two of the function's own collectives are of one kind that has agreed
    arguments (the only way two ways can pass one apart)."""
    seen: set[str] = set()
    for effects in function.effects.values():
        for collective, _ in effects:
            if not any(True for _ in collective.agreed()):
                continue
            if collective.name in seen:
                return True
            seen.add(collective.name)
    return False


@dataclass(frozen=True)
class MisplacedList:
    """``collective`` (a ``scatter`` / ``gather`` with a literal root) passes its list
    on a rank that is not its root, or none on its root; ``zero``: on rank 0 (else on
    the other ranks)."""

    scope: Scope
    collective: Collective
    keyword: str
    zero: bool
    root: int
    given: bool


def misplaced_lists(analysis: ModuleAnalysis) -> list[MisplacedList]:
    """Every ``scatter`` / ``gather`` of the module whose list the root lacks or
    another rank passes."""
    found: list[MisplacedList] = []
    for scope in analysis.scopes_with_collectives():
        function = analysis.function(scope)
        if not any(c.name in ROOT_LISTS for e in function.effects.values() for c, _ in e):
            continue
        nodes = {  # this scope's own collectives (a local function's: in its scope)
            id(collective.call): node
            for node in function.graph.nodes
            for collective, through in function.effects.get(node.index, [])
            if through is None
        }
        reported: set[int] = set()
        for zero in (True, False):
            for sequence in class_sequences(function, zero) or []:
                for collective in sequence:
                    if isinstance(collective, str) or id(collective.call) in reported:
                        continue
                    misplaced = _misplaced(function, nodes, scope, collective, zero)
                    if misplaced is not None and not reported:  # one per function
                        reported.add(id(collective.call))
                        found.append(misplaced)
    return found


def _misplaced(
    function: FunctionFacts,
    nodes: dict[int, Node],
    scope: Scope,
    collective: Collective,
    zero: bool,
) -> MisplacedList | None:
    shape = ROOT_LISTS.get(collective.name)
    node = nodes.get(id(collective.call))
    if shape is None or node is None or collective.via is not None:
        return None
    (list_position, list_keyword), (root_position, root_keyword) = shape
    call = collective.call
    if any(k.arg is None for k in call.keywords) or any(
        isinstance(a, ast.Starred) for a in call.args
    ):
        return None
    if _named_group(list(collective.agreed())) or any(
        k.arg in ("group_src", "group_dst") for k in call.keywords
    ):
        return None  # the root may be the group's own rank
    root_given = call_argument(call, root_position, root_keyword)
    root = 0 if root_given is None else _literal_int(root_given)
    if root is None:
        return None
    given = call_argument(call, list_position, list_keyword)
    if given is not None and function.divergence.taint(given, node) is not None:
        return None  # chosen per rank: which ranks pass one is not known
    present = given is not None and not _empty(given)
    wrong = (present != (root == 0)) if zero else (present and root == 0)
    if not wrong:
        return None
    return MisplacedList(scope, collective, list_keyword, zero, root, present)


def _literal_int(expression: ast.expr) -> int | None:
    try:
        value = ast.literal_eval(expression)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _empty(expression: ast.expr) -> bool:
    """``None`` or an empty display: torch takes it as no list."""
    if isinstance(expression, ast.Constant):
        return expression.value is None
    return isinstance(expression, (ast.List, ast.Tuple)) and not expression.elts
