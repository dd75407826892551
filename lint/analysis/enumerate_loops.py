"""``for i, batch in enumerate(loader[, start])`` loops on CPython's ``ast``: the counter,
its start, the dotted name of what is enumerated (progress wrappers seen through:
``enumerate(tqdm(loader))`` enumerates ``loader``), which expressions stand for its
length (``len(loader)`` or a name bound once to it), the last-batch tests on the counter
(``i == len(loader) - 1``, ``i + 1 == num_batches``, ``!=`` too) with how far they are
from the last batch, and the periodic tests (``(i + 1) % k == 0``, ``not i % k``) with
how far their groups are from counting batches from one.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeGuard

from ddplint.analysis.constants import ScopedConstants, nodes_within, scope_nodes
from ddplint.analysis.module_nodes import ModuleNodes
from ddplint.analysis.names import Names, dotted_name, passed_argument

_PROGRESS_WRAPPERS = frozenset({"tqdm", "track"})
_RESIZING_METHODS = frozenset({"append", "extend", "insert", "pop", "remove", "clear"})

Loop = ast.For | ast.AsyncFor


@dataclass(frozen=True)
class LastBatchTest:
    """``counter + a == len(iterable) + b`` (or ``!=``), sides in either order."""

    comparison: ast.Compare
    counter_side: ast.expr
    length_side: ast.expr
    length: ast.expr
    counter_offset: int
    length_offset: int
    equal: bool

    def batches_past_last(self, start: int) -> int:
        """0 when the test picks the last batch; 1 when it picks one past the end
        (``==`` never true); -1 when it picks the batch before the last."""
        # counter == len + b - a, and the last counter is start + len - 1.
        return (self.length_offset - self.counter_offset) - (start - 1)


@dataclass(frozen=True)
class PeriodicTest:
    """``(counter + a) % period == 0`` (or ``not (counter + a) % period``)."""

    test: ast.expr
    counter_side: ast.expr
    counter_offset: int
    period: ast.expr

    def groups_off_by(self, start: int) -> int:
        """0 when the test fires after every k-th batch (counted from one); 1 when it
        fires on the very first batch (a group of one); -1 when the first group is one
        batch short (it fires after batch k - 1)."""
        return (1 - start) - self.counter_offset


@dataclass(frozen=True)
class EnumerateLoop:
    """One ``for <counter>, ... in enumerate(<iterable>[, start])`` loop (``start``:
    None when it is not a constant integer)."""

    loop: Loop
    counter: str
    iterable_name: str | None
    length_names: frozenset[str]
    start: int | None
    #: The constant value of an expression read in the loop's scope (``UNKNOWN``).
    value: Callable[[ast.expr], object] = field(compare=False)

    def is_length(self, expression: ast.expr) -> bool:
        """``len(<iterable>)`` or a name bound to it."""
        if isinstance(expression, ast.Name) and expression.id in self.length_names:
            return True
        return self.iterable_name is not None and _len_argument(expression) == self.iterable_name

    def is_counter(self, expression: ast.expr) -> bool:
        return isinstance(expression, ast.Name) and expression.id == self.counter

    def is_last_batch(self, test: ast.expr) -> bool:
        """Whether ``test`` (or a side of its ``and`` / ``or``) compares the counter with
        the length: ``counter + a == len(iterable) + b`` or ``!=``, in either order."""
        if isinstance(test, ast.BoolOp):
            return any(self.is_last_batch(value) for value in test.values)
        return self.last_batch_test(test) is not None

    def last_batch_test(self, test: ast.expr) -> LastBatchTest | None:
        """``test`` as ``counter + a == len(iterable) + b`` (or ``!=``), if it is one."""
        if not isinstance(test, ast.Compare) or len(test.ops) != 1:
            return None
        if not isinstance(test.ops[0], (ast.Eq, ast.NotEq)):
            return None
        equal = isinstance(test.ops[0], ast.Eq)
        left, right = test.left, test.comparators[0]
        for counter_side, length_side in ((left, right), (right, left)):
            a = self.counter_offset(counter_side)
            found = self._length_offset(length_side)
            if a is not None and found is not None:
                length, b = found
                return LastBatchTest(test, counter_side, length_side, length, a, b, equal)
        return None

    def periodic_test(self, test: ast.expr) -> PeriodicTest | None:
        """``test`` as ``(counter + a) % period == 0`` or ``not (counter + a) % period``
        (a literal period above 1, or one not known), if it is one."""
        modulo: ast.expr | None = None
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            modulo = test.operand
        elif (
            isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
        ):
            left, right = test.left, test.comparators[0]
            if _is_int(self.value(right)) and self.value(right) == 0:
                modulo = left
            elif _is_int(self.value(left)) and self.value(left) == 0:
                modulo = right
        if not (isinstance(modulo, ast.BinOp) and isinstance(modulo.op, ast.Mod)):
            return None
        a = self.counter_offset(modulo.left)
        period = self.value(modulo.right)
        if a is None or (_is_int(period) and period <= 1):
            return None
        return PeriodicTest(test, modulo.left, a, modulo.right)

    def counter_offset(self, expression: ast.expr) -> int | None:
        """``a`` when ``expression`` is ``counter + a`` (``counter``, ``counter - 1``,
        ``1 + counter``)."""
        if self.is_counter(expression):
            return 0
        if isinstance(expression, ast.BinOp) and isinstance(expression.op, (ast.Add, ast.Sub)):
            sign = 1 if isinstance(expression.op, ast.Add) else -1
            right = self.value(expression.right)
            if self.is_counter(expression.left) and _is_int(right):
                return sign * right
            left = self.value(expression.left)
            if sign == 1 and self.is_counter(expression.right) and _is_int(left):
                return left
        return None

    def _length_offset(self, expression: ast.expr) -> tuple[ast.expr, int] | None:
        """(the length, ``b``) when ``expression`` is ``len(iterable) + b``."""
        if self.is_length(expression):
            return expression, 0
        if (
            isinstance(expression, ast.BinOp)
            and isinstance(expression.op, (ast.Add, ast.Sub))
            and self.is_length(expression.left)
        ):
            right = self.value(expression.right)
            if _is_int(right):
                sign = 1 if isinstance(expression.op, ast.Add) else -1
                return expression.left, sign * right
        return None


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


class EnumerateLoops:
    """The module's enumerate loops whose counter is a plain name the body does not
    bind again."""

    def __init__(self, nodes: ModuleNodes, names: Names, constants: ScopedConstants) -> None:
        self._nodes = nodes
        self._names = names
        self._constants = constants
        #: The scope of each ``enumerate(...)`` call: where its loop runs.
        self._scopes = {
            id(call): scope
            for scope, calls in nodes.calls_by_scope.items()
            for call in calls
            if isinstance(call.func, ast.Name) and call.func.id == "enumerate"
        }

    def __iter__(self) -> Iterator[EnumerateLoop]:
        loops: list[Loop] = [*self._nodes.of_type(ast.For), *self._nodes.of_type(ast.AsyncFor)]
        for loop in sorted(loops, key=lambda node: (node.lineno, node.col_offset)):
            found = self._facts(loop)
            if found is not None:
                yield found

    def _facts(self, loop: Loop) -> EnumerateLoop | None:
        call = loop.iter
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id == "enumerate"
            and "enumerate" not in self._names.imports
        ):
            return None
        counter = _counter_name(loop.target)
        iterable = passed_argument(call, "iterable", 0)
        if counter is None or iterable is None or _binds_in_body(loop, counter):
            return None
        iterable_name = dotted_name(unwrap_progress(self._names, iterable))
        scope = self._scopes.get(id(call), self._nodes.module)

        def value(expression: ast.expr) -> object:
            return self._constants.value(expression, scope)

        given = passed_argument(call, "start", 1)
        start = 0 if given is None else value(given)
        return EnumerateLoop(
            loop,
            counter,
            iterable_name,
            self._length_names(loop, iterable_name),
            start if _is_int(start) else None,
            value,
        )

    def _length_names(self, loop: Loop, iterable: str | None) -> frozenset[str]:
        """Names the loop's function (else the module) binds once to
        ``len(<iterable>)``, when it never changes the iterable's length."""
        if iterable is None:
            return frozenset()
        owner = self._constants.owner_of(self._scopes.get(id(loop.iter), self._nodes.module))
        if _resized(owner, iterable):
            return frozenset()
        names = set()
        for node in scope_nodes(owner):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and _len_argument(node.value) == iterable
            ):
                name = node.targets[0].id
                found = self._constants.single_assignment(owner, name)
                if found is not None and found[0] is node.value:
                    names.add(name)
        return frozenset(names)


def unwrap_progress(names: Names, expression: ast.expr) -> ast.expr:
    """``loader`` for ``tqdm(loader, ...)`` (any import spelling of tqdm or rich's
    track)."""
    while isinstance(expression, ast.Call):
        name = names.resolve(expression.func) or ""
        if name.rsplit(".", 1)[-1] not in _PROGRESS_WRAPPERS:
            break
        inner = passed_argument(expression, "iterable", 0) or passed_argument(
            expression, "sequence", 0
        )
        if inner is None:
            break
        expression = inner
    return expression


def walked_iterable(names: Names, iterable: ast.expr) -> ast.expr:
    """What a ``for`` over ``iterable`` walks, through any nesting of ``enumerate`` and
    progress bars (``tqdm(enumerate(loader))``, ``enumerate(tqdm(loader))``)."""
    while True:
        iterable = unwrap_progress(names, iterable)
        if not (
            isinstance(iterable, ast.Call)
            and isinstance(iterable.func, ast.Name)
            and iterable.func.id == "enumerate"
            and "enumerate" not in names.imports
        ):
            return iterable
        inner = passed_argument(iterable, "iterable", 0)
        if inner is None:
            return iterable
        iterable = inner


def _counter_name(target: ast.expr) -> str | None:
    if isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 2:
        first = target.elts[0]
        if isinstance(first, ast.Name):
            return first.id
    return None


def _binding_targets(node: ast.AST) -> list[ast.expr]:
    """The targets a statement or expression binds (``=``, ``+=``, annotated, ``for``,
    walrus, ``with ... as``)."""
    if isinstance(node, ast.Assign):
        return node.targets
    if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.NamedExpr)):
        return [node.target]
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return [node.optional_vars]
    return []


def _binds_in_body(loop: Loop, name: str) -> bool:
    """Whether the loop body binds ``name`` (then the counter is not enumerate's)."""
    return any(
        isinstance(t, ast.Name) and t.id == name
        for node in nodes_within(loop.body)
        for t in _binding_targets(node)
    )


def _resized(owner: ast.AST, iterable: str) -> bool:
    """Whether ``owner``'s own code grows, shrinks or rebinds ``iterable``."""
    for node in scope_nodes(owner):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _RESIZING_METHODS
            and dotted_name(node.func.value) == iterable
        ):
            return True
        if isinstance(node, ast.AugAssign) and dotted_name(node.target) == iterable:
            return True
    return False


def _len_argument(expression: ast.expr) -> str | None:
    """``loader`` for ``len(loader)``."""
    if (
        isinstance(expression, ast.Call)
        and isinstance(expression.func, ast.Name)
        and expression.func.id == "len"
        and len(expression.args) == 1
        and not expression.keywords
        and not isinstance(expression.args[0], ast.Starred)
    ):
        return dotted_name(expression.args[0])
    return None
