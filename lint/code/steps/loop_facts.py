"""Facts about ``for i, batch in enumerate(loader, start)`` loops: the counter, its
start, what is enumerated, and which expressions stand for ``len`` of that iterable
(``len(loader)`` itself or a name bound once to it, ``num_batches = len(loader)``).

Progress wrappers are seen through: ``enumerate(tqdm(loader))`` enumerates ``loader``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from ddplint.code.context import CodeContext
from ddplint.code.syntax.call_args import argument
from ddplint.code.syntax.constants import literal_value, single_assignment
from ddplint.code.syntax.names import binding_targets, dotted_name

_PROGRESS_WRAPPERS = frozenset({"tqdm", "track"})
_RESIZING_METHODS = frozenset({"append", "extend", "insert", "pop", "remove", "clear"})


@dataclass(frozen=True)
class EnumerateLoop:
    """One ``for <counter>, ... in enumerate(<iterable>[, start])`` loop."""

    loop: cst.For
    counter: str
    start: int | None
    iterable: cst.BaseExpression
    iterable_name: str | None
    length_names: frozenset[str]

    def is_length(self, expr: cst.BaseExpression) -> bool:
        """``len(<iterable>)`` or a name bound to it."""
        if isinstance(expr, cst.Name) and expr.value in self.length_names:
            return True
        return self.iterable_name is not None and _len_argument(expr) == self.iterable_name

    def is_counter(self, expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.Name) and expr.value == self.counter


def enumerate_loops(ctx: CodeContext) -> Iterator[EnumerateLoop]:
    """Every enumerate loop of the module whose counter is a plain name that the body
    does not rebind."""
    for loop in ctx.index.nodes(cst.For):
        facts = enumerate_loop(ctx, loop)
        if facts is not None:
            yield facts


def enumerate_loop(ctx: CodeContext, loop: cst.For) -> EnumerateLoop | None:
    call = loop.iter
    if not (
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Name)
        and call.func.value == "enumerate"
        and "enumerate" not in ctx.names.bindings
    ):
        return None
    counter = _counter_name(loop.target)
    iterable_arg = argument(call, "iterable", 0)
    if counter is None or iterable_arg is None or _rebinds(ctx, loop, counter):
        return None
    start_arg = argument(call, "start", 1)
    start: int | None = 0
    if start_arg is not None:
        value = literal_value(start_arg.value)
        start = value if isinstance(value, int) and not isinstance(value, bool) else None
    iterable = _unwrap_progress(ctx, iterable_arg.value)
    iterable_name = dotted_name(iterable)
    return EnumerateLoop(
        loop=loop,
        counter=counter,
        start=start,
        iterable=iterable,
        iterable_name=iterable_name,
        length_names=_length_names(ctx, loop, iterable_name),
    )


def _counter_name(target: cst.BaseAssignTargetExpression) -> str | None:
    if isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2:
        first = target.elements[0].value
        if isinstance(first, cst.Name):
            return first.value
    return None


def _rebinds(ctx: CodeContext, loop: cst.For, name: str) -> bool:
    """Whether the loop body assigns ``name`` (then the counter is not enumerate's)."""
    for node in ctx.index.walk_within(loop.body):
        targets = binding_targets(node)
        if any(isinstance(t, cst.Name) and t.value == name for t in targets):
            return True
    return False


def _unwrap_progress(ctx: CodeContext, expr: cst.BaseExpression) -> cst.BaseExpression:
    """``loader`` for ``tqdm(loader, ...)`` (any import spelling of tqdm or rich's track)."""
    while isinstance(expr, cst.Call):
        name = ctx.names.qualified_name(expr.func) or dotted_name(expr.func) or ""
        if name.rsplit(".", 1)[-1] not in _PROGRESS_WRAPPERS:
            break
        inner = argument(expr, "iterable", 0) or argument(expr, "sequence", 0)
        if inner is None:
            break
        expr = inner.value
    return expr


def _resized(ctx: CodeContext, scope: cst.CSTNode, iterable: str) -> bool:
    """Whether ``scope`` grows, shrinks or rebinds ``iterable`` anywhere."""
    for node in ctx.index.walk_within(scope):
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in _RESIZING_METHODS
            and dotted_name(node.func.value) == iterable
        ):
            return True
        if isinstance(node, cst.AugAssign) and dotted_name(node.target) == iterable:
            return True
    return False


def _len_argument(expr: cst.BaseExpression) -> str | None:
    """``loader`` for ``len(loader)``."""
    if (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Name)
        and expr.func.value == "len"
        and len(expr.args) == 1
        and expr.args[0].keyword is None
        and not expr.args[0].star
    ):
        return dotted_name(expr.args[0].value)
    return None


def _length_names(ctx: CodeContext, loop: cst.For, iterable: str | None) -> frozenset[str]:
    """Names that the loop's scope binds once to ``len(<iterable>)``, when the scope
    never changes the iterable's length (``args.append(...)`` after ``n = len(args)``)."""
    if iterable is None:
        return frozenset()
    scope = ctx.index.enclosing_function(loop) or ctx.module
    if _resized(ctx, scope, iterable):
        return frozenset()
    names = set()
    for node in ctx.index.walk_within(scope):
        if (
            isinstance(node, cst.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0].target, cst.Name)
            and _len_argument(node.value) == iterable
        ):
            name = node.targets[0].target.value
            if single_assignment(ctx.index, loop, name) is node.value:
                names.add(name)
    return frozenset(names)
