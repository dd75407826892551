"""Iterables whose iteration never ends, on CPython's ``ast``: ``itertools.cycle(x)``,
``itertools.count()``, ``itertools.repeat(x)`` without a count; a call of a generator
function that loops forever (its yields inside a ``while True:`` at the top of its body
that no ``break`` leaves, and no ``return`` anywhere); an instance of a class whose
``__iter__`` is such a generator (``InfiniteIterator(loader)``, which restarts the
loader when it runs out), of this module or, through the project's object kinds
(``ENDLESS_ITERABLE``), of another. A loop over one has no epoch end: what happens "at
the end of the epoch" never does, and no partial group is left over there.

Nothing is imported or run; an unknown call is not endless.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from ddplint.analysis.constants import ScopedConstants
from ddplint.analysis.control_flow import own_nodes
from ddplint.analysis.names import Names, passed_argument

_ENDLESS_CALLS = frozenset({"itertools.cycle", "itertools.count"})
_REPEAT = "itertools.repeat"
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def is_endless_generator(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a call of ``function`` makes a generator that never runs out: it has no
    ``return``, and a ``while True:`` among the top-level statements of its body (or of
    a ``with`` there) holds a ``yield`` and no ``break`` of its own."""
    if any(isinstance(node, ast.Return) for node in own_nodes(function)):
        return False
    return any(_yields_forever(loop) for loop in _top_level_loops(function.body))


def _top_level_loops(body: list[ast.stmt]) -> Iterator[ast.While]:
    for statement in body:
        if isinstance(statement, ast.While) and _always_true(statement.test):
            yield statement
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            yield from _top_level_loops(statement.body)


def _always_true(test: ast.expr) -> bool:
    return isinstance(test, ast.Constant) and bool(test.value) and test.value is not Ellipsis


def _yields_forever(loop: ast.While) -> bool:
    if any(True for _ in _own_breaks(loop.body)):
        return False
    return any(isinstance(node, (ast.Yield, ast.YieldFrom)) for node in own_nodes(loop))


def _own_breaks(body: list[ast.stmt]) -> Iterator[ast.Break]:
    """The ``break`` statements of ``body`` that leave the loop ``body`` belongs to: not
    those of a loop nested in it (an ``else:`` of a nested loop is still this loop's)."""
    for statement in body:
        if isinstance(statement, ast.Break):
            yield statement
        elif isinstance(statement, _LOOPS):
            yield from _own_breaks(statement.orelse)
        elif not isinstance(statement, _SCOPES):
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                for part in getattr(statement, field, ()):
                    yield from _own_breaks(part.body if not isinstance(part, ast.stmt) else [part])


class EndlessIterables:
    """Which iterables of one module never run out. ``makes_endless``: whether a call
    makes an endless iterable by object typing (a class of this module or another, a
    project factory); ``local_function``: the module's function a call runs, if any."""

    def __init__(
        self,
        names: Names,
        constants: ScopedConstants,
        makes_endless: Callable[[ast.Call], bool],
        local_function: Callable[[ast.Call], ast.FunctionDef | ast.AsyncFunctionDef | None],
    ) -> None:
        self._names = names
        self._constants = constants
        self._makes_endless = makes_endless
        self._local_function = local_function

    def is_endless(self, expression: ast.expr, scope: ast.AST) -> bool:
        """Whether iterating over ``expression`` (read in ``scope``) never ends: an
        endless call, or a name bound once to one."""
        if isinstance(expression, ast.Name):
            bound = self._constants.single_assignment(
                self._constants.owner_of(scope), expression.id
            )
            if bound is None:
                return False
            expression = bound[0]
        if not isinstance(expression, ast.Call):
            return False
        called = self._names.resolve(expression.func)
        if called in _ENDLESS_CALLS:
            return True
        if called == _REPEAT:
            return passed_argument(expression, "times", 1) is None
        function = self._local_function(expression)
        if function is not None:
            return is_endless_generator(function)
        return self._makes_endless(expression)
