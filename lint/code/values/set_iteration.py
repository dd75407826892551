"""Iterables whose order comes from a set, and whether that order can differ by rank.

A set of strings is visited in an order that depends on string hashing, which differs
per process (``PYTHONHASHSEED`` is unset under torchrun); a set of tensors or modules
hashes by address. A set shown to hold ints (or bools, floats, tuples of them) is
ordered alike on every rank (``element_hashing``); a dict (``.keys()``) keeps insertion
order. Names and ``self.`` attributes are
followed when every binding of them in the scope is a set.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ddplint.analysis.forms import SET_ANNOTATIONS, SET_BUILDERS
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import ImportTable, dotted_name
from ddplint.code.values.data_dependence import bound_names
from ddplint.code.values.element_hashing import ElementHashing, annotation_hashes_alike

_SET_METHODS = frozenset({"union", "intersection", "difference", "symmetric_difference", "copy"})
_SET_OPERATORS = (cst.BitOr, cst.BitAnd, cst.Subtract, cst.BitXor)
# Wrappers that keep the order of what they wrap.
_ORDER_KEEPING = frozenset({"list", "tuple", "iter"})
_STRINGS = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)


@dataclass(frozen=True)
class SetIteration:
    """An iterable that visits a set: ``replace`` is the node a fix rewrites to
    ``sorted(<source>)``; ``orderable`` when the elements are known to sort."""

    replace: cst.BaseExpression
    source: cst.BaseExpression
    orderable: bool


Binding = cst.BaseExpression | None  # None: bound by something that is not a plain value
#: Stands for a value known only by its annotation (``names: set[str]``).
ANNOTATED_SET = cst.Set([cst.Element(cst.Name("_"))])
#: Stand for a set and a list annotated to hold ints, bools or floats (``set[int]``).
ANNOTATED_VALUE_SET = cst.Set([cst.Element(cst.Integer("0"))])
ANNOTATED_VALUE_LIST = cst.List([cst.Element(cst.Integer("0"))])


class SetValues:
    """Which expressions of one module are sets."""

    def __init__(self, index: ModuleIndex, names: ImportTable) -> None:
        self._index = index
        self._names = names
        self._bindings = self._collect()
        self._hashing = ElementHashing(self._values_of, lambda name: name in names.bindings)

    def _collect(self) -> dict[tuple[cst.CSTNode | None, str], list[Binding]]:
        found: dict[tuple[cst.CSTNode | None, str], list[Binding]] = {}

        def bind(node: cst.CSTNode, target: cst.CSTNode, value: Binding) -> None:
            key_scope = self._scope_of(node, target)
            if isinstance(target, cst.Attribute):
                name = dotted_name(target)
                if name is not None and name.startswith("self.") and name.count(".") == 1:
                    found.setdefault((key_scope, name), []).append(value)
                return
            single = isinstance(target, cst.Name)
            for name in bound_names(target):
                found.setdefault((key_scope, name), []).append(value if single else None)

        for node in self._index.nodes(cst.Assign):
            for target in node.targets:
                bind(node, target.target, node.value)
        for annotated in self._index.nodes(cst.AnnAssign):
            known = annotated.value
            if known is None:
                known = _annotated(annotated.annotation.annotation)
            bind(annotated, annotated.target, known)
        for augmented in self._index.nodes(cst.AugAssign):
            keeps = isinstance(
                augmented.operator,
                (cst.BitOrAssign, cst.BitAndAssign, cst.SubtractAssign, cst.BitXorAssign),
            )
            if not keeps:
                bind(augmented, augmented.target, None)
        for loop in self._index.nodes(cst.For):
            bind(loop, loop.target, None)
        for item in self._index.nodes(cst.WithItem):
            if item.asname is not None:
                bind(item, item.asname.name, None)
        for walrus in self._index.nodes(cst.NamedExpr):
            bind(walrus, walrus.target, walrus.value)
        for param in self._index.nodes(cst.Param):
            annotation = param.annotation
            known = _annotated(annotation.annotation) if annotation is not None else None
            bind(param, param.name, known)
        return found

    def _scope_of(self, node: cst.CSTNode, target: cst.CSTNode | None = None) -> cst.CSTNode | None:
        """Function for plain names, class for ``self.`` attributes, None for module."""
        if isinstance(node, cst.Param):
            return self._index.enclosing_function(node)
        function = self._index.enclosing_function(node)
        if target is not None and isinstance(target, cst.Attribute) and function is not None:
            return self._index.enclosing(function, cst.ClassDef)
        return function

    def is_set(self, expr: cst.BaseExpression, _seen: frozenset[str] = frozenset()) -> bool:
        return self._set_source(expr, _seen) is not None

    def _set_source(
        self, expr: cst.BaseExpression, seen: frozenset[str]
    ) -> list[cst.BaseExpression] | None:
        """The set-building expressions ``expr`` stands for, or None if not a set."""
        if isinstance(expr, (cst.Set, cst.SetComp)):
            return [expr]
        if isinstance(expr, cst.Call):
            if isinstance(expr.func, cst.Name) and expr.func.value in SET_BUILDERS:
                return [expr] if expr.func.value not in self._names.bindings else None
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _SET_METHODS:
                return self._set_source(expr.func.value, seen)
            return None
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _SET_OPERATORS):
            return self._set_source(expr.left, seen) or (
                None
                if isinstance(expr.operator, cst.Subtract)
                else self._set_source(expr.right, seen)
            )
        name = dotted_name(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
        if name is None or name in seen:
            return None
        values = self._values_of(expr, name)
        if not values or any(v is None for v in values):
            return None
        sources: list[cst.BaseExpression] = []
        for value in values:
            assert value is not None
            inner = self._set_source(value, seen | {name})
            if inner is None:
                return None
            sources.extend(inner)
        return sources

    def _values_of(self, expr: cst.BaseExpression, name: str) -> list[Binding] | None:
        if isinstance(expr, cst.Attribute):
            if not name.startswith("self.") or name.count(".") != 1:
                return None
            function = self._index.enclosing_function(expr)
            cls = self._index.enclosing(function, cst.ClassDef) if function else None
            return self._bindings.get((cls, name))
        scope = self._index.enclosing_function(expr)
        values = self._bindings.get((scope, name))
        if values is None and scope is not None:
            values = self._bindings.get((None, name))
        return values

    def set_iteration(self, iterable: cst.BaseExpression) -> SetIteration | None:
        """How ``iterable`` inherits a set's order, or None when it does not (or when
        the set holds only values hashed alike in every process, such as ints:
        ``element_hashing``)."""
        replace, source = iterable, iterable
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) and iterable.args:
            called = iterable.func.value
            if called in _ORDER_KEEPING and len(iterable.args) == 1:
                source = iterable.args[0].value
            elif called == "enumerate":
                source = replace = iterable.args[0].value
        sets = self._set_source(source, frozenset())
        if sets is None or all(self._hashing.set_hashes_alike(s) for s in sets):
            return None
        return SetIteration(replace, source, all(_holds_only_strings(s) for s in sets))


def _annotated(annotation: cst.BaseExpression) -> Binding:
    """What an annotation alone says a name holds: a set, or a set or list of values
    hashed alike in every process (``set[int]``); None when it says neither."""
    set_annotated = _annotation_is_set(annotation)
    if annotation_hashes_alike(annotation):
        return ANNOTATED_VALUE_SET if set_annotated else ANNOTATED_VALUE_LIST
    return ANNOTATED_SET if set_annotated else None


def _annotation_is_set(annotation: cst.BaseExpression) -> bool:
    if isinstance(annotation, cst.Subscript):
        annotation = annotation.value
    name = dotted_name(annotation)
    return name is not None and name.rsplit(".", 1)[-1] in SET_ANNOTATIONS


def _elements(source: cst.BaseExpression) -> list[cst.BaseExpression] | None:
    """The literal elements a set is built from, when they are written out."""
    if isinstance(source, cst.Set):
        return [e.value for e in source.elements]
    if isinstance(source, cst.Call) and source.args:
        argument = source.args[0].value
        if isinstance(argument, (cst.List, cst.Tuple, cst.Set)):
            return [e.value for e in argument.elements]
    return None


def _holds_only_strings(source: cst.BaseExpression) -> bool:
    """Whether a set's elements are written out as strings (``sorted`` orders them;
    mixed with numbers it raises ``TypeError``)."""
    if isinstance(source, cst.SetComp):
        return isinstance(source.elt, _STRINGS)
    elements = _elements(source)
    if not elements:
        return False
    return all(isinstance(e, _STRINGS) for e in elements)
