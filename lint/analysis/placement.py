"""Placement: whether a value is known to live on the host, so reading it waits for no
device.

``Placement.on_host(expression, scope)``, judged by what made the value:

- a Python value (a literal, a builtin's result, ``numpy`` / ``math`` / ``random``);
- a tensor already copied to the host (``x.cpu()``, ``x.numpy()``, ``x.to("cpu")``,
  ``x.tolist()``, ``x.item()``) and what is computed from one by its own methods
  (``x.cpu().unbind()``, ``x.cpu().mean()``), its items (``x.cpu()[0]``), its unpacked
  parts (``a, b = x.cpu().unbind()``) and the names bound to it;
- a tensor built without a device (``torch.tensor(values)``, ``torch.zeros(3)``,
  ``torch.from_numpy(a)``) or on the CPU (``device="cpu"``), and one cast to another
  dtype where it lives (``x.to(torch.int64)``, ``x.to(dtype=torch.long)``);
- what a ``for`` over a ``DataLoader`` made in the scope yields (``for step, (image,
  boxes) in enumerate(loader):``; the loader's every binding one, with no collate
  function of the module that moves values): a batch is collated on the host, and an
  item moved in the function (``image = image.cuda()``) is a binding that is not;
- a field of the instance (``self.labels``) every assignment of which in the class's
  methods is on the host, evaluated where it is made, and which no other code of the
  module stores;
- a call of a function of the module every return of which is on the host (at the
  position unpacked: ``ids, rewards = sample(...)`` with ``return ids, torch.tensor(r)``
  gives ``rewards`` on the host).

A name counts only where every binding of it in its scope is on the host (a parameter
is unknown); a value moved to a device (``.to(device)``, ``.cuda()``) is not on the host.

``Placement.on_device(expression, scope)``: known to be a tensor on a device (moved or
built there, the loss a backward runs from, what its own methods and arithmetic compute
from one). Neither: unknown (a parameter, another object's field).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from ddplint.analysis.api import DATA_LOADERS
from ddplint.analysis.constants import parameter_names
from ddplint.analysis.enumerate_loops import walked_iterable
from ddplint.analysis.host_waits import (
    HOST_MODULES,
    READ_METHODS,
    HostWaits,
    is_host_read,
    walk_own,
)
from ddplint.analysis.object_flow import ModuleCode
from ddplint.analysis.straight_bindings import last_straight_binding

#: Builtins whose result is a Python value.
HOST_BUILTINS = frozenset({"len", "float", "int", "bool", "str", "round"})
#: ``torch`` factories that build a tensor on the CPU unless ``device=`` says otherwise.
TORCH_FACTORIES = frozenset(
    {
        *("tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "arange"),
        *("rand", "randn", "randint", "linspace", "Tensor", "LongTensor", "FloatTensor"),
    }
)
#: Methods whose result lives where the tensor they run on lives.
_STAYING_METHODS = frozenset(
    {
        *("unbind", "split", "chunk", "view", "reshape", "flatten", "squeeze", "unsqueeze"),
        *("sum", "mean", "max", "min", "std", "var", "norm", "abs", "float", "double"),
        *("long", "int", "half", "detach", "clone", "contiguous", "numpy", "tolist", "item"),
        *("permute", "transpose", "exp", "log", "sqrt", "argmax", "argmin", "softmax"),
    }
)
#: ``torch`` dtypes by their last name (``x.to(torch.int64)`` keeps ``x`` where it is).
TORCH_DTYPES = frozenset(
    {
        *("float", "float16", "float32", "float64", "half", "double", "bfloat16"),
        *("int", "int8", "int16", "int32", "int64", "short", "long", "uint8", "bool"),
        *("complex64", "complex128", "cfloat", "cdouble"),
    }
)
#: Keywords of ``Tensor.to`` that leave the device as it is.
_CAST_KEYWORDS = frozenset({"dtype", "non_blocking", "copy", "memory_format"})
#: Tensor methods whose result is a Python value (a read).
_HOST_RESULTS = frozenset({"item", "tolist", "numpy"})
#: How far a value is followed through names, calls and returns.
_DEPTH = 4
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: What a name is bound to where the binding is not followed (no binding of that name
#: exists: it is on the host nowhere).
_UNKNOWN = ast.Name(id="")
#: What a name is bound to where the binding is a host value not written as one (an item
#: a ``DataLoader`` yields).
_HOST = ast.Constant(value=None)


class Placement:
    """Which values of one module are known to live on the host."""

    def __init__(self, where: HostWaits, code: ModuleCode | None = None) -> None:
        self.names = where.names
        self._code = code if code is not None else ModuleCode(where.nodes, where.names)
        self._bindings: dict[int, dict[str, list[tuple[ast.expr, int | None]]]] = {}

    def read_on_host(self, call: ast.Call, scope: ast.AST) -> bool:
        """Whether the host read ``call`` (``x.item()``, ``x.cpu()``) reads a value
        already on the host: it copies nothing from a device."""
        func = call.func
        return (
            is_host_read(call)
            and isinstance(func, ast.Attribute)
            and self.on_host(func.value, scope)
        )

    def on_host(self, expression: ast.expr, scope: ast.AST, depth: int = 0) -> bool:
        """Whether ``expression``, read in ``scope``, is known to live on the host."""
        if depth > _DEPTH:
            return False
        if isinstance(expression, (ast.Constant, ast.JoinedStr)):
            return True
        if isinstance(expression, (ast.List, ast.Tuple, ast.Set)):
            return all(self.on_host(e, scope, depth + 1) for e in expression.elts)
        if isinstance(expression, ast.Dict):
            return all(self.on_host(v, scope, depth + 1) for v in expression.values)
        if isinstance(expression, ast.Subscript):
            return self.on_host(expression.value, scope, depth + 1)
        if isinstance(expression, ast.BinOp):
            return self.on_host(expression.left, scope, depth + 1) and self.on_host(
                expression.right, scope, depth + 1
            )
        if isinstance(expression, ast.UnaryOp):
            return self.on_host(expression.operand, scope, depth + 1)
        if isinstance(expression, ast.Name):
            last = (
                last_straight_binding(scope, expression, expression.id)
                if isinstance(scope, _FUNCTIONS)
                else None
            )
            if last is not None:  # a re-bound name is its new value
                return self.on_host(last, scope, depth + 1)
            bound = self._bound(scope).get(expression.id, [])
            return bool(bound) and all(
                self._part_on_host(value, position, scope, depth + 1) for value, position in bound
            )
        if isinstance(expression, ast.Call):
            return self._call_on_host(expression, scope, depth)
        if isinstance(expression, ast.Attribute):
            made = self._field_values(expression, scope)
            return made is not None and all(
                self.on_host(value, method, depth + 1) for value, method in made
            )
        return False

    def on_device(self, expression: ast.expr, scope: ast.AST, depth: int = 0) -> bool:
        """Whether ``expression``, read in ``scope``, is known to be a tensor on a
        device: moved there (``x.cuda()``, ``x.to(device)``), built there
        (``torch.zeros(3, device=d)``, ``d`` not the CPU), what the scope runs a backward
        of (``loss`` of ``loss.backward()``: the model's output), what a tensor's own
        methods (``.mean()``, ``.detach()``) and arithmetic compute from one, and a name
        every binding of which is one (or that a backward runs from, no binding of it
        on the host)."""
        if depth > _DEPTH:
            return False
        if isinstance(expression, ast.Name):
            bound = self._bound(scope).get(expression.id, [])
            if not bound or any(v is _HOST for v, _ in bound):
                return False
            if expression.id in self._backpropagated(scope):
                return not any(self._part_on_host(v, p, scope, depth + 1) for v, p in bound)
            return all(
                position is None and self.on_device(value, scope, depth + 1)
                for value, position in bound
            )
        if isinstance(expression, ast.BinOp):
            sides = (expression.left, expression.right)
            return any(self.on_device(e, scope, depth + 1) for e in sides) and all(
                self.on_device(e, scope, depth + 1) or self.on_host(e, scope, depth + 1)
                for e in sides
            )
        if isinstance(expression, ast.UnaryOp):
            return self.on_device(expression.operand, scope, depth + 1)
        if not isinstance(expression, ast.Call):
            return False
        func = expression.func
        resolved = self.names.resolve(func) or ""
        if resolved.startswith("torch.") and resolved.rsplit(".", 1)[-1] in TORCH_FACTORIES:
            device = next((k.value for k in expression.keywords if k.arg == "device"), None)
            return device is not None and not (
                isinstance(device, ast.Constant) and device.value in ("cpu", None)
            )
        if not isinstance(func, ast.Attribute):
            return False
        if func.attr == "cuda" or (
            func.attr == "to"
            and expression.args
            and not _casts(expression, self.names.resolve)
            and not is_host_read(expression)
        ):
            return True
        return func.attr in _STAYING_METHODS - _HOST_RESULTS and self.on_device(
            func.value, scope, depth + 1
        )

    def _backpropagated(self, scope: ast.AST) -> set[str]:
        """The names ``scope`` runs a backward from (``loss.backward()``)."""
        return {
            node.func.value.id
            for node in walk_own(scope)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "backward"
            and isinstance(node.func.value, ast.Name)
        }

    def _field_values(
        self, field: ast.Attribute, scope: ast.AST
    ) -> list[tuple[ast.expr, ast.AST]] | None:
        """``self.x`` read in a method: each value the class's methods assign to it, with
        the method; None where the field is stored otherwise (an augmented assignment, an
        unpacking, another object's ``.x``) or is not the instance's."""
        cls = self._code.class_of(scope)
        if cls is None or not self._code.is_instance(field.value, scope):
            return None
        made: list[tuple[ast.expr, ast.AST]] = []
        for node in self._code.nodes.of_type(ast.Attribute):
            if node.attr != field.attr or not isinstance(node.ctx, ast.Store):
                continue
            method = self._code.scope_of(node)
            if self._code.class_of(method) is not cls or not self._code.is_instance(
                node.value, method
            ):
                return None
            assignment = self._assignment_of(node, method)
            if assignment is None:
                return None
            made.append((assignment, method))
        return made or None

    @staticmethod
    def _assignment_of(target: ast.Attribute, method: ast.AST) -> ast.expr | None:
        """The value ``target = value`` binds to it alone (None: bound otherwise)."""
        for node in walk_own(method):
            if isinstance(node, ast.Assign) and any(t is target for t in node.targets):
                return node.value
            if isinstance(node, ast.AnnAssign) and node.target is target:
                return node.value
        return None

    def _call_on_host(self, call: ast.Call, scope: ast.AST, depth: int) -> bool:
        func = call.func
        if is_host_read(call):
            return True
        resolved = self.names.resolve(func) or ""
        if resolved.startswith(HOST_MODULES):
            return True
        if isinstance(func, ast.Name) and func.id in HOST_BUILTINS:
            return func.id not in self.names.imports and not (
                isinstance(scope, _FUNCTIONS) and self._code.binds(scope, func.id)
            )
        if _casts(call, self.names.resolve):
            assert isinstance(func, ast.Attribute)
            return self.on_host(func.value, scope, depth + 1)
        if resolved.startswith("torch.") and resolved.rsplit(".", 1)[-1] in TORCH_FACTORIES:
            device = next((k.value for k in call.keywords if k.arg == "device"), None)
            return device is None or (isinstance(device, ast.Constant) and device.value == "cpu")
        if isinstance(func, ast.Attribute) and func.attr in _STAYING_METHODS | READ_METHODS:
            return self.on_host(func.value, scope, depth + 1)
        return self._returns_on_host(call, None, scope, depth)

    def _part_on_host(
        self, value: ast.expr, position: int | None, scope: ast.AST, depth: int
    ) -> bool:
        """Whether item ``position`` of ``value`` (the whole value when None) is on the
        host."""
        if position is None:
            return self.on_host(value, scope, depth)
        if isinstance(value, (ast.Tuple, ast.List)) and position < len(value.elts):
            return self.on_host(value.elts[position], scope, depth)
        if isinstance(value, ast.Call) and self._returns_on_host(value, position, scope, depth):
            return True
        return not isinstance(value, (ast.Tuple, ast.List)) and self.on_host(value, scope, depth)

    def _returns_on_host(
        self, call: ast.Call, position: int | None, scope: ast.AST, depth: int
    ) -> bool:
        """A call of a function of the module whose every return (item ``position`` of
        it) is on the host."""
        found = self._code.callee(call, scope)
        if found is None or depth > _DEPTH:
            return False
        function = found[0]
        returns = [
            node.value
            for node in walk_own(function)
            if isinstance(node, ast.Return) and node.value is not None
        ]
        return bool(returns) and all(
            self._part_on_host(value, position, function, depth + 1) for value in returns
        )

    def _bound(self, scope: ast.AST) -> dict[str, list[tuple[ast.expr, int | None]]]:
        """Each name of a scope: the values bound to it, with the item unpacked; a
        parameter or a binding not followed (a loop target, ``with ... as``) is bound to
        ``_UNKNOWN``."""
        table = self._bindings.get(id(scope))
        if table is not None:
            return table
        table = {}
        for parameter in parameter_names(scope) if isinstance(scope, _FUNCTIONS) else ():
            table.setdefault(parameter, []).append((_UNKNOWN, None))
        for node in walk_own(scope):
            if isinstance(node, ast.Assign):
                for each in node.targets:
                    _bind(table, each, node.value)
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                _bind(table, node.target, node.value)
            elif isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor, ast.withitem)):
                target = node.optional_vars if isinstance(node, ast.withitem) else node.target
                loop = node if isinstance(node, (ast.For, ast.AsyncFor)) else None
                yielded = _HOST if loop and self.walks_host_loader(loop, scope) else _UNKNOWN
                for name in ast.walk(target) if target is not None else ():
                    if isinstance(name, ast.Name):
                        table.setdefault(name.id, []).append((yielded, None))
            elif isinstance(node, ast.NamedExpr):
                _bind(table, node.target, node.value)
        self._bindings[id(scope)] = table
        return table

    def walks_host_loader(self, loop: ast.For | ast.AsyncFor, scope: ast.AST) -> bool:
        """Whether ``loop`` walks a ``DataLoader`` (through ``enumerate`` and progress
        bars) made in ``scope``, every binding of its name one, whose batches stay on the
        host: no collate function of the module that moves a value to a device."""
        walked = walked_iterable(self.names, loop.iter)
        made: list[ast.expr] = [walked]
        if isinstance(walked, ast.Name):
            if isinstance(scope, _FUNCTIONS) and walked.id in parameter_names(scope):
                return False
            made = [
                node.value
                for node in walk_own(scope)
                if isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == walked.id for t in node.targets)
            ]
            stored = sum(
                isinstance(n, ast.Name) and n.id == walked.id and isinstance(n.ctx, ast.Store)
                for n in walk_own(scope)
            )
            if stored != len(made):
                return False  # also bound by a loop, a ``with``, an unpacking
        return bool(made) and all(self._collates_on_host(value, scope) for value in made)

    def _collates_on_host(self, value: ast.expr, scope: ast.AST) -> bool:
        if not (isinstance(value, ast.Call) and self.names.resolve(value.func) in DATA_LOADERS):
            return False
        collate = next((k.value for k in value.keywords if k.arg == "collate_fn"), None)
        if collate is None:
            return True
        if isinstance(collate, ast.Lambda):
            return not _moves(collate)
        found = (
            self._code.callee(ast.Call(func=collate, args=[], keywords=[]), scope)
            if isinstance(collate, (ast.Name, ast.Attribute))
            else None
        )
        return found is None or not _moves(found[0])


def _casts(call: ast.Call, resolve: Callable[[ast.AST], str | None]) -> bool:
    """``x.to(torch.int64)``, ``x.to(dtype=torch.long)``: a cast that keeps the device."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "to"):
        return False
    dtypes = [*call.args, *(k.value for k in call.keywords if k.arg == "dtype")]
    return (
        bool(dtypes)
        and all(k.arg in _CAST_KEYWORDS for k in call.keywords)
        and all(_is_dtype(d, resolve) for d in dtypes)
    )


def blocking_move(call: ast.Call, resolve: Callable[[ast.AST], str | None]) -> bool:
    """``x.to(device)``, ``x.cuda()``: a move to a device (not a cast, not to the CPU)
    that the host waits for when ``x`` lives in pageable host memory (no
    ``non_blocking=True``: a copy from pageable memory synchronises the stream before
    it starts)."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in ("to", "cuda")):
        return False
    if any(
        k.arg == "non_blocking" and not (isinstance(k.value, ast.Constant) and not k.value.value)
        for k in call.keywords
    ):
        return False
    if func.attr == "cuda":
        return True
    if _casts(call, resolve):
        return False
    targets = [*call.args[:1], *(k.value for k in call.keywords if k.arg == "device")]
    return bool(targets) and not any(_host_or_meta(target) for target in targets)


def _host_or_meta(device: ast.expr) -> bool:
    """A literal device that is no accelerator: ``"cpu"``, ``"meta"``, ``None``."""
    if not isinstance(device, ast.Constant):
        return False
    return device.value is None or str(device.value).startswith(("cpu", "meta"))


def _is_dtype(expression: ast.expr, resolve: Callable[[ast.AST], str | None]) -> bool:
    resolved = resolve(expression) or ""
    return resolved.startswith("torch.") and resolved.removeprefix("torch.") in TORCH_DTYPES


def _moves(function: ast.AST) -> bool:
    """Whether code moves a value to a device (``.cuda()``, ``.to(...)``, ``device=``)."""
    return any(
        isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Attribute) and node.func.attr in ("cuda", "to"))
            or any(k.arg == "device" for k in node.keywords)
        )
        for node in ast.walk(function)
    )


def _bind(
    table: dict[str, list[tuple[ast.expr, int | None]]], target: ast.expr, value: ast.expr
) -> None:
    if isinstance(target, ast.Name):
        table.setdefault(target.id, []).append((value, None))
    elif isinstance(target, (ast.Tuple, ast.List)):
        for position, part in enumerate(target.elts):
            if isinstance(part, ast.Name):
                table.setdefault(part.id, []).append((value, position))
            else:
                for name in ast.walk(part):
                    if isinstance(name, ast.Name):
                        table.setdefault(name.id, []).append((_UNKNOWN, None))
