"""Tests on an enumerate counter and how far they are from what they mean.

- a last-batch test: ``i == len(loader) - 1``, ``i + 1 == num_batches``, ``i != ...``;
  with the loop's start it says whether the test hits the last batch, one past it
  (never true) or one before it (one batch early);
- a periodic test: ``(i + 1) % k == 0``, ``i % k == 0``, ``not (i + 1) % k``; with the
  start it says whether it fires after every k-th batch or on the first batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ddplint.code.steps.loop_facts import EnumerateLoop
from ddplint.code.syntax.constants import literal_value


def counter_offset(loop: EnumerateLoop, expr: cst.BaseExpression) -> int | None:
    """``a`` when ``expr`` is ``counter + a`` (``counter``, ``counter - 1``, ``1 + counter``)."""
    if loop.is_counter(expr):
        return 0
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract)):
        sign = 1 if isinstance(expr.operator, cst.Add) else -1
        right = literal_value(expr.right)
        if loop.is_counter(expr.left) and _is_int(right):
            return sign * right  # type: ignore[operator]
        left = literal_value(expr.left)
        if sign == 1 and loop.is_counter(expr.right) and _is_int(left):
            return left  # type: ignore[return-value]
    return None


def length_offset(
    loop: EnumerateLoop, expr: cst.BaseExpression
) -> tuple[cst.BaseExpression, int] | None:
    """(the length node, ``b``) when ``expr`` is ``len(iterable) + b``."""
    if loop.is_length(expr):
        return expr, 0
    if (
        isinstance(expr, cst.BinaryOperation)
        and isinstance(expr.operator, (cst.Add, cst.Subtract))
        and loop.is_length(expr.left)
    ):
        right = literal_value(expr.right)
        if _is_int(right):
            sign = 1 if isinstance(expr.operator, cst.Add) else -1
            return expr.left, sign * right  # type: ignore[operator]
    return None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class LastBatchTest:
    """``counter + a == len(iterable) + b`` (or ``!=``), sides in either order."""

    comparison: cst.Comparison
    counter_side: cst.BaseExpression
    length_side: cst.BaseExpression
    length: cst.BaseExpression
    counter_offset: int
    length_offset: int
    equal: bool

    def batches_past_last(self, start: int) -> int:
        """0 when the test picks the last batch; 1 when it picks one past the end
        (``==`` never true); -1 when it picks the batch before the last."""
        # counter == len + b - a, and the last counter is start + len - 1.
        return (self.length_offset - self.counter_offset) - (start - 1)


def last_batch_test(loop: EnumerateLoop, expr: cst.BaseExpression) -> LastBatchTest | None:
    if not isinstance(expr, cst.Comparison) or len(expr.comparisons) != 1:
        return None
    target = expr.comparisons[0]
    if not isinstance(target.operator, (cst.Equal, cst.NotEqual)):
        return None
    equal = isinstance(target.operator, cst.Equal)
    for counter_side, length_side in (
        (expr.left, target.comparator),
        (target.comparator, expr.left),
    ):
        a = counter_offset(loop, counter_side)
        found = length_offset(loop, length_side)
        if a is not None and found is not None:
            length, b = found
            return LastBatchTest(expr, counter_side, length_side, length, a, b, equal)
    return None


@dataclass(frozen=True)
class PeriodicTest:
    """``(counter + a) % period == 0`` (or ``not (counter + a) % period``)."""

    test: cst.BaseExpression
    counter_side: cst.BaseExpression
    counter_offset: int
    period: cst.BaseExpression

    def groups_off_by(self, start: int) -> int:
        """0 when the test fires after every k-th batch (counted from one); 1 when it
        fires on the very first batch (a group of one); -1 when the first group is one
        batch short (it fires after batch k - 1)."""
        return (1 - start) - self.counter_offset


def periodic_test(loop: EnumerateLoop, expr: cst.BaseExpression) -> PeriodicTest | None:
    modulo: cst.BaseExpression | None = None
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        modulo = expr.expression
    elif (
        isinstance(expr, cst.Comparison)
        and len(expr.comparisons) == 1
        and isinstance(expr.comparisons[0].operator, cst.Equal)
    ):
        left, right = expr.left, expr.comparisons[0].comparator
        if literal_value(right) == 0 and not isinstance(literal_value(right), bool):
            modulo = left
        elif literal_value(left) == 0 and not isinstance(literal_value(left), bool):
            modulo = right
    if not (isinstance(modulo, cst.BinaryOperation) and isinstance(modulo.operator, cst.Modulo)):
        return None
    a = counter_offset(loop, modulo.left)
    period = literal_value(modulo.right)
    if a is None or (_is_int(period) and period <= 1):  # type: ignore[operator]
        return None
    return PeriodicTest(expr, modulo.left, a, modulo.right)
