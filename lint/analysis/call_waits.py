"""Which calls of one module may end with the host waiting for the device queue.

A call may (``CallWaits(call, scope)``) where what it runs may, by the cheap screen of
``wait_screen`` (over-approximating: a wait on some way through it with no substantial
work after it, or the same of the call its last work makes, is enough):

- a function of the module (``f(x)``, ``self.f(x)``, ``Cls(...)``'s ``__init__``): its
  own code, or a call in it that may wait (the module's functions followed a few calls
  deep, other modules' through the project model);
- another module's function or method as spelled (``losses.total(out, y)``,
  ``self.helper(x)`` of a project base class), a field or a module-level instance
  holding an instance of a project class whose ``__call__`` / ``forward`` may
  (``self.criterion(out, y)`` with ``self.criterion = Loss()`` in ``__init__``): what
  the project model says (``ProjectFacts.may_wait``);
- an instance of a class whose ``__call__`` / ``forward`` may wait (one of this module,
  or a project class the model says so of), followed through the module from the
  allocation that made it (``model = Net()``, ``self.criterion = Loss()``), also moved
  or wrapped (``model.cuda()``, ``model.to(d)``, ``DistributedDataParallel(model)``):
  ``model(x)``, ``self.model(x)``, ``criterion(out, y)``; the flow is a may-analysis;
- a function a module-level dispatch table holds (``CLICKS[kind](masks)`` with
  ``CLICKS = {"random": random_click, ...}``): any of them;
- a synchronous Horovod collective (``hvd.allgather(x)``:
  ``wait_screen.synchronous_collective``; the device queue judges synchronisations and
  barriers itself, by their backend).

A call nothing is known of (a parameter called, a library model) is not said to wait.
"""

from __future__ import annotations

import ast
from functools import cached_property

from ddplint.analysis.api import DDP_WRAPPERS
from ddplint.analysis.control_flow import own_nodes
from ddplint.analysis.names import Names, dotted_name
from ddplint.analysis.object_flow import Function, ModuleCode, ObjectFlow
from ddplint.analysis.project import ProjectFacts
from ddplint.analysis.wait_screen import ending_wait, group_nodes, synchronous_collective

#: How many of the module's functions deep a call is followed.
_DEPTH = 4
#: Methods of a module that return the module itself, moved or switched.
_SELF_RETURNING = frozenset({"cuda", "to", "train", "float", "half", "bfloat16", "double"})
#: Library calls that return the model they are handed, wrapped (its call runs the
#: model's forward).
_WRAPPERS = DDP_WRAPPERS | {"torch.nn.DataParallel", "torch.compile"}
#: The methods a call of an instance runs, in the order Python looks for them.
_CALL_METHODS = ("__call__", "forward")


class CallWaits:
    """Which calls of one module may make the host wait for the device."""

    def __init__(self, code: ModuleCode, names: Names, project: ProjectFacts) -> None:
        self.code = code
        self.names = names
        self.project = project
        self._functions: dict[Function, bool] = {}
        self._open: list[Function] = []

    def __call__(self, call: ast.Call, scope: ast.AST) -> bool:
        """Whether ``call`` (in ``scope``) may make the host wait for the device."""
        callee = self.code.callee(call, scope)
        if callee is not None:
            return self.function_may_wait(callee[0])
        if synchronous_collective(call, self.names.resolve):
            return True
        func = call.func
        spelled = dotted_name(func)
        if spelled is not None and self.project.may_wait(spelled, self._owner(scope)):
            return True
        if isinstance(func, ast.Subscript):
            return any(self._named_may_wait(entry) for entry in self._table_entries(func.value))
        return isinstance(func, (ast.Name, ast.Attribute)) and self._instances.carries(func, scope)

    def _named_may_wait(self, entry: ast.expr) -> bool:
        """Whether the function a dispatch table names may wait (one of the module's,
        or another module's as the project model says)."""
        if not isinstance(entry, (ast.Name, ast.Attribute)):
            return False
        module = self.code.nodes.module
        callee = self.code.callee(ast.Call(func=entry, args=[], keywords=[]), module)
        if callee is not None:
            return self.function_may_wait(callee[0])
        spelled = dotted_name(entry)
        return spelled is not None and self.project.may_wait(spelled, None)

    def _table_entries(self, table: ast.expr) -> list[ast.expr]:
        """The values of a dispatch table the module binds at its top level to a dict,
        list or tuple display (``CLICKS = {"random": random_click, ...}``;
        ``CLICKS[kind](masks)`` runs one of them)."""
        if not isinstance(table, ast.Name):
            return []
        found: list[ast.expr] = []
        for statement in self.code.nodes.module.body:
            if not (
                isinstance(statement, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == table.id for t in statement.targets)
            ):
                continue
            value = statement.value
            if isinstance(value, ast.Dict):
                found.extend(value.values)
            elif isinstance(value, (ast.List, ast.Tuple)):
                found.extend(value.elts)
        return found

    def function_may_wait(self, function: Function) -> bool:
        """Whether the module's ``function`` may end with a wait: its own code (a wait
        with no substantial work after it), or a call of its last work that does
        (unknown past ``_DEPTH`` calls, or in a cycle: no)."""
        known = self._functions.get(function)
        if known is not None:
            return known
        if function in self._open or len(self._open) >= _DEPTH:
            return False
        self._open.append(function)
        try:
            waits, tail = ending_wait(group_nodes(own_nodes(function)), self.names.resolve)
            found = waits or any(self(call, function) for call in tail)
        finally:
            self._open.pop()
        self._functions[function] = found
        return found

    def _owner(self, scope: ast.AST) -> str | None:
        cls = self.code.class_of(scope)
        return cls.name if cls is not None else None

    def _made(self, expression: ast.expr, scope: ast.AST) -> bool:
        """An instance of a class whose call may wait (``Loss(...)``): of this module
        (its ``__call__`` / ``forward`` screened here) or of another (the project's
        answer)."""
        if not isinstance(expression, ast.Call):
            return False
        func = expression.func
        if isinstance(func, ast.Name) and func.id in self.code.classes:
            cls = self.code.classes[func.id]
            for name in _CALL_METHODS:
                method = self.code.method(cls, name)
                if method is not None:
                    return self.function_may_wait(method)
        spelled = dotted_name(func)
        return spelled is not None and self.project.instances_may_wait(spelled, self._owner(scope))

    @cached_property
    def _allocations(self) -> ObjectFlow:
        return ObjectFlow(self.code, self._made)

    def _made_or_wrapped(self, expression: ast.expr, scope: ast.AST) -> bool:
        """Such an instance, or one moved (``.cuda()``, ``.to(d)``) or wrapped
        (``DistributedDataParallel(model)``)."""
        if not isinstance(expression, ast.Call):
            return False
        if self._made(expression, scope):
            return True
        inner = self._wrapped_model(expression)
        if inner is None:
            return False
        if isinstance(inner, (ast.Name, ast.Attribute)) and self._allocations.carries(inner, scope):
            return True
        return self._made_or_wrapped(inner, scope)

    @cached_property
    def _instances(self) -> ObjectFlow:
        """Where such instances travel in the module, moved and wrapped included."""
        return ObjectFlow(self.code, self._made_or_wrapped)

    def _wrapped_model(self, call: ast.Call) -> ast.expr | None:
        """The model a call returns moved or wrapped: ``m`` of ``m.cuda()``,
        ``m.to(d)``, ``DistributedDataParallel(m, ...)``."""
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in _SELF_RETURNING:
            return func.value
        if self.names.resolve(func) in _WRAPPERS and call.args:
            return call.args[0]
        return None
