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
from ddplint.code.steps.loop_facts import walked_iterable
from ddplint.code.syntax.call_args import parameter_filled
from ddplint.code.syntax.call_graph import LocalFunctions

#: How many times the module's bindings are read again to follow the loader further.
_MAX_PASSES = 6

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
        self._local = LocalFunctions(ctx.index)
        self.places: set[Place] = set()
        self._follow()

    def epoch_loop(self) -> LoaderLoop | None:
        """The first loop over the loader that an outer loop repeats, if any."""
        for loop in self._ctx.index.nodes(cst.For):
            scope = self._scope(loop)
            if not self._carries(walked_iterable(self._ctx, loop.iter), scope):
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
        callee = self._callee(call)
        if callee is None:
            return
        for arg in call.args:
            if self._carries(arg.value, scope):
                name = parameter_filled(call, callee, arg)
                if name is not None:
                    self.places.add(("name", callee, name))

    def _carries(self, expr: cst.BaseExpression, scope: cst.CSTNode) -> bool:
        if expr is self._loader_call:
            return True
        if isinstance(expr, cst.Name):
            return ("name", scope, expr.value) in self.places
        if isinstance(expr, cst.Call):
            callee = self._callee(expr)
            return callee is not None and ("return", callee, "") in self.places
        place = self._place_of(expr, scope)
        return place is not None and place[0] == "attr" and place in self.places

    def _place_of(self, target: cst.BaseExpression, scope: cst.CSTNode) -> Place | None:
        if isinstance(target, cst.Name):
            return ("name", scope, target.value)
        owner = self._class_of(scope)
        attribute = _self_attribute(target, scope)
        if attribute is not None and owner is not None:
            return ("attr", owner, attribute)
        return None

    def _callee(self, call: cst.Call) -> cst.FunctionDef | None:
        """The module's function a call runs: a function, a method through ``self``, or
        a class of the module through its ``__init__``."""
        function = self._local.callee(call)
        if function is None and isinstance(call.func, cst.Name):
            cls = self._local.classes.get(call.func.value)
            if cls is not None:
                function = self._local.methods(cls).get("__init__")
        return function

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
        for call in self._ctx.index.nodes(cst.Call):
            if self._callee(call) is function:
                outer = self._loop_around(call, self._scope(call))
                if outer is not None:
                    return outer
        return None

    def _scope(self, node: cst.CSTNode) -> cst.CSTNode:
        return self._ctx.index.enclosing_function(node) or self._ctx.module

    def _class_of(self, scope: cst.CSTNode) -> cst.ClassDef | None:
        """The class whose method ``scope`` is."""
        return (
            self._ctx.index.enclosing_class(scope) if isinstance(scope, cst.FunctionDef) else None
        )


def loader_loop(ctx: CodeContext, loader_call: cst.Call) -> LoaderLoop | None:
    """A loop over the loader ``loader_call`` builds that an epoch loop repeats,
    following the loader through the module (see the module docstring)."""
    return LoaderFlow(ctx, loader_call).epoch_loop()


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
