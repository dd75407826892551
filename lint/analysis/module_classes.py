"""Which classes of a module are module classes (``torch.nn.Module``, a LightningModule,
NeMo's ``ModelPT``), by what their bases are: a library class of the catalogue
(``object_kinds``), a class of the module, or a project class of another module (its
kind from the project facts). A class's kind is that of its first base with one;
``OBJECT`` where every base is known and none has one (``object``, ``ABC``, builtins);
unknown otherwise. A base's name never decides: an unknown base leaves the kind unknown.
"""

from __future__ import annotations

import ast

from ddplint.analysis.constants import call_parameters
from ddplint.analysis.control_flow import own_nodes
from ddplint.analysis.endless_iterables import drawn_source, is_endless_generator
from ddplint.analysis.module_nodes import ModuleNodes
from ddplint.analysis.names import BUILTIN_NAMES, Names, dotted_name
from ddplint.analysis.object_kinds import (
    ENDLESS_ITERABLE,
    FIRST_ARGUMENT_ITEMS,
    MODULE_KINDS,
    OBJECT,
    iterating_kind,
    library_kind,
)
from ddplint.analysis.project import NO_PROJECT, ProjectFacts

#: Modules whose classes are bases of no framework (``abc.ABC``, ``typing.Generic``).
_PLAIN_MODULES = ("abc.", "typing.", "enum.", "collections.", "dataclasses.")


class ClassKinds:
    """The kinds of the classes a module defines."""

    def __init__(self, nodes: ModuleNodes, names: Names, project: ProjectFacts = NO_PROJECT):
        self._names = names
        self._project = project
        ordered = sorted(nodes.of_type(ast.ClassDef), key=lambda c: (c.lineno, c.col_offset))
        #: The module's classes by name (a name defined twice: the later class).
        self._classes = {cls.name: cls for cls in ordered}
        self._kinds: dict[str, str | None] = {}

    def is_module_class(self, cls: ast.ClassDef) -> bool:
        """Whether ``cls`` is a torch, Lightning or NeMo module class."""
        return self.kind(cls) in MODULE_KINDS

    def kind(self, cls: ast.ClassDef, seen: frozenset[str] = frozenset()) -> str | None:
        """The kind of ``cls`` (``object_kinds``); None where a base is unknown."""
        if cls.name in self._kinds:
            return self._kinds[cls.name]
        known = True
        found: str | None = None
        for base in cls.bases:
            kind = self._base_kind(base, seen | {cls.name})
            if kind is not None and kind != OBJECT:
                found = kind
                break
            if kind is None and not self._plain_base(base):
                known = False
        result = iterating_kind(
            found if found is not None else (OBJECT if known else None), _own_iteration(cls)
        )
        if not seen:
            self._kinds[cls.name] = result
        return result

    def of_call(self, call: ast.Call, owner: str | None) -> str | None:
        """The kind of what ``call`` makes: a class of this module, a project class or
        factory of another (``owner``: the class the call sits in), a catalogued
        library class; None when unknown (a method of ``self`` included)."""
        spelled = dotted_name(call.func)
        if spelled is None or spelled.split(".", 1)[0] in ("self", "cls"):
            return None
        if spelled in self._classes:
            return self.kind(self._classes[spelled])
        resolved = self._names.resolve(call.func)
        kind = library_kind(resolved) if resolved is not None else None
        return kind if kind is not None else self._project.kind(spelled, owner)

    def _base_kind(self, base: ast.expr, seen: frozenset[str]) -> str | None:
        resolved = self._names.resolve(base)
        if resolved is not None:
            kind = library_kind(resolved)
            if kind is not None:
                return kind
        spelled = dotted_name(base)
        if spelled is None:
            return None
        if spelled in self._classes and spelled not in seen:
            return self.kind(self._classes[spelled], seen)
        return self._project.kind(spelled, None)

    def _plain_base(self, base: ast.expr) -> bool:
        """``object``, ``ABC``, ``Generic[T]``, ``Exception``: a base of no framework."""
        if isinstance(base, ast.Subscript):
            base = base.value
        if isinstance(base, ast.Name) and base.id not in self._names.imports:
            return base.id in BUILTIN_NAMES and base.id not in self._classes
        resolved = self._names.resolve(base)
        return resolved is not None and resolved.startswith(_PLAIN_MODULES)


def _own_iteration(cls: ast.ClassDef) -> str | None:
    """What the ``__iter__`` ``cls`` defines makes (``object_kinds.iterating_kind``):
    an endless iterable, the items of the first argument its ``__init__`` keeps, or an
    iteration that ends (``OBJECT``); None when it defines none."""
    methods = {
        statement.name: statement
        for statement in cls.body
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    iteration = methods.get("__iter__")
    if iteration is None:
        return None
    if is_endless_generator(iteration):
        return ENDLESS_ITERABLE
    drawn = drawn_source(iteration)
    init = methods.get("__init__")
    if drawn is not None and init is not None and _keeps_first(init, drawn):
        return FIRST_ARGUMENT_ITEMS
    return OBJECT


def _keeps_first(init: ast.FunctionDef | ast.AsyncFunctionDef, field: str) -> bool:
    """Whether ``init`` stores the parameter a call's first argument fills, as it is,
    in ``field`` (``self.x``)."""
    parameters = call_parameters(init)
    return bool(parameters) and any(
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and dotted_name(statement.targets[0]) == field
        and isinstance(statement.value, ast.Name)
        and statement.value.id == parameters[0].arg
        for statement in own_nodes(init)
    )
