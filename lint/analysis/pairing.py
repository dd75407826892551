"""Whether ranks issue the same collectives: the sequences a test's branches issue
before they meet again (pairing), and the whole function walked once as rank 0 and
once as another rank, keeping what each way's tests say of the values every rank
shares (rank classes: main-process-first pairs up by construction; a test of the rank
against a shared value, ``rank == turn``, is a fact of each way's own, so one process at
a time pairs up too). Walks step from
event to event under budgets; past them the answer is "cannot tell".
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import TypeAlias

from ddplint.analysis.api import DEFAULT_REDUCE_OP
from ddplint.analysis.control_flow import (
    EdgeKind,
    Node,
    NodeKind,
    holds_node,
)
from ddplint.analysis.divergence import (
    Divergence,
    Source,
)
from ddplint.analysis.dominance import avoids
from ddplint.analysis.effects import Collective, default_group
from ddplint.analysis.functions import Facts, FunctionFacts, ways_on
from ddplint.analysis.names import dotted_name

#: Paths walked per question before the answer is "cannot tell" (then nothing is said).
MAX_PATHS = 256


#: Steps a walk may take per question before the answer is "cannot tell".
MAX_STEPS = 20_000


#: A collective issued, or a marker (a way that goes on round a loop).
Element: TypeAlias = Collective | str
Sequence_: TypeAlias = tuple[Element, ...]


def kinds(sequence: Sequence_) -> tuple[str, ...]:
    """The kinds of collective a sequence issues, in order (markers as they are)."""
    return tuple(e if isinstance(e, str) else e.name for e in sequence)


def sequences_between(
    function: FunctionFacts, start: Node, stop: Node | None
) -> set[Sequence_] | None:
    """The collective sequences issued on the ways from ``start`` to ``stop`` (or out of
    the function), each loop taken at most once; None past ``MAX_PATHS`` paths or
    ``MAX_STEPS`` steps (cannot tell)."""
    found: set[Sequence_] = set()
    steps = 0
    start = function.ways_from(start)
    stack: list[tuple[Node, Sequence_, frozenset[int]]] = [(start, (), frozenset())]
    while stack:
        node, issued, visited = stack.pop()
        steps += 1
        if steps > MAX_STEPS:
            return None
        if node is stop or node.kind in (NodeKind.EXIT, NodeKind.RAISE) or node.index in visited:
            found.add(issued)
            if len(found) > MAX_PATHS:
                return None
            continue
        issued = issued + tuple(c for c, _ in function.effects.get(node.index, []))
        for successor, _ in function.ways(node):
            stack.append((successor, issued, visited | {node.index}))
    return found


def arms_agree(function: FunctionFacts, test: Node) -> bool | None:
    """Whether every branch of ``test`` issues the same kinds of collective in the same
    order before the branches meet again (None: cannot tell)."""
    join = function.dominance.immediate(test)
    arms = list(ways_on(test))  # a failing assert is an error path
    if len(arms) < 2:
        return True
    live: list[set[tuple[str, ...]]] = []
    for successor, _ in arms:
        sequences = sequences_between(function, successor, join)
        if sequences is None:
            return None
        if sequences:  # not every way on is an error path
            live.append({kinds(s) for s in sequences})
    if len(live) < 2:
        return True  # one live arm: the others stop the job loudly, they part nothing
    if any(issued != live[0] for issued in live):
        return False
    return all(len(issued) == 1 for issued in live) or _same_loops_on_both_arms(function, test)


#: A statement's part in the collectives an arm issues: what it issues, or the loop or
#: test around them (its head as written, then what its branches issue).
Skeleton: TypeAlias = tuple[object, ...]


def _same_loops_on_both_arms(function: FunctionFacts, test: Node) -> bool:
    """Whether both branches of an ``if`` issue their collectives through the same
    loops and tests, each answered alike on every rank and over names neither branch
    binds again (``for key in chunks:`` around ``gather(chunks[key], buffers)`` on rank 0
    and ``gather(chunks[key])`` on the others): then each trip of one pairs with a trip of
    the other, however many there are."""
    statement = test.statement
    if not isinstance(statement, ast.If) or not statement.orelse:
        return False
    issuing = {
        id(function.graph.nodes[index].statement): tuple(c.name for c, _ in effects)
        for index, effects in function.effects.items()
    }
    heads = {
        id(node.statement): node
        for node in function.graph.nodes
        if node.kind in (NodeKind.TEST, NodeKind.STEP)
    }
    arms = [statement.body, statement.orelse]
    read: set[str] = set()
    skeletons = [_skeleton(function, arm, issuing, heads, read) for arm in arms]
    if skeletons[0] is None or skeletons[0] != skeletons[1] or not skeletons[0]:
        return False
    return not read & set().union(*(_bound_in(arm) for arm in arms))


def _skeleton(
    function: FunctionFacts,
    statements: list[ast.stmt],
    issuing: dict[int, tuple[str, ...]],
    heads: dict[int, Node],
    read: set[str],
) -> Skeleton | None:
    """What ``statements`` issue, in order, with the loops and tests around it (the
    names their heads read are added to ``read``); None where a statement around a
    collective is one this cannot follow, or a loop's trip count or a test's answer
    differs between ranks."""
    found: list[object] = []
    for statement in statements:
        if not any(id(inner) in issuing for inner in ast.walk(statement)):
            continue
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            inner = _skeleton(function, statement.body, issuing, heads, read)
            if inner is None:
                return None
            found.extend(inner)
            continue
        if isinstance(statement, (ast.For, ast.AsyncFor, ast.While, ast.If)):
            node = heads.get(id(statement))
            if node is None or function.divergence.test_taint(node) is not None:
                return None
            head = statement.test if isinstance(statement, (ast.While, ast.If)) else statement.iter
            read.update(n.id for n in ast.walk(head) if isinstance(n, ast.Name))
            body = _skeleton(function, statement.body, issuing, heads, read)
            orelse = _skeleton(function, statement.orelse, issuing, heads, read)
            if body is None or orelse is None:
                return None
            found.append((type(statement).__name__, ast.dump(head), body, orelse))
            continue
        if id(statement) not in issuing or isinstance(statement, ast.Try):
            return None
        found.append(issuing[id(statement)])
    return tuple(found)


def _bound_in(statements: list[ast.stmt]) -> set[str]:
    """The names ``statements`` bind, but for loop targets (a loop's own variable is
    what its head hands it on both arms alike)."""
    looped = {
        id(name)
        for statement in statements
        for inner in ast.walk(statement)
        if isinstance(inner, (ast.For, ast.AsyncFor, ast.comprehension))
        for name in ast.walk(inner.target)
    }
    return {
        inner.id
        for statement in statements
        for inner in ast.walk(statement)
        if isinstance(inner, ast.Name)
        and isinstance(inner.ctx, ast.Store)
        and id(inner) not in looped
    }


def arm_sequences(function: FunctionFacts, test: Node) -> list[Sequence_] | None:
    """The one collective sequence each branch of ``test`` issues before the branches
    meet (error paths left out); None where a branch issues several or it cannot tell."""
    join = function.dominance.immediate(test)
    found: list[Sequence_] = []
    for successor, _ in ways_on(test):
        sequences = sequences_between(function, successor, join)
        if sequences is None or len(sequences) > 1:
            return None
        found.extend(sequences)
    return found


def expression_arms_pair(choice: ast.IfExp, collectives: list[Collective]) -> bool:
    """Whether both arms of a conditional expression issue collectives, the same kinds
    in the same order (``reduce(mine, rank) if i == rank else reduce(theirs[i], i)``):
    whichever arm a rank takes, it issues its share of the pair."""
    arms = []
    for arm in (choice.body, choice.orelse):
        inside = [c for c in collectives if holds_node(arm, c.call)]
        inside.sort(key=lambda c: (c.call.lineno, c.call.col_offset))
        arms.append(kinds(tuple(inside)))
    return bool(arms[0]) and arms[0] == arms[1]


def first_difference(first: Sequence_, second: Sequence_) -> tuple[Element | None, ...] | None:
    """Where two sequences first issue other kinds: (the one's, the other's), None for
    a side that has ended; None when they issue the same kinds."""
    for position in range(max(len(first), len(second))):
        mine = first[position] if position < len(first) else None
        theirs = second[position] if position < len(second) else None
        if kinds((mine,) if mine is not None else ()) != kinds(
            (theirs,) if theirs is not None else ()
        ):
            return mine, theirs
    return None


# -- arguments every rank must pass alike ------------------------------------------------


def _settled(kind: str, value: ast.expr | None) -> str | None:
    """What an agreed argument comes to where the code spells it plainly: a literal
    root, a ``ReduceOp`` member (the default when none is given), the default process
    group or a named one; None when it cannot tell."""
    if kind == "op":
        if value is None:
            return DEFAULT_REDUCE_OP
        spelled = dotted_name(value)
        return spelled.rsplit(".", 1)[-1] if spelled and "ReduceOp." in spelled else None
    if kind == "group":
        return "the default group" if value is None or default_group(value) else "a named group"
    if kind == "root" and value is not None:
        try:
            literal = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
        return repr(literal) if isinstance(literal, int) else None
    return None


@dataclass(frozen=True)
class ArgumentsApart:
    """Two collectives of one kind, issued at the same place in two ways' sequences,
    whose ``keyword`` argument comes to ``values`` (a root, an op, a group) apart."""

    first: Collective
    second: Collective
    keyword: str
    values: tuple[str, str]


def arguments_apart(first: Sequence_, second: Sequence_) -> ArgumentsApart | None:
    """The first place where two sequences of the same kinds pass an agreed argument
    that plainly differs (two literal roots, two ops, the default group against a named
    one)."""
    if kinds(first) != kinds(second):
        return None
    for mine, theirs in zip(first, second, strict=True):
        if isinstance(mine, str) or isinstance(theirs, str):
            continue
        for (kind, keyword, given), (_, _, other) in zip(
            mine.agreed(), theirs.agreed(), strict=True
        ):
            values = (_settled(kind, given), _settled(kind, other))
            if values[0] is None or values[1] is None or values[0] == values[1]:
                continue
            if kind == "root" and (given is None or other is None):
                continue
            return ArgumentsApart(mine, theirs, keyword, (values[0], values[1]))
    return None


# -- rank classes ----------------------------------------------------------------------


#: How many names a rank test is followed through to the value bound to them.
_NAME_DEPTH = 2


def _rank_value(
    expression: ast.AST, zero: bool, divergence: Divergence, node: Node, depth: int = _NAME_DEPTH
) -> object:
    """The value a rank read takes for rank 0 (``zero``) or for another rank: ``True`` /
    ``False`` for ``is_*`` predicates, ``0`` or ``_OTHER`` for numbers; None if
    ``expression`` is no rank read. A name bound once in the function stands for its
    value; a name or field (``args.local_rank``) that holds the rank read is the rank."""
    while (
        isinstance(expression, ast.Call)
        and isinstance(expression.func, ast.Name)
        and expression.func.id in ("int", "str", "bool")
        and len(expression.args) == 1
    ):
        expression = expression.args[0]
    expression = _several_processes_way(expression, divergence)
    taint = divergence.taint(expression, node)
    if taint is None or taint.source is not Source.RANK:
        return None
    assigned = _bound_value(expression, divergence, depth)
    if assigned is not None:
        # The name stands for its value: arithmetic on the rank is no rank read.
        return _rank_value(assigned, zero, divergence, node, depth - 1)
    if taint.spelled != ast.unparse(expression) and dotted_name(expression) is None:
        return None
    last = (dotted_name(expression) or ast.unparse(expression)).rsplit(".", 1)[-1]
    if last.startswith("is_") or last.startswith("is_global_zero"):
        return zero
    return 0 if zero else _OTHER


def _several_processes_way(expression: ast.AST, divergence: Divergence) -> ast.AST:
    """``x if dist.is_initialized() else y`` read as ``x`` (``y`` where the test fails
    in every multi-process run): the other way runs one process, where no collective
    can part ranks (``single_process.asks_several`` reads the test)."""
    while isinstance(expression, ast.IfExp):
        several = divergence.asks_several(expression.test)
        if several is None:
            break
        expression = expression.body if several else expression.orelse
    return expression


#: Expressions that are tests themselves: a name bound to one is that test.
_TESTS = (ast.Compare, ast.BoolOp, ast.UnaryOp)


def _bound_value(expression: ast.AST, divergence: Divergence, depth: int) -> ast.expr | None:
    """The value of the one assignment of a plain name in the function."""
    if depth <= 0 or not isinstance(expression, ast.Name):
        return None
    return divergence.sole_assignment(expression.id)


class _Other:
    """Any rank but 0 (and not -1): 1 or more."""


_OTHER = _Other()


def _evaluate(
    test: ast.AST,
    zero: bool,
    function: FunctionFacts,
    node: Node,
    facts: Facts,
    depth: int = _NAME_DEPTH,
) -> bool | None:
    """A test's truth for rank 0 (``zero``) or another rank, with the truths ``facts``
    give plain names; None if unknown. Raises ``_Unsettled`` for a test on the rank
    that a class does not settle (``rank == 1``, ``rank % 2``). A name bound once to a
    rank test (``is_first = rank == 0``) is that test."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _evaluate(test.operand, zero, function, node, facts, depth)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        values = [_evaluate(v, zero, function, node, facts, depth) for v in test.values]
        if isinstance(test.op, ast.And):
            found = False if False in values else (None if None in values else True)
        else:
            found = True if True in values else (None if None in values else False)
        if found is None:
            # The parts left open may be known together (``a and b`` taken false once).
            open_parts = [v for v, t in zip(test.values, values, strict=True) if t is None]
            if (_clause_key(test.op, open_parts), True) in facts:
                found = not isinstance(test.op, ast.And)
        return found
    divergence = function.divergence
    test = _several_processes_way(test, divergence)
    taint = divergence.taint(test, node)
    assigned = _bound_value(test, divergence, depth)
    if assigned is not None and taint is not None and taint.source is Source.RANK:
        if isinstance(assigned, _TESTS):
            return _evaluate(assigned, zero, function, node, facts, depth - 1)
        try:  # a value (``x if distributed else True``): else the name reads the rank
            known = _evaluate(assigned, zero, function, node, facts, depth - 1)
        except _Unsettled:
            known = None
        if known is not None:
            return known
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        truth = _compared(test, zero, divergence, node)
    else:
        value = _rank_value(test, zero, divergence, node)
        truth = value if isinstance(value, bool) else (None if value is None else value is _OTHER)
    if truth is not None:
        return truth
    if _turn_test(test, zero, divergence, node):
        key, negated = _leaf_key(test)
        known = next((value for name, value in facts if name == _OWN + key), None)
        return None if known is None else known != negated
    if taint is not None and taint.source is Source.RANK:
        raise _Unsettled
    key, negated = _leaf_key(test)
    known = next((value for name, value in facts if name == key), None)
    return None if known is None else known != negated


_NEGATED_OPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.NotEq: ast.Eq,
    ast.NotIn: ast.In,
    ast.IsNot: ast.Is,
}


def _leaf_key(test: ast.AST) -> tuple[str, bool]:
    """The name a fact about ``test`` is kept under, and whether the fact is about its
    negation (``kind != "x"`` is kept as ``kind == "x"`` being false)."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        negated_op = _NEGATED_OPS.get(type(test.ops[0]))
        if negated_op is not None:
            positive = ast.Compare(test.left, [negated_op()], test.comparators)
            return ast.unparse(positive), True
    return dotted_name(test) or ast.unparse(test), False


def _implied(
    test: ast.AST, truth: bool, facts: Facts, zero: bool, function: FunctionFacts, node: Node
) -> Facts | None:
    """``facts`` with what taking ``test`` as ``truth`` says of the parts of it that are
    the same on every rank; None when that contradicts them."""
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, truth = test.operand, not truth
    if isinstance(test, ast.BoolOp):
        every = truth == isinstance(test.op, ast.And)
        values = test.values
        if not every:
            # One part decided it: known only when no part is known to have done so
            # and a single part is left open; several open parts are known together
            # (``a and b and rank > 0`` false on another rank: ``a and b`` is false).
            truths = [_evaluate(v, zero, function, node, facts) for v in values]
            open_parts = [v for v, t in zip(values, truths, strict=True) if t is None]
            decided = truth in truths
            if len(open_parts) > 1 and not decided:
                return _with_fact(facts, _clause_key(test.op, open_parts), True)
            values = open_parts if len(open_parts) == 1 and not decided else []
        for value in values:
            implied = _implied(value, truth, facts, zero, function, node)
            if implied is None:
                return None
            facts = implied
        return facts
    if _turn_test(test, zero, function.divergence, node):
        key, negated = _leaf_key(test)
        return _with_fact(facts, _OWN + key, truth != negated)
    taint = function.divergence.taint(test, node)
    if taint is not None and taint.source is Source.RANK:
        return facts
    if isinstance(test, ast.expr) and function.divergence.asks_several(test) is (not truth):
        return None  # one process: no peer to part from
    key, negated = _leaf_key(test)
    return _with_fact(facts, key, truth != negated)


#: How the name of a fact only one rank's way knows starts (``rank == turn``): the
#: classes' ways are compared whatever each one's own facts say.
_OWN = "#own "


def _turn_test(test: ast.AST, zero: bool, divergence: Divergence, node: Node) -> bool:
    """``rank == turn`` / ``rank != turn``: the rank against a value every rank shares
    that is no constant (a loop's turn over the ranks). A class cannot settle it, but
    each rank answers it alike wherever it is asked again with the same value: one
    rank of the class, or none, holds the turn."""
    if not (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Eq, ast.NotEq))
    ):
        return False
    sides = (test.left, test.comparators[0])
    for rank, other in (sides, sides[::-1]):
        if (
            not isinstance(other, ast.Constant)
            and divergence.taint(other, node) is None
            and _rank_value(rank, zero, divergence, node) is not None
        ):
            return True
    return False


def _with_fact(facts: Facts, key: str, kept: bool) -> Facts | None:
    """``facts`` with ``key`` known as ``kept``; None when they say otherwise."""
    known = dict(facts)
    if known.get(key, kept) != kept:
        return None
    known[key] = kept
    return None if _broken_clause(known) else facts | {(key, kept)}


#: How a clause fact's name starts: not all of its leaf facts hold together.
_CLAUSE = "#not all of "


def _clause_key(op: ast.boolop, parts: list[ast.expr]) -> str:
    """The name of the fact that ``a and b`` is false (not all of ``a``, ``b`` hold) or
    that ``a or b`` is true (not all of them fail): a clause over the parts' leaf facts."""
    literals = []
    for part in parts:
        key, negated = _leaf_key(part)
        literals.append([key, negated != isinstance(op, ast.And)])
    return _CLAUSE + json.dumps(sorted(literals))


def _broken_clause(known: dict[str, bool]) -> bool:
    """Whether ``known`` makes every leaf fact of one of its clauses hold."""
    return any(
        all(known.get(leaf) == value for leaf, value in json.loads(name[len(_CLAUSE) :]))
        for name in known
        if name.startswith(_CLAUSE)
    )


#: A comparison read from the other side: ``0 < rank`` is ``rank > 0``.
_MIRRORED: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.Gt,
    ast.Gt: ast.Lt,
    ast.LtE: ast.GtE,
    ast.GtE: ast.LtE,
    ast.Eq: ast.Eq,
    ast.NotEq: ast.NotEq,
}


def _compared(test: ast.Compare, zero: bool, divergence: Divergence, node: Node) -> bool | None:
    """A one-operator comparison of a rank read with constants, the rank on either
    side (``local_rank > 0``, ``0 < local_rank``); None if it is not one."""
    op, right = test.ops[0], test.comparators[0]
    left = _rank_value(test.left, zero, divergence, node)
    if left is None and type(op) in _MIRRORED:
        left = _rank_value(right, zero, divergence, node)
        op, right = _MIRRORED[type(op)](), test.left
    return _compare(left, op, right)


def _other_rank_order(op: ast.cmpop, constant: int) -> bool | None:
    """``rank OP constant`` for every rank from 1 up, when they all answer alike."""
    if isinstance(op, ast.Gt):
        return True if constant < 1 else None
    if isinstance(op, ast.GtE):
        return True if constant <= 1 else None
    if isinstance(op, ast.Lt):
        return False if constant <= 1 else None
    if isinstance(op, ast.LtE):
        return False if constant < 1 else None
    return None


def _compare(left: object, op: ast.cmpop, right: ast.AST) -> bool | None:
    if left is None:
        return None
    try:
        literal = ast.literal_eval(right)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    constants = list(literal) if isinstance(literal, (tuple, list, set, frozenset)) else [literal]
    if not constants:
        return None
    if not all(isinstance(c, (int, bool)) for c in constants):
        return None
    if left is _OTHER:
        if isinstance(op, (ast.Eq, ast.In, ast.Is, ast.NotEq, ast.NotIn, ast.IsNot)):
            if any(c > 0 for c in constants):
                return None  # rank 1, 2... are not one class against a positive constant
            equal = False
        elif len(constants) == 1:
            return _other_rank_order(op, int(constants[0]))
        else:
            return None
        order: dict[type[ast.cmpop], bool] = {}
    else:
        equal = left in constants
        value = left if isinstance(left, int) else 0
        constant = constants[0] if isinstance(constants[0], int) else 0
        order = {
            ast.Gt: value > constant,
            ast.GtE: value >= constant,
            ast.Lt: value < constant,
            ast.LtE: value <= constant,
        }
    if isinstance(op, (ast.Eq, ast.In, ast.Is)):
        return equal
    if isinstance(op, (ast.NotEq, ast.NotIn, ast.IsNot)):
        return not equal
    return order.get(type(op))


Walk = tuple[Facts, Sequence_]


def _class_walks(
    function: FunctionFacts,
    zero: bool,
    ignored: frozenset[int] = frozenset(),
    between: tuple[Node, Node] | None = None,
) -> list[Walk] | None:
    """The ways through the whole function (or ``between`` a node and one that
    post-dominates it) for rank 0 or for another rank: what each way's tests and loop
    steps said of values every rank shares (a later test of the same flag goes the same
    way), and the collectives it issues; None past ``MAX_PATHS``. A way that comes round
    a loop whose trip issued collectives ends there, marked as going on with the loop; a
    trip that issued none goes on past the loop."""
    found: list[Walk] = []
    empty: Facts = frozenset()
    first, stop = between if between is not None else (function.graph.entry, None)
    start: tuple[Node, Sequence_, dict[int, int], Facts] = (first, (), {}, empty)
    stack = [start]
    steps = 0
    while stack:
        node, issued, entered, facts = stack.pop()
        steps += 1
        if steps > MAX_STEPS:
            return None
        if node is stop or node.kind in (NodeKind.EXIT, NodeKind.RAISE):
            found.append((facts, issued))
        elif node.index in entered:
            if len(issued) > entered[node.index]:
                marked: Sequence_ = (*issued, f"#loop{node.index}")
                found.append((facts | {(f"#round{node.index}", True)}, marked))
                stack.extend(_leaving(function, node, marked, entered, facts))
            else:
                for successor, _ in function.ways(node):
                    if successor.index not in entered:
                        stack.append((successor, issued, entered, facts))
        else:
            stack.extend(_class_steps(function, zero, node, issued, entered, facts, ignored))
        if len(found) > MAX_PATHS:
            return None
    return found


def _leaving(
    function: FunctionFacts, head: Node, issued: Sequence_, entered: dict[int, int], facts: Facts
) -> Iterator[tuple[Node, Sequence_, dict[int, int], Facts]]:
    """The way on past a loop whose trip issued collectives, after one or more trips
    (its head's exit): the collectives after the loop, or of an outer loop's next
    trip, are the ones a rank that left the loop early (a ``break`` on one class)
    skips. The way that goes round again is another: a shared fact tells them apart."""
    if head.kind not in (NodeKind.STEP, NodeKind.TEST):
        return
    for successor, edge in function.ways(head):
        if edge is EdgeKind.FALSE and successor.index not in entered:
            yield successor, issued, entered, facts | {(f"#round{head.index}", False)}


def _class_steps(
    function: FunctionFacts,
    zero: bool,
    node: Node,
    issued: Sequence_,
    entered: dict[int, int],
    facts: Facts,
    ignored: frozenset[int],
) -> Iterator[tuple[Node, Sequence_, dict[int, int], Facts]]:
    """The ways on from ``node`` that a rank of the class can take (the collectives of
    ``ignored`` nodes left out)."""
    entered = {**entered, node.index: len(issued)}
    if node.index not in ignored:
        issued = issued + tuple(c for c, _ in function.effects.get(node.index, []))
    statement = node.statement
    # An assert the class fails is an error path: the way ends there.
    test = statement.test if isinstance(statement, (ast.If, ast.While, ast.Assert)) else None
    if node.kind is not NodeKind.TEST:
        test = None
    ways = function.ways(node)
    if [edge for _, edge in ways] == [EdgeKind.NEXT]:
        test = None  # no branch issues anything: nothing to settle
    try:
        truth = _evaluate(test, zero, function, node, facts) if test is not None else None
    except _Unsettled:
        if not isinstance(statement, ast.Assert):
            raise
        # An assert the class cannot answer (``assert rank < world_size``) is taken as
        # passing: where it fails, the AssertionError stops the process and the
        # launcher the others (under ``python -O`` it does not run at all).
        test, truth = None, None
    # A test on values every rank shares goes one way for both classes wherever both
    # reach it: two ways that took it apart are not compared (``done`` ... ``continue``
    # on one way, the rest of the loop on the other), even where its parts leave no
    # fact of their own.
    taint = function.divergence.test_taint(node) if test is not None else None
    shared = len(ways) > 1 and (taint is None or taint.source is not Source.RANK)
    for successor, edge in ways:
        following: Facts | None = facts
        taken = edge is EdgeKind.TRUE
        if edge is EdgeKind.NEXT:
            pass  # a decision no branch of which issues anything: straight to its join
        elif test is not None:
            if truth is not None and truth != taken:
                continue
            following = _implied(test, taken, facts, zero, function, node)
            if following is not None and shared:
                following = following | {(f"#test{node.index}", taken)}
        elif node.kind is NodeKind.STEP:
            following = facts | {(f"#step{node.index}", taken)}
        if following is not None:
            yield successor, issued, entered, following


def _compatible(first: Facts, second: Facts) -> bool:
    known = dict(first)
    if not all(
        known.get(name, truth) == truth for name, truth in second if not name.startswith(_OWN)
    ):
        return False
    known.update(second)
    return not _broken_clause(known)


class _Unsettled(Exception):
    """A test on the rank that a class walk cannot settle."""


def rank_classes_agree(function: FunctionFacts, ignored: frozenset[int] = frozenset()) -> bool:
    """Whether rank 0 and the other ranks issue the same collectives whenever the
    values they share are the same (the collectives of ``ignored`` nodes left out);
    past the walks' budgets they are not shown to agree, and each test's own
    branches decide."""
    return _walks_agree(lambda zero: _class_walks(function, zero, ignored))


#: Later meeting points tried per rank test before the answer is "cannot tell".
MAX_MEETINGS = 32


def classes_meet_again(function: FunctionFacts, test: Node, tests: list[Node]) -> bool:
    """Whether rank 0 and the other ranks, parted at the rank test ``test``, issue the
    same collectives between a rank test of ``tests`` (``test`` itself or one before it)
    and a later point every way from both passes, where the branches of one of them
    meet: main process first, its two halves far apart in a long function whose whole
    walk is past the budgets. Values the classes share are settled from the first test
    on only, so a meeting is found where the ways between agree whatever came before."""
    after = set(_post_dominators(function, test))
    meetings = {function.dominance.immediate(t) for t in tests} - {None}
    tried = 0
    for first in [test, *(t for t in tests if t is not test)]:
        for stop in _post_dominators(function, first):
            if stop not in meetings or stop not in after:
                continue
            if first is not test and avoids(first, test, stop):
                continue
            tried += 1
            if tried > MAX_MEETINGS:
                return False
            if _walks_agree(partial(_class_walks, function, between=(first, stop))):
                return True
    return False


def _post_dominators(function: FunctionFacts, node: Node) -> Iterator[Node]:
    """The nodes every way from ``node`` passes, nearest first (the exit left out)."""
    found = function.dominance.immediate(node)
    while found is not None and found.kind is not NodeKind.EXIT:
        yield found
        found = function.dominance.immediate(found)


def classes_agree_in_turn(functions: list[FunctionFacts]) -> bool:
    """Whether rank 0 and the other ranks issue the same collectives over functions
    that run one after the other on every rank (a context manager's ``__enter__`` and
    then its ``__exit__``: the enter barrier of the others pairs with the exit barrier
    of rank 0), whenever the values they share are the same."""
    return _walks_agree(lambda zero: _walks_in_turn(functions, zero))


def _walks_agree(walks: Callable[[bool], list[Walk] | None]) -> bool:
    """Whether every walk of rank 0 issues the collectives of every walk of the other
    ranks it is compatible with (``walks(zero)`` gives one class's walks)."""
    try:
        zero = walks(True)
        other = walks(False)
    except _Unsettled:
        return False
    if zero is None or other is None:
        return False
    return all(
        kinds(first) == kinds(second)
        for zero_facts, first in zero
        for other_facts, second in other
        if _compatible(zero_facts, other_facts)
    )


def _walks_in_turn(functions: list[FunctionFacts], zero: bool) -> list[Walk] | None:
    """A class's ways through ``functions`` run in turn: each way of one followed by
    each way of the next that its facts allow; None past ``MAX_PATHS``."""
    walks: list[Walk] = [(frozenset(), ())]
    for function in functions:
        found = _class_walks(function, zero)
        if found is None:
            return None
        walks = [
            (facts | more, issued + further)
            for facts, issued in walks
            for more, further in found
            if _compatible(facts, more)
        ]
        if len(walks) > MAX_PATHS:
            return None
    return walks


def class_arguments_apart(function: FunctionFacts) -> ArgumentsApart | None:
    """Where rank 0 and the other ranks issue the same kinds of collective but pass
    one of them an agreed argument that plainly differs (``if rank == 0: reduce(t,
    dst=0)`` / ``else: reduce(t, dst=1)``, or two complementary ``if``s); the way of
    rank 0 first."""
    for first, second in paired_class_walks(function):
        apart = arguments_apart(first, second)
        if apart is not None:
            return apart
    return None


def paired_class_walks(function: FunctionFacts) -> list[tuple[Sequence_, Sequence_]]:
    """Each way of rank 0 beside each way of another rank that can happen in one run
    (their settled facts agree): rank 0's sequence first; none where a class cannot
    be walked."""
    try:
        zero = _class_walks(function, True)
        other = _class_walks(function, False)
    except _Unsettled:
        return []
    if zero is None or other is None:
        return []
    return [
        (first, second)
        for zero_facts, first in zero
        for other_facts, second in other
        if _compatible(zero_facts, other_facts)
    ]


def class_sequences(function: FunctionFacts, zero: bool) -> list[Sequence_] | None:
    """The collective sequences of rank 0's ways through the function (``zero``) or of
    another rank's; None where the class cannot be walked (a rank test it cannot
    settle, past the budgets)."""
    try:
        walks = _class_walks(function, zero)
    except _Unsettled:
        return None
    return None if walks is None else [sequence for _, sequence in walks]


def class_order_apart(function: FunctionFacts) -> tuple[Collective, Collective] | None:
    """Where rank 0 and the other ranks issue the same collectives but in another
    order (``if rank == 0: all_reduce(a); broadcast(b)`` / ``else: broadcast(b);
    all_reduce(a)``, or two complementary ``if``s around a shared collective): the
    first each issues where they differ, rank 0's first."""
    for first, second in paired_class_walks(function):
        if kinds(first) == kinds(second):
            continue
        if sorted(map(str, kinds(first))) != sorted(map(str, kinds(second))):
            continue
        difference = first_difference(first, second)
        if difference is not None:
            mine, theirs = difference
            if isinstance(mine, Collective) and isinstance(theirs, Collective):
                return mine, theirs
    return None


# -- the question ----------------------------------------------------------------------


def class_truth(test: ast.AST, zero: bool, function: FunctionFacts, node: Node) -> bool | None:
    """The truth of ``test`` (read at ``node``) for rank 0 (``zero``) or for every other
    rank; None where that class does not settle it."""
    try:
        return _evaluate(test, zero, function, node, frozenset())
    except _Unsettled:
        return None


def settled_by_class(function: FunctionFacts, test: Node) -> bool:
    """Whether ``test`` reads the rank only in ways each rank class answers for itself
    (the rest of it is the same on every rank)."""
    statement = test.statement
    if test.kind is not NodeKind.TEST or not isinstance(statement, (ast.If, ast.While)):
        return False
    taint = function.divergence.test_taint(test)
    if taint is None or taint.source is not Source.RANK:
        return False
    try:
        for zero in (True, False):
            _evaluate(statement.test, zero, function, test, frozenset())
    except _Unsettled:
        return False
    return True


def class_culprits(function: FunctionFacts, tests: list[Node]) -> set[int]:
    """Of rank tests whose classes disagree, those whose own region explains it: with
    its collectives left out, rank 0 and the others agree (the rank-0-only call, not
    the main-process-first pair around it). Empty when no single test does."""
    culprits: set[int] = set()
    for test in tests:
        region = frozenset(node.index for node in function.dominance.region(test))
        if region and rank_classes_agree(function, region):
            culprits.add(test.index)
    return culprits
