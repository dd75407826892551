"""The kind of object a value holds (``analysis.object_kinds``), from where it was
allocated rather than what it is called.

A value's kind comes from the call that made it: a library class or factory of the
catalogue (``torch.optim.AdamW(...)``, ``Accelerator()``, ``DDPMScheduler.from_pretrained``),
a class of the module (its kind from its bases), a function of the module returning
one, or a project class or factory of another module (the project facts,
``project.object_kinds``); ``accelerator.prepare(model, opt)`` / ``fabric.setup(...)``
hand back what they were given; the first item of ``deepspeed.initialize(...)`` is the
engine; calling a module, or arithmetic, makes a tensor. Names carry it through
assignments in their function (flow-insensitively: every binding that says something
must agree), ``self.x`` fields per class (field-sensitive), an inherited field through
the project facts, a parameter through its annotation. Unknown stays None: callers fall
back to what they did before.
"""

from __future__ import annotations

import builtins

import libcst as cst

from ddplint.analysis.object_kinds import (
    ACCELERATOR,
    ENGINE,
    FABRIC,
    MODULE_KINDS,
    OBJECT,
    TENSOR,
    is_deepspeed_initialize,
    library_kind,
)
from ddplint.code.project.view import ProjectView
from ddplint.code.syntax.call_graph import LocalFunctions
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import ImportTable, dotted_name

#: Methods that hand back the objects they are given, wrapped, by the receiver's kind.
_HANDING_BACK = {
    ACCELERATOR: frozenset({"prepare"}),
    FABRIC: frozenset({"setup", "setup_optimizers"}),
}
#: Bound on the chain of bindings followed for one value.
_MAX_DEPTH = 16
_BUILTINS = frozenset(dir(builtins))
_PLAIN_MODULES = ("abc.", "typing.", "enum.", "collections.", "dataclasses.")
#: A binding: the value assigned, and the item it takes of a tuple (-1: the whole).
_Binding = tuple[cst.BaseExpression, int]
#: Where a name is bound: its function (None: module level) or ``Class:self.x``.
_Key = tuple[cst.FunctionDef | None, str]


class ObjectTypes:
    """Kinds of the values and classes of one module."""

    def __init__(self, index: ModuleIndex, names: ImportTable, project: ProjectView) -> None:
        self._index = index
        self._names = names
        self._project = project
        self._local = LocalFunctions(index)
        self._bindings: dict[_Key, list[_Binding]] = {}
        self._annotated: dict[_Key, str] = {}
        self._asking: set[int] = set()
        self._class_kinds: dict[str, str | None] = {}
        for assign in index.nodes(cst.Assign):
            for target in assign.targets:
                self._bind(target.target, assign.value)
        for annotated in index.nodes(cst.AnnAssign):
            if annotated.value is not None:
                self._bind(annotated.target, annotated.value)
        for parameter in index.nodes(cst.Param):
            if parameter.annotation is not None:
                made = self._names.qualified_name(parameter.annotation.annotation)
                kind = library_kind(made) if made is not None else None
                if kind is not None:
                    self._annotated[self._key(parameter.name, parameter.name.value)] = kind

    # -- what callers ask ----------------------------------------------------------

    def kind_of(self, expr: cst.BaseExpression) -> str | None:
        """The kind of object ``expr`` holds; None when unknown."""
        if id(expr) in self._asking or len(self._asking) > _MAX_DEPTH:
            return None
        self._asking.add(id(expr))
        try:
            return self._kind_of(expr)
        finally:
            self._asking.discard(id(expr))

    def class_kind(self, cls: cst.ClassDef, _seen: frozenset[str] = frozenset()) -> str | None:
        """The kind of a class of this module: that of its first base with one (a
        library class of the catalogue, a class of the module, a project class of
        another); ``OBJECT`` when every base is known and none has one; None otherwise."""
        name = cls.name.value
        if name in self._class_kinds:
            return self._class_kinds[name]
        known = True
        found: str | None = None
        for base in cls.bases:
            kind = self._base_kind(base.value, _seen | {name})
            if kind is not None and kind != OBJECT:
                found = kind
                break
            if kind is None and not self._plain_base(base.value):
                known = False
        result = found if found is not None else (OBJECT if known else None)
        if not _seen:
            self._class_kinds[name] = result
        return result

    # -- values --------------------------------------------------------------------

    def _kind_of(self, expr: cst.BaseExpression) -> str | None:
        if isinstance(expr, cst.Call):
            return self._made_by(expr)
        if isinstance(expr, cst.BinaryOperation):
            return TENSOR
        spelled = dotted_name(expr)
        if spelled is None or spelled in ("self", "cls"):
            return None
        key = self._key(expr, spelled)
        kinds = [self._bound_kind(value, item) for value, item in self._bindings.get(key, ())]
        if key in self._annotated:
            kinds.append(self._annotated[key])
        function = key[0]
        if function is not None and not kinds and not spelled.startswith(("self.", "cls.")):
            # A name the function does not bind: a parameter its callers fill, or the
            # module's.
            passed = self._project.parameter_kinds(function).get(spelled)
            if passed is not None:
                return passed
            kinds = [self._bound_kind(v, i) for v, i in self._bindings.get((None, spelled), ())]
        agreed = _agreed(kinds)
        if agreed is None and not any(kinds):
            return self._project.kind(expr)  # an inherited field, an imported instance
        return agreed

    def _bound_kind(self, value: cst.BaseExpression, item: int) -> str | None:
        if item == -1:
            return self.kind_of(value)
        if not isinstance(value, cst.Call):
            return None
        if item == 0 and is_deepspeed_initialize(self._names.qualified_name(value.func)):
            return ENGINE
        handed = self._handed_back(value)
        if handed is not None and item < len(handed):
            return self.kind_of(handed[item])
        return None

    def _made_by(self, call: cst.Call) -> str | None:
        """The kind of the object ``call`` makes."""
        func = call.func
        made = self._names.qualified_name(func)
        if made is not None:
            kind = library_kind(made)
            if kind is not None:
                return kind
        handed = self._handed_back(call)
        if handed is not None and len(handed) == 1:
            return self.kind_of(handed[0])
        spelled = dotted_name(func)
        if spelled in self._local.classes:
            return self.class_kind(self._local.classes[spelled])
        callee = self._local.callee(call)
        if callee is not None:
            return self._returned_kind(callee)
        kind = self._project.kind(func)
        if kind is not None:
            return kind
        if made is None and self.kind_of(func) in MODULE_KINDS:
            return TENSOR  # ``model(x)``: what the module computes
        return None

    def _handed_back(self, call: cst.Call) -> list[cst.BaseExpression] | None:
        """The arguments ``accelerator.prepare(...)`` / ``fabric.setup(...)`` hand back."""
        func = call.func
        if not isinstance(func, cst.Attribute):
            return None
        methods = _HANDING_BACK.get(self.kind_of(func.value) or "")
        if methods is None or func.attr.value not in methods:
            return None
        return [a.value for a in call.args if a.keyword is None and not a.star]

    def _returned_kind(self, function: cst.FunctionDef) -> str | None:
        """The kind every value ``function`` returns agrees on."""
        kinds = [
            self.kind_of(node.value)
            for node in self._index.walk_within(function)
            if isinstance(node, cst.Return)
            and node.value is not None
            and self._index.enclosing_function(node) is function
        ]
        return _agreed(kinds)

    # -- bindings ------------------------------------------------------------------

    def _key(self, node: cst.CSTNode, spelled: str) -> _Key:
        function = self._index.enclosing_function(node)
        if spelled.startswith(("self.", "cls.")):
            owner = self._owner(function)
            return None, f"{owner}:{spelled}"
        return function, spelled

    def _owner(self, function: cst.FunctionDef | None) -> str | None:
        while function is not None:
            cls = self._index.enclosing_class(function)
            if cls is not None:
                return cls.name.value
            function = self._index.enclosing_function(function)
        return None

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if isinstance(value, cst.Name) and value.value == "None":
            return  # a placeholder, set later
        if isinstance(target, (cst.Tuple, cst.List)):
            for item, element in enumerate(target.elements):
                self._bind_item(element.value, value, item)
            return
        self._bind_item(target, value, -1)

    def _bind_item(self, target: cst.BaseExpression, value: cst.BaseExpression, item: int) -> None:
        spelled = dotted_name(target)
        if spelled is not None and (spelled.count(".") == 0 or spelled.startswith("self.")):
            self._bindings.setdefault(self._key(target, spelled), []).append((value, item))

    # -- classes -------------------------------------------------------------------

    def _base_kind(self, base: cst.BaseExpression, seen: frozenset[str]) -> str | None:
        made = self._names.qualified_name(base)
        if made is not None:
            kind = library_kind(made)
            if kind is not None:
                return kind
        spelled = dotted_name(base)
        if spelled in self._local.classes and spelled not in seen:
            return self.class_kind(self._local.classes[spelled], seen)
        return self._project.kind(base)

    def _plain_base(self, base: cst.BaseExpression) -> bool:
        """``object``, ``ABC``, ``Generic[T]``, ``Exception``: a base of no framework."""
        if isinstance(base, cst.Subscript):
            base = base.value
        made = self._names.qualified_name(base)
        if made is not None:
            return made.startswith(_PLAIN_MODULES)
        return isinstance(base, cst.Name) and base.value in _BUILTINS


def _agreed(kinds: list[str | None]) -> str | None:
    known = {kind for kind in kinds if kind is not None}
    return known.pop() if len(known) == 1 else None
