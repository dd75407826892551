"""Calls inside one module: which ``def`` of the same file a call runs.

``self.helper()`` / ``cls.helper()`` resolve through the enclosing class and its bases
defined in the module, ``super().helper()`` through those bases only, and ``helper()``
to a function nested in an enclosing ``def`` or defined at module level. Receivers carry
no types statically, so anything else (``other.helper()``) is left unresolved.
"""

from __future__ import annotations

import libcst as cst

from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import dotted_name


class LocalFunctions:
    """Resolves calls to the functions and methods defined in one module."""

    def __init__(self, index: ModuleIndex) -> None:
        self._index = index
        self.classes: dict[str, cst.ClassDef] = {c.name.value: c for c in index.nodes(cst.ClassDef)}
        self.module_functions: dict[str, cst.FunctionDef] = {
            s.name.value: s for s in index.module.body if isinstance(s, cst.FunctionDef)
        }
        self._methods_cache: dict[cst.ClassDef, dict[str, cst.FunctionDef]] = {}
        # Functions defined inside a function body (at any depth of its blocks).
        self._nested: dict[tuple[cst.FunctionDef, str], cst.FunctionDef] = {}
        for function in index.nodes(cst.FunctionDef):
            owner = index.enclosing(function, cst.FunctionDef, cst.ClassDef)
            if isinstance(owner, cst.FunctionDef):
                self._nested.setdefault((owner, function.name.value), function)

    def base_classes(self, cls: cst.ClassDef) -> list[cst.ClassDef]:
        """The direct bases of ``cls`` that are defined in this module."""
        return [
            self.classes[name]
            for base in cls.bases
            if (name := dotted_name(base.value)) in self.classes and name != cls.name.value
        ]

    def methods(
        self, cls: cst.ClassDef, _seen: frozenset[str] = frozenset()
    ) -> dict[str, cst.FunctionDef]:
        """Methods of ``cls`` by name, inherited ones from in-module bases included."""
        cached = self._methods_cache.get(cls)
        if cached is not None:
            return cached
        found: dict[str, cst.FunctionDef] = {}
        seen = _seen | {cls.name.value}
        for base in reversed(self.base_classes(cls)):
            if base.name.value not in seen:
                found.update(self.methods(base, seen))
        if isinstance(cls.body, cst.IndentedBlock):
            for statement in cls.body.body:
                if isinstance(statement, cst.FunctionDef):
                    found[statement.name.value] = statement
        self._methods_cache[cls] = found
        return found

    def callee(self, call: cst.Call) -> cst.FunctionDef | None:
        """The ``def`` of this module that ``call`` runs, when the call says so plainly."""
        return self.resolve(call.func, self._index.enclosing_function(call))

    def resolve(
        self, target: cst.BaseExpression, caller: cst.FunctionDef | None
    ) -> cst.FunctionDef | None:
        """The ``def`` that the callable expression ``target`` names inside ``caller``
        (``helper``, ``self.helper``, ``cls.helper``, ``super().helper``)."""
        if isinstance(target, cst.Name):
            return self._plain_function(target.value, caller)
        if not isinstance(target, cst.Attribute) or caller is None:
            return None
        owner = self._owner_class(caller)
        if owner is None:
            return None
        method = target.attr.value
        receiver = target.value
        if isinstance(receiver, cst.Name) and receiver.value in ("self", "cls"):
            return self.methods(owner).get(method)
        if (
            isinstance(receiver, cst.Call)
            and isinstance(receiver.func, cst.Name)
            and receiver.func.value == "super"
        ):
            for base in self.base_classes(owner):
                found = self.methods(base).get(method)
                if found is not None:
                    return found
        return None

    def _owner_class(self, function: cst.FunctionDef) -> cst.ClassDef | None:
        """The class a method belongs to (through nested defs: closures see ``self``)."""
        current: cst.FunctionDef | None = function
        while current is not None:
            owner = self._index.enclosing_class(current)
            if owner is not None:
                return owner
            current = self._index.enclosing_function(current)
        return None

    def _plain_function(self, name: str, caller: cst.FunctionDef | None) -> cst.FunctionDef | None:
        scope = caller
        while scope is not None:
            nested = self._nested.get((scope, name))
            if nested is not None:
                return nested
            scope = self._index.enclosing_function(scope)
        return self.module_functions.get(name)

    def label(self, function: cst.FunctionDef) -> str:
        """``Class.method`` or ``function`` for messages."""
        owner = self._index.enclosing_class(function)
        if owner is not None:
            return f"{owner.name.value}.{function.name.value}"
        return function.name.value
