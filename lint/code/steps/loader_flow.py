"""Where a data loader built in a module is iterated, when that is not where it is built.

Real training scripts build the loader in one function and iterate it in another: a
factory returns it, ``main`` passes it to ``run_one_epoch(model, loader)`` inside the
epoch loop, or a ``Trainer`` keeps it in ``self.train_data`` and ``_run_epoch`` walks it
while ``train`` loops over epochs. This follows the loader through the module:

- a name bound to it (``loader = ...``), an attribute of ``self`` (its class's, in every
  method), what a function returns (its calls), a parameter it is passed to (a function
  of the module, a method through ``self``, a class through its ``__init__``);
- a ``for`` loop over any of those (through ``enumerate`` and progress bars) is a loop
  over the loader; its epoch loop is a loop around it in the same function, or a loop
  around a call of that function (by name, or through ``self``).

Only this module is read; a loader that leaves it (another module's function, a library
call that wraps it) is not followed.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ddplint.code.context import CodeContext
from ddplint.code.syntax.call_args import argument
from ddplint.code.syntax.names import dotted_name

#: How many times the module's bindings are read again to follow the loader further.
_MAX_PASSES = 6
_PROGRESS_WRAPPERS = frozenset({"enumerate", "tqdm", "tqdm.tqdm", "track", "iter"})

#: A place holding the loader: ("name", scope, name), ("attr", class, attribute) or
#: ("return", function, "").
Place = tuple[str, cst.CSTNode, str]


@dataclass(frozen=True)
class LoaderLoop:
    """A loop over the loader (``data_loop``) and the loop around it (``epoch_loop``),
    possibly in a caller of the function holding ``data_loop``."""

    data_loop: cst.For
    epoch_loop: cst.For | cst.While


class LoaderFlow:
    """The places of one module that hold the loader built by ``loader_call``."""

    def __init__(self, ctx: CodeContext, loader_call: cst.Call) -> None:
        self._ctx = ctx
        self._loader_call = loader_call
        self._functions = _module_functions(ctx.module)
        self.places: set[Place] = set()
        self._follow()

    def epoch_loop(self) -> LoaderLoop | None:
        """The first loop over the loader that an outer loop repeats, if any."""
        for loop in self._ctx.index.nodes(cst.For):
            scope = self._scope(loop)
            if not self._carries(_walked(loop.iter), scope):
                continue
            outer = self._loop_around(loop, scope)
            if outer is None and isinstance(scope, cst.FunctionDef):
                outer = self._loop_around_a_call_of(scope)
            if outer is not None:
                return LoaderLoop(loop, outer)
        return None

    def _follow(self) -> None:
        bindings = [n for n in self._ctx.index.nodes(cst.Assign) if len(n.targets) == 1]
        returns = list(self._ctx.index.nodes(cst.Return))
        calls = list(self._ctx.index.nodes(cst.Call))
        for _ in range(_MAX_PASSES):
            before = len(self.places)
            for node in bindings:
                scope = self._scope(node)
                if self._carries(node.value, scope):
                    place = self._place_of(node.targets[0].target, scope)
                    if place is not None:
                        self.places.add(place)
            for returned in returns:
                scope = self._scope(returned)
                if (
                    returned.value is not None
                    and isinstance(scope, cst.FunctionDef)
                    and self._carries(returned.value, scope)
                ):
                    self.places.add(("return", scope, ""))
            for call in calls:
                self._pass_to_parameters(call)
            if len(self.places) == before:
                return

    def _pass_to_parameters(self, call: cst.Call) -> None:
        """The parameters of a module function ``call`` hands the loader to."""
        scope = self._scope(call)
        callee = self._callee(call, scope)
        if callee is None:
            return
        function, skip_first = callee
        positional = list(function.params.params)[1 if skip_first else 0 :]
        for index, arg in enumerate(call.args):
            if arg.star or not self._carries(arg.value, scope):
                continue
            if arg.keyword is not None:
                self.places.add(("name", function, arg.keyword.value))
            elif index < len(positional):
                self.places.add(("name", function, positional[index].name.value))

    def _carries(self, expr: cst.BaseExpression, scope: cst.CSTNode) -> bool:
        if expr is self._loader_call:
            return True
        if isinstance(expr, cst.Name):
            return ("name", scope, expr.value) in self.places
        owner = self._class_of(scope)
        if _self_attribute(expr, scope) is not None and owner is not None:
            assert isinstance(expr, cst.Attribute)
            return ("attr", owner, expr.attr.value) in self.places
        if isinstance(expr, cst.Call):
            callee = self._callee(expr, scope)
            return callee is not None and ("return", callee[0], "") in self.places
        return False

    def _place_of(self, target: cst.BaseExpression, scope: cst.CSTNode) -> Place | None:
        if isinstance(target, cst.Name):
            return ("name", scope, target.value)
        owner = self._class_of(scope)
        if _self_attribute(target, scope) is not None and owner is not None:
            assert isinstance(target, cst.Attribute)
            return ("attr", owner, target.attr.value)
        return None

    def _callee(self, call: cst.Call, scope: cst.CSTNode) -> tuple[cst.FunctionDef, bool] | None:
        """The module's function a call runs, and whether its first parameter is the
        instance (a method through ``self``, a class's ``__init__``)."""
        func = call.func
        if isinstance(func, cst.Name):
            found = self._functions.get(func.value)
            if isinstance(found, cst.FunctionDef):
                return found, False
            if isinstance(found, cst.ClassDef):
                init = _methods(found).get("__init__")
                return (init, True) if init is not None else None
            return None
        method = _self_attribute(func, scope)
        owner = self._class_of(scope)
        if method is not None and owner is not None:
            found_method = _methods(owner).get(method)
            return (found_method, True) if found_method is not None else None
        return None

    def _loop_around(self, node: cst.CSTNode, scope: cst.CSTNode) -> cst.For | cst.While | None:
        for ancestor in self._ctx.index.ancestors(node):
            if ancestor is scope:
                return None
            if isinstance(ancestor, (cst.For, cst.While)):
                return ancestor
        return None

    def _loop_around_a_call_of(self, function: cst.FunctionDef) -> cst.For | cst.While | None:
        """A loop around a call of ``function`` (by name, or ``self.<name>(...)`` in its
        class)."""
        owner = self._class_of(function)
        for call in self._ctx.index.nodes(cst.Call):
            scope = self._scope(call)
            callee = self._callee(call, scope)
            if callee is None or callee[0] is not function:
                continue
            if owner is not None and self._class_of(scope) is not owner:
                continue
            outer = self._loop_around(call, scope)
            if outer is not None:
                return outer
        return None

    def _scope(self, node: cst.CSTNode) -> cst.CSTNode:
        return self._ctx.index.enclosing_function(node) or self._ctx.module

    def _class_of(self, scope: cst.CSTNode) -> cst.ClassDef | None:
        """The class whose method ``scope`` is."""
        if not isinstance(scope, cst.FunctionDef):
            return None
        parent = self._ctx.index.parent.get(scope)
        holder = self._ctx.index.parent.get(parent) if parent is not None else None
        return holder if isinstance(holder, cst.ClassDef) else None


def loader_loop(ctx: CodeContext, loader_call: cst.Call) -> LoaderLoop | None:
    """A loop over the loader ``loader_call`` builds that an epoch loop repeats,
    following the loader through the module (see the module docstring)."""
    return LoaderFlow(ctx, loader_call).epoch_loop()


def _walked(iterable: cst.BaseExpression) -> cst.BaseExpression:
    """What a ``for`` walks, through ``enumerate``, ``tqdm`` and the like."""
    while (
        isinstance(iterable, cst.Call)
        and dotted_name(iterable.func) in _PROGRESS_WRAPPERS
        and (inner := argument(iterable, "iterable", 0)) is not None
    ):
        iterable = inner.value
    return iterable


def _self_attribute(expr: cst.BaseExpression, scope: cst.CSTNode) -> str | None:
    """``name`` for ``<instance>.name`` in a method: the instance is its first parameter,
    or a parameter called ``self`` (``def _worker(rank, self)`` for ``mp.spawn``)."""
    if not (
        isinstance(expr, cst.Attribute)
        and isinstance(expr.value, cst.Name)
        and isinstance(scope, cst.FunctionDef)
        and scope.params.params
    ):
        return None
    names = [p.name.value for p in scope.params.params]
    instance = expr.value.value
    if instance == names[0] or (instance == "self" and "self" in names):
        return expr.attr.value
    return None


def _module_functions(module: cst.Module) -> dict[str, cst.FunctionDef | cst.ClassDef]:
    """Top-level functions and classes by name (a name defined twice is left out)."""
    found: dict[str, cst.FunctionDef | cst.ClassDef] = {}
    twice: set[str] = set()
    for statement in module.body:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            name = statement.name.value
            if name in found:
                twice.add(name)
            found[name] = statement
    return {name: node for name, node in found.items() if name not in twice}


def _methods(cls: cst.ClassDef) -> dict[str, cst.FunctionDef]:
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    return {s.name.value: s for s in body if isinstance(s, cst.FunctionDef)}
