"""The analysis core's values decided where they are set
(``ddplint.analysis.literal_values``) asked of LibCST nodes: the literal an expression
holds (``config["num_workers"]`` of a dict literal nothing writes), the tests such
values decide, and the code no run reaches because of them."""

from __future__ import annotations

import ast
from collections.abc import Callable
from functools import cached_property

import libcst as cst

from ddplint.analysis.literal_values import UNKNOWN, LiteralValues

#: 1-based (line, column, end_line, end_column) of a node, end exclusive.
Span = tuple[int, int, int, int]


class DecidedValues:
    """Answers for the nodes of one module; without the core's view (CPython refuses
    the file) every value is unknown and every test undecided."""

    def __init__(
        self,
        values: Callable[[], LiteralValues | None],
        ast_range: Callable[[ast.AST], Span],
        range_of: Callable[[cst.CSTNode], Span],
    ) -> None:
        self._values_of = values
        self._ast_range = ast_range
        self._range_of = range_of

    @cached_property
    def _values(self) -> LiteralValues | None:
        """The core's answers, built on first use."""
        return self._values_of()

    @cached_property
    def _expressions(self) -> dict[Span, ast.expr]:
        if self._values is None:
            return {}
        return {self._ast_range(e): e for e in self._values.expressions()}

    @cached_property
    def _decided_tests(self) -> dict[Span, bool]:
        if self._values is None:
            return {}
        return {self._ast_range(t): d for t, d in self._values.decided_tests()}

    @cached_property
    def _never_taken(self) -> list[tuple[int, int]]:
        if self._values is None:
            return []
        return [
            (arm[0].lineno, arm[-1].end_lineno or arm[0].lineno)
            for arm in self._values.never_taken()
        ]

    def value(self, node: cst.BaseExpression) -> object:
        """The literal ``node`` holds wherever it runs, else ``UNKNOWN``."""
        if self._values is None:
            return UNKNOWN
        found = self._expressions.get(self._range_of(node))
        return UNKNOWN if found is None else self._values.value(found)

    def decided(self, test: cst.BaseExpression) -> bool | None:
        """True / False when literal values decide ``test`` on every run, else None."""
        if not self._decided_tests:
            return None
        return self._decided_tests.get(self._range_of(test))

    def never_runs(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` lies in an arm no run takes (``if not USE_WANDB:`` with
        ``USE_WANDB = True``)."""
        if not self._never_taken:
            return False
        line = self._range_of(node)[0]
        return any(first <= line <= last for first, last in self._never_taken)
