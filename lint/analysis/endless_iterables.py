"""Iterables whose iteration never ends, on CPython's ``ast``: ``itertools.cycle(x)``,
``itertools.count()``, ``itertools.repeat(x)`` without a count; a call of a generator
function that loops forever (its yields inside a ``while True:`` at the top of its body
that no ``break`` leaves, and no ``return`` anywhere); an instance of a class whose
``__iter__`` is such a generator (``InfiniteIterator(loader)``, which restarts the
loader when it runs out), of this module or, through the project's object kinds
(``ENDLESS_ITERABLE``), of another. A wrapper that yields the items of its first
argument until they run out (a prefetcher: ``PrefetchLoader(loader)``, a generator
``def to_device(loader): for b in loader: yield ...``; ``FIRST_ARGUMENT_ITEMS``) is endless
when what it wraps is. A loop over one has no epoch end: what happens "at the end of the
epoch" never does, and no partial group is left over there.

Nothing is imported or run; an unknown call is not endless.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from ddplint.analysis.constants import ScopedConstants, call_parameters
from ddplint.analysis.control_flow import own_nodes
from ddplint.analysis.names import Names, passed_argument
from ddplint.analysis.object_kinds import ENDLESS_ITERABLE, FIRST_ARGUMENT_ITEMS
from ddplint.analysis.straight_bindings import last_straight_binding

_ENDLESS_CALLS = frozenset({"itertools.cycle", "itertools.count"})
_REPEAT = "itertools.repeat"
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
#: Calls that walk the items of their one argument as they are.
_DRAWING = frozenset({"iter", "enumerate"})
#: How many wrappers deep ``is_endless`` follows an argument.
_WRAPPER_DEPTH = 4


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


def drawn_source(function: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The parameter or field (``loader``, ``self.loader``) whose items ``function``
    yields until they run out, with no end of its own; None when it does not.

    A generator qualifies when every loop of its own walks that one source (``for b in
    loader``, ``iter(self.loader)`` drawn by ``next`` under ``while batch is not None:``
    or ``while True:``, ``yield from loader``) and no ``break`` or ``return`` leaves
    but in an ``except`` handler (where the source ran out); a plain function when its
    body returns ``iter(source)``. A loop over ``range(n)``, a count tested, a second
    source: None."""
    body = [s for s in function.body if not _is_docstring(s)]
    nodes = list(own_nodes(function))
    if not any(isinstance(node, (ast.Yield, ast.YieldFrom)) for node in nodes):
        if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
            returned = body[0].value
            if isinstance(returned, ast.Call) and _called(returned) == "iter":
                return _source(returned, {})
        return None
    drawn_into = _drawn_locals(nodes)
    handled = {id(n) for h in nodes if isinstance(h, ast.ExceptHandler) for n in ast.walk(h)}
    sources: set[str | None] = set()
    for node in nodes:
        if isinstance(node, (ast.Break, ast.Return)) and id(node) not in handled:
            return None
        if isinstance(node, ast.While) and not _open_test(node.test):
            return None
        if isinstance(node, (ast.For, ast.AsyncFor)):
            sources.add(_source(node.iter, drawn_into))
        elif isinstance(node, ast.YieldFrom):
            sources.add(_source(node.value, drawn_into))
        elif isinstance(node, ast.Call) and _called(node) in _DRAWING:
            sources.add(_source(node, drawn_into))
    if len(sources) != 1:
        return None
    return sources.pop()


def _draws_first_parameter(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether ``function`` yields the items of the parameter a call's first argument
    fills until they run out."""
    drawn = drawn_source(function)
    parameters = call_parameters(function)
    return drawn is not None and bool(parameters) and drawn == parameters[0].arg


def _is_docstring(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)


def _called(call: ast.Call) -> str | None:
    return call.func.id if isinstance(call.func, ast.Name) else None


def _drawn_locals(nodes: list[ast.AST]) -> dict[str, ast.expr]:
    """Local names bound to ``iter(x)`` / ``enumerate(x)``: what they walk is ``x``."""
    found: dict[str, ast.expr] = {}
    for node in nodes:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
            and _called(node.value) in _DRAWING
        ):
            found[node.targets[0].id] = node.value
    return found


def _source(expression: ast.expr, drawn_into: dict[str, ast.expr]) -> str | None:
    """The parameter or ``self`` field ``expression`` walks (through ``iter``,
    ``enumerate`` and names bound to them); None for anything else."""
    for _ in range(_WRAPPER_DEPTH):
        if isinstance(expression, ast.Call) and _called(expression) in _DRAWING:
            if len(expression.args) != 1 or expression.keywords:
                return None
            expression = expression.args[0]
        elif isinstance(expression, ast.Name) and expression.id in drawn_into:
            expression = drawn_into[expression.id]
        else:
            break
    if isinstance(expression, ast.Name):
        return expression.id
    if (
        isinstance(expression, ast.Attribute)
        and isinstance(expression.value, ast.Name)
        and expression.value.id == "self"
    ):
        return f"self.{expression.attr}"
    return None


def _open_test(test: ast.expr) -> bool:
    """A loop test that counts nothing: ``True``, ``batch``, ``not done``, ``batch is
    not None``: the loop ends where the items do."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        right = test.comparators[0]
        return (
            isinstance(test.ops[0], (ast.Is, ast.IsNot))
            and isinstance(right, ast.Constant)
            and right.value is None
            and isinstance(test.left, ast.Name)
        )
    return _always_true(test) or isinstance(test, ast.Name)


class EndlessIterables:
    """Which iterables of one module never run out. ``made_kind``: the object kind of
    what a call makes (a class of this module or another, a project factory);
    ``local_function``: the module's function a call runs, if any."""

    def __init__(
        self,
        names: Names,
        constants: ScopedConstants,
        made_kind: Callable[[ast.Call], str | None],
        local_function: Callable[[ast.Call], ast.FunctionDef | ast.AsyncFunctionDef | None],
    ) -> None:
        self._names = names
        self._constants = constants
        self._made_kind = made_kind
        self._local_function = local_function

    def is_endless(self, expression: ast.expr, scope: ast.AST, depth: int = 0) -> bool:
        """Whether iterating over ``expression`` (read in ``scope``) never ends: an
        endless call, a wrapper of an endless iterable, or a name that holds one where
        it is read (bound once, or last bound by a plain statement before it)."""
        if isinstance(expression, ast.Name):
            bound = self._binding(expression, scope)
            if bound is None:
                return False
            expression = bound
        if not isinstance(expression, ast.Call) or depth > _WRAPPER_DEPTH:
            return False
        called = self._names.resolve(expression.func)
        if called in _ENDLESS_CALLS:
            return True
        if called == _REPEAT:
            return passed_argument(expression, "times", 1) is None
        function = self._local_function(expression)
        if function is not None:
            if is_endless_generator(function):
                return True
            kind = FIRST_ARGUMENT_ITEMS if _draws_first_parameter(function) else None
        else:
            kind = self._made_kind(expression)
        if kind == FIRST_ARGUMENT_ITEMS:
            wrapped = expression.args[0] if expression.args else None
            return wrapped is not None and self.is_endless(wrapped, scope, depth + 1)
        return kind == ENDLESS_ITERABLE

    def _binding(self, name: ast.Name, scope: ast.AST) -> ast.expr | None:
        """The value ``name`` holds where it is read: its one binding in the scope, or
        the last plain ``name = value`` before the read in the scope's function."""
        owner = self._constants.owner_of(scope)
        bound = self._constants.single_assignment(owner, name.id)
        if bound is not None:
            return bound[0]
        if isinstance(owner, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return last_straight_binding(owner, name, name.id)
        return None
