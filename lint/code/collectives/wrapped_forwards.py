"""Forward calls of a model wrapped in ``DistributedDataParallel``.

DDP's forward may communicate: before running the module it broadcasts the module's
buffers from rank 0 (``broadcast_buffers=True``, the default) whenever the previous
forward ran with grad enabled (torch ``DistributedDataParallel._pre_forward`` /
``will_sync_module_buffers``), so an evaluation right after training synchronises too.
A wrapped model is a name or ``self.attr`` bound to ``DistributedDataParallel(...)``
(without ``broadcast_buffers=False``); its forward is ``ddp(x)`` or ``ddp.forward(x)``,
or a call of a function of this module that calls the parameter it is passed as. A
parameter counts as a wrapped model when callers in other modules hand one in (the
project model: ``ProjectView.wrapped_by_callers``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import libcst as cst

from ddplint.code.collectives.call_reach import CallReach
from ddplint.code.collectives.ddp_wrappers import is_ddp_wrapper
from ddplint.code.project.view import ProjectView, parameter_names
from ddplint.code.syntax.call_args import (
    keyword_argument,
    parameter_filled,
    switched_off_parameters,
)
from ddplint.code.syntax.constants import literal_value
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import ImportTable, dotted_name

#: How many functions a wrapped model may be passed through to its forward call.
_MAX_PASSING = 3


@dataclass(frozen=True)
class WrappedForward:
    """``call`` runs the forward of the DDP model bound at ``wrapper`` (None: a parameter
    that callers in other modules hand a wrapped model in); ``inner`` is the forward call
    inside the callee when ``call`` passes the model to a function."""

    call: cst.Call
    wrapper: cst.Call | None
    model: str
    inner: cst.Call | None = None


class WrappedForwards:
    """Finds the calls that run a DDP-wrapped model's forward in one module."""

    def __init__(
        self,
        index: ModuleIndex,
        names: ImportTable,
        call_reach: CallReach,
        project: ProjectView | None = None,
    ) -> None:
        self._index = index
        self._names = names
        self._reach = call_reach
        self._project = project

    @cached_property
    def _handed_parameters(self) -> dict[cst.FunctionDef, set[str]]:
        """Parameters of this module's functions that a project caller (another
        module's, by the project model) hands a DDP-wrapped model in, never rebound."""
        if not self._project:
            return {}
        found: dict[cst.FunctionDef, set[str]] = {}
        for function in self._index.nodes(cst.FunctionDef):
            positions = self._project.wrapped_by_callers(function)
            if not positions:
                continue
            rebound = {
                dotted_name(t.target)
                for a in self._index.walk_within(function.body)
                if isinstance(a, cst.Assign)
                for t in a.targets
            }
            names = set(parameter_names(function, positions)) - rebound
            if names:
                found[function] = names
        return found

    def _handed(self, key: str, use: cst.CSTNode) -> bool:
        function = self._index.enclosing_function(use)
        return function is not None and key in self._handed_parameters.get(function, ())

    @cached_property
    def _wrapping_assignments(self) -> list[tuple[cst.Assign, cst.Call]]:
        """``x = DistributedDataParallel(...)`` assignments that keep broadcasting buffers."""
        return [
            (assign, assign.value)
            for assign in self._index.nodes(cst.Assign)
            if isinstance(assign.value, cst.Call)
            and is_ddp_wrapper(self._names, assign.value)
            and not _keeps_buffers_local(assign.value)
        ]

    def find(self) -> list[WrappedForward]:
        if not self._wrapping_assignments and not self._handed_parameters:
            return []
        found = []
        for call in self._index.nodes(cst.Call):
            forward = self._forward(call)
            if forward is not None:
                found.append(forward)
        return found

    def _forward(self, call: cst.Call) -> WrappedForward | None:
        target = call.func
        if isinstance(target, cst.Attribute) and target.attr.value == "forward":
            target = target.value
        key = dotted_name(target)
        if key is not None:
            wrapper = self._wrapper_of(key, call)
            if wrapper is not None or self._handed(key, call):
                return WrappedForward(call, wrapper, key)
        return self._passed_to_forwarding_function(call)

    def _passed_to_forwarding_function(self, call: cst.Call) -> WrappedForward | None:
        callee = self._reach.callee(call)
        if callee is None:
            return None
        params = [p for p in callee.params.params if p.name.value not in ("self", "cls")]
        for position, arg in enumerate(a for a in call.args if a.keyword is None and not a.star):
            if position < len(params):
                found = self._forwarding(call, arg.value, params[position].name.value, callee)
                if found is not None:
                    return found
        for arg in call.args:
            if arg.keyword is not None:
                found = self._forwarding(call, arg.value, arg.keyword.value, callee)
                if found is not None:
                    return found
        return None

    def _forwarding(
        self, call: cst.Call, value: cst.BaseExpression, param: str, callee: cst.FunctionDef
    ) -> WrappedForward | None:
        key = dotted_name(value)
        if key is None:
            return None
        wrapper = self._wrapper_of(key, call)
        if wrapper is None and not self._handed(key, call):
            return None
        inner = self._forward_of_parameter(call, callee, param, 0)
        return WrappedForward(call, wrapper, key, inner) if inner is not None else None

    def _forward_of_parameter(
        self, entry: cst.Call, function: cst.FunctionDef, param: str, depth: int
    ) -> cst.Call | None:
        """The call in ``function`` (entered by ``entry``) that runs the forward of its
        parameter ``param``: ``param(x)``, or through a function of this module it passes
        ``param`` on to (``validation_run(model)`` -> ``train(model)`` -> ``model(x)``).
        A call under ``if flag:`` that ``entry`` switches off (``flag=False``) is not."""
        for inner in self._index.walk_within(function.body):
            if not isinstance(inner, cst.Call) or self._switched_off(entry, function, inner):
                continue
            if dotted_name(_forward_target(inner)) == param:
                return inner
            if depth >= _MAX_PASSING:
                continue
            callee = self._reach.callee(inner)
            if callee is None or callee is function:
                continue
            for arg in inner.args:
                if isinstance(arg.value, cst.Name) and arg.value.value == param:
                    target = parameter_filled(inner, callee, arg)
                    found = (
                        self._forward_of_parameter(inner, callee, target, depth + 1)
                        if target
                        else None
                    )
                    if found is not None:
                        return found
        return None

    def _wrapper_of(self, key: str, use: cst.CSTNode, depth: int = 0) -> cst.Call | None:
        """The ``DistributedDataParallel(...)`` call ``key`` holds where ``use`` stands:
        bound earlier in the same function (or at module level), ``self.attr`` bound in
        any method of the class, or a parameter that every call of the function in this
        module passes a wrapped model (``model = DDP(model); train(model)``)."""
        function = self._index.enclosing_function(use)
        bound = self._bound_wrapper(key, use, function)
        if bound is None and depth < 2 and function is not None and _is_parameter(function, key):
            return self._passed_wrapper(function, key, depth)
        return bound

    def _bound_wrapper(
        self, key: str, use: cst.CSTNode, function: cst.FunctionDef | None
    ) -> cst.Call | None:
        for assign, value in self._wrapping_assignments:
            if not any(dotted_name(t.target) == key for t in assign.targets):
                continue
            if key.startswith("self."):
                if self._same_class(assign, use):
                    return value
            elif self._index.enclosing_function(assign) is function and (
                self._index.order[assign] < self._index.order[use]
            ):
                return value
        return None

    def _passed_wrapper(self, function: cst.FunctionDef, param: str, depth: int) -> cst.Call | None:
        wrappers = []
        for call in self._index.nodes(cst.Call):
            if self._reach.callee(call) is not function:
                continue
            value = _argument_for(call, function, param)
            key = dotted_name(value) if value is not None else None
            wrapper = self._wrapper_of(key, call, depth + 1) if key is not None else None
            if wrapper is None:
                return None  # some caller passes something else: not known
            wrappers.append(wrapper)
        return wrappers[0] if wrappers else None

    def _switched_off(self, entry: cst.Call, function: cst.FunctionDef, node: cst.CSTNode) -> bool:
        """``node`` sits under ``if flag:`` where ``entry`` switches the parameter
        ``flag`` of ``function`` off (``switched_off_parameters``), or in the ``else`` of
        one (or under ``if not flag:``) where ``entry`` passes ``flag=True``."""
        off = switched_off_parameters(entry, function)
        child = node
        for ancestor in self._index.ancestors(node):
            if ancestor is function:
                return False
            if isinstance(ancestor, cst.If):
                test, runs_when_on = ancestor.test, child is not ancestor.orelse
                if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                    test, runs_when_on = test.expression, not runs_when_on
                if isinstance(test, cst.Name) and _is_parameter(function, test.value):
                    if runs_when_on and test.value in off:
                        return True
                    passed = _argument_for(entry, function, test.value)
                    if not runs_when_on and passed is not None and literal_value(passed) is True:
                        return True
            child = ancestor
        return False

    def _same_class(self, first: cst.CSTNode, second: cst.CSTNode) -> bool:
        classes = []
        for node in (first, second):
            function = self._index.enclosing_function(node)
            classes.append(self._index.enclosing_class(function) if function else None)
        return classes[0] is not None and classes[0] is classes[1]


def _forward_target(call: cst.Call) -> cst.BaseExpression:
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "forward":
        return func.value
    return func


def _keeps_buffers_local(call: cst.Call) -> bool:
    """``broadcast_buffers=False``: the forward does not broadcast buffers."""
    arg = keyword_argument(call, "broadcast_buffers")
    return arg is not None and literal_value(arg.value) is False


def _is_parameter(function: cst.FunctionDef, name: str) -> bool:
    return any(p.name.value == name for p in function.params.params)


def _argument_for(
    call: cst.Call, function: cst.FunctionDef, param: str
) -> cst.BaseExpression | None:
    """The expression ``call`` passes for ``param`` of ``function`` (``self`` skipped)."""
    params = [p.name.value for p in function.params.params if p.name.value not in ("self", "cls")]
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == param:
            return arg.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    if param in params and params.index(param) < len(positional):
        return positional[params.index(param)].value
    return None
