"""Collective arguments that every rank must pass alike, and where they differ.

``disagreeing_arguments(module)``: for each collective of ``torch.distributed``, its
root (``src`` / ``dst``, ``group_src`` / ``group_dst``), its reduction ``op`` and, for
collectives whose tensors must match, the tensor's shape and dtype. An argument
disagrees when:

- its value differs between ranks by the divergence analysis: a root, an op or the
  members of a group being made (``new_group(ranks)``, unless made with
  ``use_local_synchronization=True`` or of one member) by its contents, a tensor by its
  shape or dtype facet (a tensor whose numbers differ but whose shape does not, every
  loss all-reduced, is correct), the lists of
  ``all_to_all`` and the split sizes of ``all_to_all_single`` by their length (one
  entry per rank; the sizes in them may differ); or
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

from ddplint.analysis.api import GROUP_CREATORS, LOCALLY_SYNCHRONISED, ROOT_LISTS
from ddplint.analysis.control_flow import EdgeKind, Node, NodeKind, Scope, holds_node
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
    "length": (("length", Facet.SHAPE),),
    "split": (("length", Facet.SHAPE),),
    "members": (("members", DECIDING),),
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
            if _named_group(agreed) or _own_groups(collective):
                continue
            uneven = _split_sizes(agreed)
            for kind, keyword, given in agreed:
                if given is None or (uneven and kind == "tensor"):
                    continue
                taint = function.divergence.taint(given, node)
                if taint is None or _pinned_by_test(function, node, collective.call, given):
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


def _pinned_by_test(function: FunctionFacts, node: Node, call: ast.Call, given: ast.expr) -> bool:
    """Whether ``call`` runs only where a test found ``given`` equal to a value every
    rank shares (``reduce(t, rank) if i == rank else ...``, ``if rank == src:
    broadcast(t, src=rank)``, ``if rank != owner: ... else: send(t, dst=rank)``): there
    it is that value, the same on every rank."""
    return any(
        _equated(test, truth, given, function, node)
        for test, truth in _deciding(function, node, call)
    )


def _deciding(
    function: FunctionFacts, node: Node, call: ast.Call
) -> Iterator[tuple[ast.expr, bool]]:
    """The tests that decide whether ``call`` runs, each with the outcome it runs on: the
    conditional expressions of its statement and the tests it depends on."""
    if node.statement is not None:
        for parent in ast.walk(node.statement):
            if isinstance(parent, ast.IfExp):
                if holds_node(parent.body, call):
                    yield parent.test, True
                elif holds_node(parent.orelse, call):
                    yield parent.test, False
    for dependence in function.dominance.all_dependences(node):
        statement = dependence.test.statement
        if isinstance(statement, (ast.If, ast.While)) and dependence.edge in _OUTCOMES:
            yield statement.test, _OUTCOMES[dependence.edge]


#: The outcome of a test each branch is taken on.
_OUTCOMES = {EdgeKind.TRUE: True, EdgeKind.FALSE: False}


def _equated(
    test: ast.expr, truth: bool, given: ast.expr, function: FunctionFacts, node: Node
) -> bool:
    """Whether ``test`` coming out ``truth`` makes ``given`` equal to an expression no
    rank reads apart (through ``not``, ``and`` taken true, ``or`` taken false)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _equated(test.operand, not truth, given, function, node)
    if isinstance(test, ast.BoolOp):
        if isinstance(test.op, ast.And) is truth:
            return any(_equated(value, truth, given, function, node) for value in test.values)
        return False
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return False
    if not isinstance(test.ops[0], ast.Eq if truth else ast.NotEq):
        return False
    spelled = ast.dump(given)
    for side, other in ((test.left, test.comparators[0]), (test.comparators[0], test.left)):
        if ast.dump(side) == spelled and function.divergence.taint(other, node) is None:
            return True
    return False


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


def _own_groups(collective: Collective) -> bool:
    """Groups each rank may make with its own members: made with
    ``use_local_synchronization`` set (anything but a literal false: named by its
    members, made by them alone), or of one member (``new_group([rank])``: no peer
    whose set-up could cross)."""
    if collective.name not in GROUP_CREATORS:
        return False
    given = next((k.value for k in collective.call.keywords if k.arg == LOCALLY_SYNCHRONISED), None)
    if given is not None and not (isinstance(given, ast.Constant) and not given.value):
        return True
    if collective.name != "new_group":
        return False
    members = call_argument(collective.call, 0, "ranks")
    return isinstance(members, (ast.List, ast.Tuple)) and len(members.elts) == 1


def _split_sizes(agreed: list[tuple[str, str, ast.expr | None]]) -> bool:
    """``all_to_all_single`` with split sizes: its tensors' shapes may differ (the
    split lists' lengths may not)."""
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
    if present and not _always_a_list(function, given):
        return None  # a name that may still hold ``None`` here (bound on the root only)
    wrong = (present != (root == 0)) if zero else (present and root == 0)
    if not wrong:
        return None
    return MisplacedList(scope, collective, list_keyword, zero, root, present)


def _always_a_list(function: FunctionFacts, given: ast.expr | None) -> bool:
    """Whether ``given`` is a list on every way to the call: a display or
    comprehension, or a name the function binds once, to one."""
    if isinstance(given, ast.Name):
        given = function.divergence.sole_assignment(given.id)
    return isinstance(given, (ast.List, ast.Tuple, ast.ListComp)) and not _empty(given)


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


@dataclass(frozen=True)
class OutsideGroup:
    """``collective`` runs on the group ``made`` (``new_group`` of the literal
    ``members``) under rank tests that send ``rank`` the wrong way: a rank outside the
    group issues it (``member`` False: it does nothing there), or a member skips it
    while another member issues it (``member`` True)."""

    scope: Scope
    collective: Collective
    made: ast.Call
    members: tuple[int, ...]
    rank: int
    member: bool


def outside_groups(analysis: ModuleAnalysis) -> list[OutsideGroup]:
    """Every collective on a group of literal members that the function's rank tests
    give to a rank outside it, or take from some members only."""
    found: list[OutsideGroup] = []
    for scope in analysis.scopes_with_collectives():
        function = analysis.function(scope)
        for node in function.graph.nodes:
            for collective, through in function.effects.get(node.index, []):
                if through is None:
                    outside = _outside_group(analysis, scope, function, node, collective)
                    if outside is not None:
                        found.append(outside)
    return found


def _outside_group(
    analysis: ModuleAnalysis,
    scope: Scope,
    function: FunctionFacts,
    node: Node,
    collective: Collective,
) -> OutsideGroup | None:
    given = next((g for kind, _, g in collective.agreed() if kind == "group"), None)
    if not isinstance(given, ast.Name):
        return None
    made = function.divergence.sole_assignment(given.id)
    members = _literal_members(analysis, made)
    if made is None or members is None:
        return None
    assert isinstance(made, ast.Call)
    tests = [
        d
        for d in function.dominance.all_dependences(node)
        if function.divergence.test_taint(d.test) is not None
    ]
    if not tests:
        return None  # every rank issues it: outside the group it does nothing, as meant
    runs: dict[int, bool] = {}
    for rank in range(max(members) + 2):
        taken = True
        for dependence in tests:
            statement = dependence.test.statement
            if not isinstance(statement, (ast.If, ast.While)):
                return None
            truth = _truth_for(analysis, function, dependence.test, statement.test, rank)
            if truth is None:
                return None
            taken = taken and truth == (dependence.edge is EdgeKind.TRUE)
        runs[rank] = taken
    for rank, taken in runs.items():
        if taken and rank not in members:
            return OutsideGroup(scope, collective, made, members, rank, member=False)
    if any(runs[m] for m in members) and not all(runs[m] for m in members):
        skipping = next(m for m in members if not runs[m])
        return OutsideGroup(scope, collective, made, members, skipping, member=True)
    return None


def _literal_members(analysis: ModuleAnalysis, made: ast.expr | None) -> tuple[int, ...] | None:
    """The ranks of ``new_group([0, 1])`` (or ``ranks=``), when they are literal."""
    if not isinstance(made, ast.Call) or analysis.names.resolve(made.func) not in (
        "torch.distributed.new_group",
        "torch.distributed.distributed_c10d.new_group",
    ):
        return None
    ranks = call_argument(made, 0, "ranks")
    if ranks is None:
        return None
    try:
        value = ast.literal_eval(ranks)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(value, (list, tuple, set)) or not value:
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return None
    return tuple(sorted(value))


def _truth_for(
    analysis: ModuleAnalysis, function: FunctionFacts, node: Node, test: ast.expr, rank: int
) -> bool | None:
    """What ``test`` says for the process of ``rank`` (None: it reads more than the
    rank, or a form not followed)."""
    value = _value_for(analysis, function, node, test, rank)
    return value if isinstance(value, bool) else None


_COMPARE = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
_ARITHMETIC = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Mod: lambda a, b: a % b if b else None,
    ast.FloorDiv: lambda a, b: a // b if b else None,
}


def _value_for(
    analysis: ModuleAnalysis, function: FunctionFacts, node: Node, expression: ast.expr, rank: int
) -> object:
    """The value of a rank test's part for the process of ``rank``: the rank read
    (``dist.get_rank()``, a name bound once to it), integer literals and displays of
    them, comparisons, ``and`` / ``or`` / ``not`` and integer arithmetic; None
    otherwise."""
    if _reads_rank(analysis, function, expression):
        return rank
    if isinstance(expression, ast.Constant):
        value = expression.value
        return value if isinstance(value, int) else None
    if isinstance(expression, (ast.List, ast.Tuple, ast.Set)):
        items = [_value_for(analysis, function, node, e, rank) for e in expression.elts]
        return None if any(not isinstance(i, int) for i in items) else tuple(items)
    if isinstance(expression, ast.UnaryOp) and isinstance(expression.op, ast.Not):
        operand = _value_for(analysis, function, node, expression.operand, rank)
        return None if not isinstance(operand, bool) else not operand
    if isinstance(expression, ast.BoolOp):
        parts = [_value_for(analysis, function, node, v, rank) for v in expression.values]
        if any(not isinstance(p, bool) for p in parts):
            return None
        return all(parts) if isinstance(expression.op, ast.And) else any(parts)
    if isinstance(expression, ast.BinOp) and type(expression.op) in _ARITHMETIC:
        left = _value_for(analysis, function, node, expression.left, rank)
        right = _value_for(analysis, function, node, expression.right, rank)
        if not (isinstance(left, int) and isinstance(right, int)):
            return None
        return _ARITHMETIC[type(expression.op)](left, right)
    if (
        isinstance(expression, ast.Compare)
        and len(expression.ops) == 1
        and type(expression.ops[0]) in _COMPARE
    ):
        left = _value_for(analysis, function, node, expression.left, rank)
        right = _value_for(analysis, function, node, expression.comparators[0], rank)
        if left is None or right is None:
            return None
        try:
            return bool(_COMPARE[type(expression.ops[0])](left, right))
        except TypeError:
            return None
    return None


def _reads_rank(analysis: ModuleAnalysis, function: FunctionFacts, expression: ast.expr) -> bool:
    """``dist.get_rank()`` (no group), or a name the function binds once to it."""
    if isinstance(expression, ast.Name):
        bound = function.divergence.sole_assignment(expression.id)
        return bound is not None and _reads_rank(analysis, function, bound)
    return (
        isinstance(expression, ast.Call)
        and not expression.args
        and not expression.keywords
        and analysis.names.resolve(expression.func)
        in ("torch.distributed.get_rank", "torch.distributed.distributed_c10d.get_rank")
    )
