"""Whether the elements of a collection hash alike in every process: the fact a set's
iteration order rests on, on CPython's ``ast``.

A set built by the same operations visits its elements in an order fixed by their
hashes. Ints, bools and floats hash by value (``PYTHONHASHSEED`` salts only ``str`` and
``bytes``), and a tuple combines its items' hashes: a set of them built alike is
walked alike on every rank. Strings and bytes are salted per process (the seed is
unset under torchrun); objects without a value hash (tensors, modules) hash by
address; ``None`` hashed by address before Python 3.12. Only elements shown to be
ints, bools, floats or tuples of them count: what is not shown may be any of the
others.

Shown means written out (``{0, 5, 10}``), counted (``range``, ``len``, ``enumerate``'s
index, ``.item()``, ``.tolist()`` of a tensor, ``int(...)``), computed from shown
values (``i * 2`` for ``i`` from a ``range``), or bound only to such values in the
scope (``ids = [0, 3]``; ``layers: set[int]``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from ddplint.analysis.names import dotted_name

#: What a name is bound to in its scope (``None`` for a binding that is no plain value:
#: a loop target, a parameter, ``with ... as``), or None when nothing binds it there.
Bindings = Callable[[ast.expr, str], list[ast.expr | None] | None]

#: Builtins whose result is a number or a bool, whatever they are given.
_NUMBER_BUILTINS = frozenset({"int", "float", "bool", "len", "ord"})
#: Builtins that yield the elements of what they are given, in some order.
_ELEMENT_KEEPING = frozenset({"list", "tuple", "set", "frozenset", "sorted", "reversed", "iter"})
#: Methods whose result is a Python number: ``t.item()``, ``xs.index(x)``.
_NUMBER_METHODS = frozenset({"item", "index", "count", "numel", "dim", "bit_length"})
#: Methods whose result holds Python numbers: ``t.tolist()`` of a tensor or an array.
_NUMBER_LIST_METHODS = frozenset({"tolist"})
#: Annotations of elements that hash by value.
_VALUE_HASHED = frozenset({"int", "bool", "float"})
_COLLECTION_ANNOTATIONS = frozenset(
    {"set", "frozenset", "Set", "FrozenSet", "AbstractSet", "MutableSet", "list", "List"}
)
#: How deep names are followed to what they are bound to.
_DEPTH = 4

Targets = dict[str, bool]


class ElementHashing:
    """Answers, for one module, whether elements hash alike in every process;
    ``bindings`` says what a name is bound to in its scope, ``shadowed`` whether the
    module binds a builtin's name itself."""

    def __init__(self, bindings: Bindings, shadowed: Callable[[str], bool]) -> None:
        self._bindings = bindings
        self._shadowed = shadowed

    def set_hashes_alike(self, source: ast.expr) -> bool:
        """Whether the set ``source`` builds (a literal, a comprehension, ``set(...)``)
        holds only elements that hash alike in every process."""
        if isinstance(source, (ast.Set, ast.SetComp)):
            return self.elements_hash_alike(source, {}, _DEPTH)
        if isinstance(source, ast.Call) and source.args:
            return self.elements_hash_alike(source.args[0], {}, _DEPTH)
        return False

    def elements_hash_alike(self, iterable: ast.expr, targets: Targets, depth: int) -> bool:
        """Whether every element ``iterable`` yields hashes alike in every process."""
        if depth <= 0:
            return False
        if isinstance(iterable, (ast.List, ast.Tuple, ast.Set)):
            return all(self.element_hashes_alike(e, targets, depth) for e in iterable.elts)
        if isinstance(iterable, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            inner = self._comprehension_targets(iterable.generators, targets, depth)
            return self.element_hashes_alike(iterable.elt, inner, depth)
        if isinstance(iterable, ast.Call):
            return self._call_elements(iterable, targets, depth)
        if isinstance(iterable, ast.Name) and iterable.id not in targets:
            return self._bound_alike(iterable, depth, self.elements_hash_alike)
        return False

    def element_hashes_alike(self, element: ast.expr, targets: Targets, depth: int) -> bool:
        """Whether the value ``element`` computes hashes alike in every process."""
        if depth <= 0:
            return False
        if isinstance(element, ast.Constant):
            return isinstance(element.value, (int, float)) and not isinstance(
                element.value, complex
            )
        if isinstance(element, ast.Name):
            if element.id in targets:
                return targets[element.id]
            return self._bound_alike(element, depth, self.element_hashes_alike)
        if isinstance(element, ast.Tuple):
            return all(self.element_hashes_alike(e, targets, depth) for e in element.elts)
        if isinstance(element, ast.UnaryOp):
            return isinstance(element.op, ast.Not) or self.element_hashes_alike(
                element.operand, targets, depth
            )
        if isinstance(element, ast.BinOp):
            return self.element_hashes_alike(
                element.left, targets, depth
            ) and self.element_hashes_alike(element.right, targets, depth)
        if isinstance(element, ast.Call):
            return self._number_call(element)
        return False

    def _number_call(self, call: ast.Call) -> bool:
        """A call whose result is a Python number: ``len(x)``, ``int(x)``, ``t.item()``."""
        if isinstance(call.func, ast.Name):
            return call.func.id in _NUMBER_BUILTINS and not self._shadowed(call.func.id)
        if isinstance(call.func, ast.Attribute):
            return call.func.attr in _NUMBER_METHODS
        return False

    def _call_elements(self, call: ast.Call, targets: Targets, depth: int) -> bool:
        """The elements of ``range(...)``, ``enumerate(x)``, ``zip(a, b)``,
        ``list(x)`` / ``sorted(x)``, ``t.tolist()``."""
        if isinstance(call.func, ast.Attribute):
            return call.func.attr in _NUMBER_LIST_METHODS
        if not isinstance(call.func, ast.Name) or self._shadowed(call.func.id):
            return False
        name = call.func.id
        arguments = [a for a in call.args if not isinstance(a, ast.Starred)]
        if name == "range":
            return True
        if name == "zip":
            wrapped = arguments
        elif name == "enumerate" or name in _ELEMENT_KEEPING:
            wrapped = arguments[:1]  # enumerate's index is an int
        else:
            return False
        return bool(wrapped) and all(
            self.elements_hash_alike(a, targets, depth - 1) for a in wrapped
        )

    def _comprehension_targets(
        self, generators: list[ast.comprehension], targets: Targets, depth: int
    ) -> Targets:
        """The comprehension's loop names, each with whether it hashes alike: all of
        a target's names when the iterable's elements do; the index of
        ``enumerate(...)`` always."""
        found = dict(targets)
        for generator in generators:
            alike = self.elements_hash_alike(generator.iter, found, depth - 1)
            for node in ast.walk(generator.target):
                if isinstance(node, ast.Name):
                    found[node.id] = alike
            index = _enumerate_index(generator)
            if index is not None:
                found[index] = True
        return found

    def _bound_alike(
        self, name: ast.Name, depth: int, check: Callable[[ast.expr, Targets, int], bool]
    ) -> bool:
        """Whether everything ``name`` is bound to in its scope passes ``check``."""
        values = self._bindings(name, name.id)
        if not values:
            return False
        return all(value is not None and check(value, {}, depth - 1) for value in values)


def _enumerate_index(generator: ast.comprehension) -> str | None:
    """``i`` of ``for i, x in enumerate(...)``."""
    call, target = generator.iter, generator.target
    if (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Name)
        and call.func.id == "enumerate"
        and isinstance(target, ast.Tuple)
        and target.elts
        and isinstance(target.elts[0], ast.Name)
    ):
        return target.elts[0].id
    return None


def annotation_hashes_alike(annotation: ast.expr) -> bool:
    """``set[int]``, ``frozenset[int]``, ``list[float]``: a collection annotated to
    hold values that hash alike in every process."""
    if not isinstance(annotation, ast.Subscript):
        return False
    collection = dotted_name(annotation.value)
    if collection is None or collection.rsplit(".", 1)[-1] not in _COLLECTION_ANNOTATIONS:
        return False
    element = annotation.slice
    return isinstance(element, ast.Name) and element.id in _VALUE_HASHED
