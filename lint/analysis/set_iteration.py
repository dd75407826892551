"""Iterables whose order comes from a set, and whether that order can differ by rank,
on CPython's ``ast``.

A set of strings is visited in an order that depends on string hashing, which differs
per process (``PYTHONHASHSEED`` is unset under torchrun); a set of tensors or modules
hashes by address. A set shown to hold ints (or bools, floats, tuples of them) is
ordered alike on every rank (``element_hashing``); a dict (``.keys()``) keeps insertion
order, which is a set's order when the dict is built by walking one (``{k: f(k) for k
in names_set}``, ``dict.fromkeys(names_set)``). A name read where the plain
statements of its function decide its value is that value (a re-bound name is a new
value: ``names = set(names)`` after ``names = list(x)``); other names and ``self.``
attributes are followed when every binding of them in the scope is a set.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from ddplint.analysis.element_hashing import ElementHashing, annotation_hashes_alike
from ddplint.analysis.forms import SET_ANNOTATIONS, SET_BUILDERS
from ddplint.analysis.names import Names, dotted_name
from ddplint.analysis.straight_bindings import last_straight_binding

_SET_METHODS = frozenset({"union", "intersection", "difference", "symmetric_difference", "copy"})
_SET_OPERATORS = (ast.BitOr, ast.BitAnd, ast.Sub, ast.BitXor)
#: A dict's views: in the order its keys went in, a set's when it was built from one.
_DICT_VIEWS = frozenset({"keys", "values", "items"})
#: Wrappers that keep the order of what they wrap.
_ORDER_KEEPING = frozenset({"list", "tuple", "iter"})
_Function = ast.FunctionDef | ast.AsyncFunctionDef
#: The function (None: module level) and class around a node.
_Where = tuple[_Function | None, ast.ClassDef | None]


@dataclass(frozen=True)
class SetIteration:
    """An iterable that visits a set: ``replace`` is the node a fix rewrites to
    ``sorted(<source>)``; ``orderable`` when the elements are known to sort."""

    replace: ast.expr
    source: ast.expr
    orderable: bool


Binding = ast.expr | None  # None: bound by something that is not a plain value
#: Stand for a value known only by its annotation: a set (``names: set[str]``), and a
#: set and a list annotated to hold ints, bools or floats (``set[int]``).
ANNOTATED_SET = ast.Set(elts=[ast.Name(id="_", ctx=ast.Load())])
ANNOTATED_VALUE_SET = ast.Set(elts=[ast.Constant(value=0)])
ANNOTATED_VALUE_LIST = ast.List(elts=[ast.Constant(value=0)], ctx=ast.Load())


class SetValues:
    """Which expressions of one module are sets."""

    def __init__(self, module: ast.Module, names: Names) -> None:
        self._where: dict[int, _Where] = {}
        self._bindings: dict[tuple[ast.AST | None, str], list[Binding]] = {}
        for node, where in _walk(module, (None, None)):
            self._where[id(node)] = where
            self._bind_node(node, where)
        self._imported = frozenset(names.imports)
        self._hashing = ElementHashing(self._values_of, self._imported.__contains__)

    def _bind(self, where: _Where, target: ast.expr, value: Binding) -> None:
        function, cls = where
        if isinstance(target, ast.Attribute):
            name = dotted_name(target)
            if name is not None and name.startswith("self.") and name.count(".") == 1:
                owner = cls if function is not None else None
                self._bindings.setdefault((owner, name), []).append(value)
            return
        single = isinstance(target, ast.Name)
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                self._bindings.setdefault((function, node.id), []).append(value if single else None)

    def _bind_node(self, node: ast.AST, where: _Where) -> None:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                self._bind(where, target, node.value)
        elif isinstance(node, ast.AnnAssign):
            known = node.value if node.value is not None else _annotated(node.annotation)
            self._bind(where, node.target, known)
        elif isinstance(node, ast.AugAssign):
            if not isinstance(node.op, _SET_OPERATORS):
                self._bind(where, node.target, None)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            self._bind(where, node.target, None)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            self._bind(where, node.optional_vars, None)
        elif isinstance(node, ast.NamedExpr):
            self._bind(where, node.target, node.value)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args
            for parameter in (
                *arguments.posonlyargs,
                *arguments.args,
                *arguments.kwonlyargs,
                *(a for a in (arguments.vararg, arguments.kwarg) if a is not None),
            ):
                known = _annotated(parameter.annotation) if parameter.annotation else None
                self._bindings.setdefault((node, parameter.arg), []).append(known)

    def is_set(self, expression: ast.expr) -> bool:
        return self._set_source(expression, frozenset()) is not None

    def _set_source(self, expression: ast.expr, seen: frozenset[str]) -> list[ast.expr] | None:
        """The set-building expressions ``expression`` stands for, or None if no set."""
        if isinstance(expression, (ast.Set, ast.SetComp)):
            return [expression]
        if isinstance(expression, ast.DictComp):
            return self._set_source(expression.generators[0].iter, seen)
        if isinstance(expression, ast.Call):
            func = expression.func
            if isinstance(func, ast.Name) and func.id in SET_BUILDERS:
                return [expression] if func.id not in self._imported else None
            if isinstance(func, ast.Attribute) and (
                func.attr in _SET_METHODS or func.attr in _DICT_VIEWS
            ):
                return self._set_source(func.value, seen)
            if dotted_name(func) == "dict.fromkeys" and expression.args:
                return self._set_source(expression.args[0], seen)
            return None
        if isinstance(expression, ast.BinOp) and isinstance(expression.op, _SET_OPERATORS):
            return self._set_source(expression.left, seen) or (
                None
                if isinstance(expression.op, ast.Sub)
                else self._set_source(expression.right, seen)
            )
        name = (
            dotted_name(expression) if isinstance(expression, (ast.Name, ast.Attribute)) else None
        )
        if name is None or name in seen:
            return None
        values = self._values_of(expression, name)
        if not values or any(v is None for v in values):
            return None
        sources: list[ast.expr] = []
        for value in values:
            assert value is not None
            inner = self._set_source(value, seen | {name})
            if inner is None:
                return None
            sources.extend(inner)
        return sources

    def _values_of(self, expression: ast.expr, name: str) -> list[Binding] | None:
        function, cls = self._where.get(id(expression), (None, None))
        if isinstance(expression, ast.Attribute):
            if not name.startswith("self.") or name.count(".") != 1 or function is None:
                return None
            return self._bindings.get((cls, name))
        values = self._bindings.get((function, name))
        if values is None and function is not None:
            values = self._bindings.get((None, name))
        return values

    def _latest_value(self, expression: ast.expr) -> ast.expr:
        """What a name holds where it is read, when the plain statements of its function
        decide it (a re-bound name is its new value); else the name itself, whose every
        binding in the scope must then be a set."""
        function = self._where.get(id(expression), (None, None))[0]
        if not isinstance(expression, ast.Name) or function is None:
            return expression
        latest = last_straight_binding(function, expression, expression.id)
        return expression if latest is None else latest

    def set_iteration(self, iterable: ast.expr) -> SetIteration | None:
        """How ``iterable`` inherits a set's order, or None when it does not (or when
        the set holds only values hashed alike in every process, such as ints)."""
        replace, source = iterable, iterable
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.args:
            called = iterable.func.id
            if called in _ORDER_KEEPING and len(iterable.args) == 1:
                source = iterable.args[0]
            elif called == "enumerate":
                source = replace = iterable.args[0]
        sets = self._set_source(self._latest_value(source), frozenset())
        if sets is None or all(self._hashing.set_hashes_alike(s) for s in sets):
            return None
        orderable = not _dict_values(source) and all(_holds_only_strings(s) for s in sets)
        return SetIteration(replace, source, orderable)


def _walk(node: ast.AST, where: _Where) -> Iterator[tuple[ast.AST, _Where]]:
    """Every node under ``node`` with the function and class around it (a function or
    class counts as around its own node; lambdas and comprehensions open no scope)."""
    for child in ast.iter_child_nodes(node):
        inner = where
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner = (child, where[1])
        elif isinstance(child, ast.ClassDef):
            inner = (where[0], child)
        yield child, inner
        yield from _walk(child, inner)


def _annotated(annotation: ast.expr) -> Binding:
    """What an annotation alone says a name holds: a set, or a set or list of values
    hashed alike in every process (``set[int]``); None when it says neither."""
    set_annotated = _annotation_is_set(annotation)
    if annotation_hashes_alike(annotation):
        return ANNOTATED_VALUE_SET if set_annotated else ANNOTATED_VALUE_LIST
    return ANNOTATED_SET if set_annotated else None


def _annotation_is_set(annotation: ast.expr) -> bool:
    if isinstance(annotation, ast.Subscript):
        annotation = annotation.value
    name = dotted_name(annotation)
    return name is not None and name.rsplit(".", 1)[-1] in SET_ANNOTATIONS


def _dict_values(source: ast.expr) -> bool:
    """``d.values()`` / ``d.items()``: values that need not sort."""
    return (
        isinstance(source, ast.Call)
        and isinstance(source.func, ast.Attribute)
        and source.func.attr in ("values", "items")
    )


def _elements(source: ast.expr) -> list[ast.expr] | None:
    """The literal elements a set is built from, when they are written out."""
    if isinstance(source, ast.Set):
        return list(source.elts)
    if isinstance(source, ast.Call) and source.args:
        argument = source.args[0]
        if isinstance(argument, (ast.List, ast.Tuple, ast.Set)):
            return list(argument.elts)
    return None


def _is_string(node: ast.expr) -> bool:
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, str)
    )


def _holds_only_strings(source: ast.expr) -> bool:
    """Whether a set's elements are written out as strings (``sorted`` orders them;
    mixed with numbers it raises ``TypeError``)."""
    if isinstance(source, ast.SetComp):
        return _is_string(source.elt)
    elements = _elements(source)
    return elements is not None and bool(elements) and all(_is_string(e) for e in elements)
