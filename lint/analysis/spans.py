"""Spans whose two ends move alike: ``range(rank * n, (rank + 1) * n)`` is ``n`` long on
every rank, though its items differ.

Each bound is read as a polynomial with integer coefficients over the values it is built
from (names bound once stand for their values); the span's length is the difference of
the two. What that difference is built from decides whether the length can differ
between ranks; anything else (``min(total, start + n)``, a division) is a value of its
own, and a length that still reads the rank through it is not known to agree.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

#: A product of values (their spellings, sorted) -> its coefficient.
Polynomial = dict[tuple[str, ...], int]

#: How many names a bound is followed through to the values bound to them.
NAME_DEPTH = 4


class _Reader:
    """Reads expressions as polynomials, keeping the expression of each value."""

    def __init__(self, single: Mapping[str, ast.expr]) -> None:
        self.single = single
        self.values: dict[str, ast.expr] = {}

    def read(self, expression: ast.expr, depth: int = NAME_DEPTH) -> Polynomial:
        if isinstance(expression, ast.Constant) and type(expression.value) is int:
            return {(): expression.value} if expression.value else {}
        if isinstance(expression, ast.Name) and depth > 0 and expression.id in self.single:
            return self.read(self.single[expression.id], depth - 1)
        if isinstance(expression, ast.UnaryOp) and isinstance(expression.op, ast.USub):
            return _scaled(self.read(expression.operand, depth), -1)
        if isinstance(expression, ast.BinOp) and isinstance(
            expression.op, (ast.Add, ast.Sub, ast.Mult)
        ):
            left = self.read(expression.left, depth)
            right = self.read(expression.right, depth)
            if isinstance(expression.op, ast.Add):
                return _sum(left, right)
            if isinstance(expression.op, ast.Sub):
                return _sum(left, _scaled(right, -1))
            return _product(left, right)
        spelled = ast.unparse(expression)
        self.values[spelled] = expression
        return {(spelled,): 1}


def _sum(first: Polynomial, second: Polynomial) -> Polynomial:
    found = dict(first)
    for term, coefficient in second.items():
        found[term] = found.get(term, 0) + coefficient
    return {term: c for term, c in found.items() if c}


def _scaled(polynomial: Polynomial, factor: int) -> Polynomial:
    return {term: c * factor for term, c in polynomial.items() if c * factor}


def _product(first: Polynomial, second: Polynomial) -> Polynomial:
    found: Polynomial = {}
    for left, a in first.items():
        for right, b in second.items():
            term = tuple(sorted(left + right))
            found[term] = found.get(term, 0) + a * b
    return {term: c for term, c in found.items() if c}


def span_length_reads(
    start: ast.expr, end: ast.expr, single: Mapping[str, ast.expr]
) -> list[ast.expr]:
    """The values the length ``end - start`` is built from (none: a constant length),
    through the names ``single`` binds once."""
    reader = _Reader(single)
    difference = _sum(reader.read(end), _scaled(reader.read(start), -1))
    used = {spelled for term in difference for spelled in term}
    return [reader.values[spelled] for spelled in sorted(used)]
