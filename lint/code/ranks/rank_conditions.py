"""Rank conditions as small boolean formulas, so that two guards can be compared.

``if rank == 0`` and ``if not trainer.is_global_zero`` read the same fact: both become
the atom ``global_rank==0`` (negated for the second). A condition is a formula over
*atoms* (rank-dependent leaves) and *shared* leaves (``epoch % 5 == 0``: the same value
on every rank). Evaluating it under a choice of atom values gives True, False, or the
shared rest, which is what lets the trace comparison in ``collective_traces`` see that
``if not is_main: barrier()`` ... ``if is_main: barrier()`` makes every rank call
``barrier`` once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

from ddplint.code.ranks.rank_predicates import RankPredicates
from ddplint.code.syntax.names import dotted_name


@dataclass(frozen=True)
class Atom:
    """A rank-dependent leaf. ``ranks`` is the set of global ranks where it holds, when
    the condition says so (``rank == 0`` -> {0}); ``members`` is the source of the
    collection in ``rank in <members>``."""

    key: str
    ranks: frozenset[int] | None = None
    members: str | None = None


@dataclass(frozen=True)
class Shared:
    """A leaf with the same value on every rank (``epoch % 5 == 0``)."""

    key: str


@dataclass(frozen=True)
class Not:
    operand: Formula


@dataclass(frozen=True)
class All:
    operands: tuple[Formula, ...]


@dataclass(frozen=True)
class AnyOf:
    operands: tuple[Formula, ...]


Formula = Atom | Shared | Not | All | AnyOf

GLOBAL_RANK = "global_rank"
LOCAL_RANK = "local_rank"
#: The atom "this is global rank 0", whatever spells it.
GLOBAL_ZERO = Atom(f"{GLOBAL_RANK}==0", frozenset({0}))
LOCAL_ZERO = Atom(f"{LOCAL_RANK}==0")
_GLOBAL_RANK_NAMES = frozenset({"rank", "global_rank", "world_rank", "process_index"})
_LOCAL_RANK_NAMES = frozenset({"local_rank", "local_process_index"})
_GLOBAL_ZERO_FLAGS = frozenset({"is_global_zero", "is_main_process"})
_GLOBAL_ZERO_FUNCTIONS = frozenset({"is_global_rank_zero", "is_rank_zero"})
_LOCAL_ZERO_FLAGS = frozenset({"is_local_zero", "is_local_main_process"})
_FLIPPED_OPERATORS: dict[type[cst.BaseCompOp], str] = {
    cst.Equal: "!=",
    cst.NotEqual: "==",
    cst.Is: "is not",
    cst.IsNot: "is",
    cst.In: "not in",
    cst.NotIn: "in",
}
_ORDER_FLIPS = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "==": "==", "!=": "!="}


def _operator(node: cst.BaseCompOp) -> str | None:
    return {
        cst.Equal: "==",
        cst.NotEqual: "!=",
        cst.LessThan: "<",
        cst.GreaterThan: ">",
        cst.LessThanEqual: "<=",
        cst.GreaterThanEqual: ">=",
        cst.In: "in",
        cst.NotIn: "not in",
    }.get(type(node))


def _int_literal(expr: cst.BaseExpression) -> int | None:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = _int_literal(expr.expression)
        return -inner if inner is not None else None
    if isinstance(expr, cst.Integer):
        value = expr.evaluated_value
        return value if isinstance(value, int) else None
    return None


def int_set(expr: cst.BaseExpression) -> frozenset[int] | None:
    """``{0, 1}`` for a literal list/tuple/set of ints."""
    if not isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
        return None
    values = [_int_literal(element.value) for element in expr.elements]
    if any(v is None for v in values):
        return None
    return frozenset(v for v in values if v is not None)


def evaluate(formula: Formula, true_atoms: frozenset[str]) -> bool | Formula:
    """True/False when the atom values decide it, else the rest (shared leaves only)."""
    return _substitute(formula, lambda atom: atom.key in true_atoms, {})


def settle(formula: Formula, known: dict[str, bool]) -> bool | Formula:
    """The formula once the shared leaves in ``known`` (by key) take their values:
    under ``if kind == "sharded":``, ``(rank == 0 and kind == "full") or kind ==
    "sharded"`` is True on every rank."""
    return _substitute(formula, lambda atom: atom, known)


def _substitute(
    formula: Formula, atom_value: Callable[[Atom], bool | Formula], known: dict[str, bool]
) -> bool | Formula:
    """``formula`` with each atom replaced by ``atom_value(atom)`` and each shared leaf
    by its value in ``known`` (when there), simplified."""
    if isinstance(formula, Atom):
        return atom_value(formula)
    if isinstance(formula, Shared):
        return known.get(formula.key, formula)
    if isinstance(formula, Not):
        inner = _substitute(formula.operand, atom_value, known)
        return (not inner) if isinstance(inner, bool) else Not(inner)
    deciding = isinstance(formula, AnyOf)  # a True decides an `or`, a False an `and`
    rest: list[Formula] = []
    for operand in formula.operands:
        value = _substitute(operand, atom_value, known)
        if isinstance(value, bool):
            if value is deciding:
                return deciding
            continue
        rest.append(value)
    if not rest:
        return not deciding
    if len(rest) == 1:
        return rest[0]
    return AnyOf(tuple(rest)) if deciding else All(tuple(rest))


def atoms_of(formula: Formula) -> frozenset[str]:
    if isinstance(formula, Atom):
        return frozenset({formula.key})
    if isinstance(formula, Shared):
        return frozenset()
    if isinstance(formula, Not):
        return atoms_of(formula.operand)
    return frozenset().union(*(atoms_of(o) for o in formula.operands))


def admitted_ranks(formula: Formula) -> frozenset[int] | None:
    """The global ranks where ``formula`` can hold, when the condition pins them down
    (``rank == 0`` -> {0}, ``rank in [0, 1] and epoch > 2`` -> {0, 1}); else None."""
    if isinstance(formula, Atom):
        return formula.ranks
    if isinstance(formula, All):
        known = [admitted_ranks(o) for o in formula.operands if not isinstance(o, Shared)]
        if not known or any(k is None for k in known):
            return None
        return frozenset.intersection(*(k for k in known if k is not None))
    return None


def members_of(formula: Formula) -> str | None:
    """``ranks`` for ``rank in ranks`` (alone or and-ed with shared leaves)."""
    if isinstance(formula, Atom):
        return formula.members
    if isinstance(formula, All):
        found = [members_of(o) for o in formula.operands if not isinstance(o, Shared)]
        return found[0] if len(found) == 1 else None
    return None


class RankConditions:
    """Builds the formula of a condition (None when it does not depend on the rank)."""

    def __init__(self, predicates: RankPredicates, code_of: Callable[[cst.CSTNode], str]) -> None:
        self._predicates = predicates
        self._code_of = code_of
        self._cache: dict[cst.CSTNode, Formula | None] = {}

    def text(self, node: cst.CSTNode) -> str:
        """The node's source on one line, whitespace collapsed."""
        return " ".join(self._code_of(node).split())

    def formula(self, expr: cst.BaseExpression) -> Formula | None:
        if expr in self._cache:
            return self._cache[expr]
        result = (
            self._build(expr, frozenset())
            if self._predicates.truth_is_rank_dependent(expr)
            else None
        )
        if result is not None and not atoms_of(result):
            result = None  # e.g. `local_rank != -1`: "launched distributed?", same everywhere
        self._cache[expr] = result
        return result

    def known_values(self, test: cst.BaseExpression, value: bool) -> dict[str, bool]:
        """The shared leaves (by key) that ``test`` having ``value`` pins down: each
        conjunct of a true ``a and b``, each disjunct of a false ``a or b``, through
        ``not``; rank-dependent parts pin nothing."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self.known_values(test.expression, not value)
        if isinstance(test, cst.BooleanOperation):
            splits = isinstance(test.operator, cst.And) == value
            if not splits:
                return {}
            return {
                **self.known_values(test.left, value),
                **self.known_values(test.right, value),
            }
        if self._predicates.truth_is_rank_dependent(test):
            return {}
        # A formula may keep ``not flag`` whole as one shared leaf: pin that spelling too.
        known = {self.text(test): value, f"not {self.text(test)}": not value}
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            # ``kind == "sharded"`` also settles ``kind != "sharded"``.
            target = test.comparisons[0]
            flipped = _FLIPPED_OPERATORS.get(type(target.operator))
            if flipped is not None:
                spelled = f"{self.text(test.left)} {flipped} {self.text(target.comparator)}"
                known[spelled] = not value
        return known

    def _build(self, expr: cst.BaseExpression, seen: frozenset[str]) -> Formula:
        if not self._predicates.truth_is_rank_dependent(expr):
            return Shared(self.text(expr))
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            return Not(self._build(expr.expression, seen))
        if isinstance(expr, cst.BooleanOperation):
            combine = All if isinstance(expr.operator, cst.And) else AnyOf
            parts: list[Formula] = []
            for side in (expr.left, expr.right):
                built = self._build(side, seen)
                parts.extend(built.operands if isinstance(built, combine) else (built,))
            return combine(tuple(parts))
        if isinstance(expr, cst.Name) and expr.value not in seen:
            value = self._predicates.assigned_value(expr)
            if value is not None and self._predicates.is_rank_dependent(value):
                return self._build(value, seen | {expr.value})
        if isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1:
            compared = self._comparison(expr)
            if compared is not None:
                return compared
        flag = self._flag(expr)
        return flag if flag is not None else Atom(self.text(expr))

    def _reading(self, expr: cst.BaseExpression) -> str:
        """``global_rank`` / ``local_rank`` for the usual spellings of each, else the text."""
        if isinstance(expr, cst.Call) and dotted_name(expr.func) == "int" and len(expr.args) == 1:
            expr = expr.args[0].value
        if isinstance(expr, cst.Name):
            value = self._predicates.assigned_value(expr)
            if value is not None and self._reading(value) in (GLOBAL_RANK, LOCAL_RANK):
                return self._reading(value)
        text = self.text(expr)
        if isinstance(expr, cst.Call) and not expr.args:
            last = (dotted_name(expr.func) or "").rsplit(".", 1)[-1]
            if last in ("get_rank", "get_global_rank"):
                return GLOBAL_RANK
            if last == "get_local_rank":
                return LOCAL_RANK
        last = (dotted_name(expr) or "").rsplit(".", 1)[-1]
        if last in _GLOBAL_RANK_NAMES or "'RANK'" in text or '"RANK"' in text:
            return GLOBAL_RANK
        if last in _LOCAL_RANK_NAMES or "LOCAL_RANK" in text:
            return LOCAL_RANK
        return text

    def _comparison(self, expr: cst.Comparison) -> Formula | None:
        target = expr.comparisons[0]
        op = _operator(target.operator)
        left, right = expr.left, target.comparator
        if op in ("in", "not in"):
            reading = self._reading(left)
            literal = int_set(right)
            if literal is not None:
                # -1 is the "not distributed" sentinel: no real rank has it.
                literal = frozenset(v for v in literal if v >= 0)
                if len(literal) == 1:
                    (only,) = literal
                    ranks = frozenset({only}) if reading == GLOBAL_RANK else None
                    atom = Atom(f"{reading}=={only}", ranks)
                    return Not(atom) if op == "not in" else atom
            ranks = literal if reading == GLOBAL_RANK else None
            members = self.text(right)
            atom = Atom(f"{reading} in {members}", ranks, members)
            return Not(atom) if op == "not in" else atom
        if op is None:
            return None
        number = _int_literal(right)
        if number is None and _int_literal(left) is not None:
            number, left, op = _int_literal(left), right, _ORDER_FLIPS[op]
        if number is None:
            return None
        if number < 0:
            # `local_rank == -1`: the "not launched distributed" sentinel, same on every rank.
            return Shared(self.text(expr))
        reading = self._reading(left)
        if (op, number) in (("==", 0), ("!=", 0), (">", 0), (">=", 1), ("<", 1), ("<=", 0)):
            zero = Atom(f"{reading}==0", frozenset({0}) if reading == GLOBAL_RANK else None)
            return zero if op in ("==", "<", "<=") else Not(zero)
        if op in ("==", "!="):
            ranks = frozenset({number}) if reading == GLOBAL_RANK else None
            atom = Atom(f"{reading}=={number}", ranks)
            return atom if op == "==" else Not(atom)
        return Atom(f"{reading}{op}{number}")

    def _flag(self, expr: cst.BaseExpression) -> Formula | None:
        """``trainer.is_global_zero``, ``accelerator.is_main_process``,
        ``is_global_rank_zero()``: flags that are true on one rank."""
        if isinstance(expr, cst.Call) and not expr.args:
            last = (dotted_name(expr.func) or "").rsplit(".", 1)[-1]
            if last in _GLOBAL_ZERO_FUNCTIONS:
                return GLOBAL_ZERO
            return None
        last = (dotted_name(expr) or "").rsplit(".", 1)[-1]
        if last in _GLOBAL_ZERO_FLAGS:
            return GLOBAL_ZERO
        if last in _LOCAL_ZERO_FLAGS:
            return LOCAL_ZERO
        return None
