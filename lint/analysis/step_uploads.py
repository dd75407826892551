"""Tensors built from host data on a device every training step: a question to the
analysis core.

``step_uploads(analysis, paths, queue)``: each ``torch.tensor(values, device=...)`` /
``torch.as_tensor(...)`` (``host_waits.UPLOADING_FACTORIES``) on the step path
(``step_paths``: a forward, a training step, a step hook, a training loop's body and
the module's functions they call; evaluation steps left out) whose target device is not
the CPU and whose values are made on the host: a non-empty list or tuple, a
comprehension, a number, arithmetic of those, ``len(...)`` and the other builtins that
return Python values, a shape (``x.shape``, ``x.size(0)``), or a name whose binding
before the call is one of those (``straight_bindings``: a re-bound name is its new
value). Each is a copy from pageable host memory, which ends in a stream
synchronisation.

Not an upload every step: what the step path leaves out (a call that runs now and then,
fills a cache once, runs in one process), and one after an earlier wait of the same pass
with nothing new queued (``device_queue.queue_drained``: its synchronisation waits for
nothing, or a read of the data within the call itself).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ddplint.analysis.control_flow import holds_node, own_nodes
from ddplint.analysis.device_queue import DeviceQueue, is_shape_read
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.host_waits import UPLOADING_FACTORIES, end_of, is_host_read, start_of
from ddplint.analysis.names import Names, call_argument
from ddplint.analysis.step_paths import StepPath, StepPaths
from ddplint.analysis.straight_bindings import last_straight_binding

#: Builtins whose result is a Python value.
HOST_BUILTINS = frozenset({"len", "list", "tuple", "range", "int", "float", "sum", "max", "min"})
#: How far a name is followed to the value bound to it.
_DEPTH = 2
Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class HostUpload:
    """A tensor built from host data on a device, every step, and why it runs every
    step."""

    call: ast.Call
    path: StepPath


def step_uploads(
    analysis: ModuleAnalysis, paths: StepPaths, queue: DeviceQueue | None = None
) -> list[HostUpload]:
    """The module's uploads of host data that run every training step."""
    queue = queue if queue is not None else DeviceQueue(paths.waits, analysis)
    found = []
    for call in analysis.nodes.of_type(ast.Call):
        if analysis.names.resolve(call.func) not in UPLOADING_FACTORIES:
            continue
        function = paths.function_of(call)
        uploads = _HostData(analysis.names, function, call)
        if not (uploads.to_device() and uploads.host_data()):
            continue
        path = paths.reason(call)
        if path is None or queue.queue_drained(call) or _reads_first(call):
            continue
        if queue.waited_next(call, lambda graph, node: not queue.uploads_alone(graph, node)):
            continue  # the host waits for the queue right after anyway (not by another copy)

        found.append(HostUpload(call, path))
    return found


def _reads_first(call: ast.Call) -> bool:
    """The data is read to the host within the call (``torch.tensor((x.sum().item(), n),
    device=d)``): that read drains the queue just before the copy, which then waits for
    nothing."""
    data = call_argument(call, 0, "data")
    return data is not None and any(
        isinstance(node, ast.Call) and is_host_read(node) for node in ast.walk(data)
    )


class _HostData:
    """What one factory call is given: its target device and its data."""

    def __init__(self, names: Names, function: Function | None, call: ast.Call) -> None:
        self._names = names
        self._function = function
        self._call = call

    def to_device(self) -> bool:
        """``device=`` names something other than the CPU (or None): not ``"cpu"``,
        ``torch.device("cpu")``, nor a name bound to one of those before the call."""
        device = next((k.value for k in self._call.keywords if k.arg == "device"), None)
        if device is None:
            return False
        if isinstance(device, ast.Name):
            device = self._bound(device) or device
        return not self._on_cpu(device)

    def host_data(self) -> bool:
        data = call_argument(self._call, 0, "data")
        return data is not None and self._is_host(data, 0)

    def _on_cpu(self, device: ast.expr) -> bool:
        if isinstance(device, ast.Constant):
            return device.value is None or device.value == "cpu"
        return (
            isinstance(device, ast.Call)
            and self._names.resolve(device.func) == "torch.device"
            and len(device.args) == 1
            and isinstance(device.args[0], ast.Constant)
            and device.args[0].value == "cpu"
        )

    def _is_host(self, value: ast.expr, depth: int) -> bool:
        """Whether ``value`` is made on the host (a Python value, never a tensor)."""
        if isinstance(value, (ast.List, ast.Tuple)):
            # ``torch.tensor([])`` copies nothing; ``shapes = []`` is filled later
            return bool(value.elts) or depth > 0
        if isinstance(value, (ast.ListComp, ast.GeneratorExp)):
            return True
        if isinstance(value, ast.Constant):
            return isinstance(value.value, (int, float)) and not isinstance(value.value, bool)
        if isinstance(value, ast.UnaryOp):
            return self._is_host(value.operand, depth)
        if isinstance(value, ast.BinOp):
            if isinstance(value.op, ast.Mult) and any(
                isinstance(side, ast.List) and side.elts for side in (value.left, value.right)
            ):
                return True  # ``[0] * n``: a Python list, whatever ``n`` is
            return self._is_host(value.left, depth) and self._is_host(value.right, depth)
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            name = value.func.id
            return name in HOST_BUILTINS and self._names.resolve(value.func) == name
        if isinstance(value, ast.Subscript):
            return is_shape_read(value.value)
        if isinstance(value, (ast.Call, ast.Attribute)):
            return is_shape_read(value)
        if isinstance(value, ast.Name) and depth < _DEPTH:
            bound = self._bound(value)
            if bound is not None:
                return self._is_host(bound, depth + 1)
            values = self._every_binding(value.id)
            return bool(values) and all(self._is_host(v, depth + 1) for v in values)
        return False

    def _every_binding(self, name: str) -> list[ast.expr]:
        """The values the function binds ``name`` to before the call, by ``=``, ``+=``
        and annotated assignment (``masks = []`` ... ``masks += [0] * n``); none when it
        binds the name any other way before it (a loop target, an unpacking, a ``with``),
        or binds it after it while a loop holds the call (the binding may come round)."""
        function = self._function
        if function is None:
            return []
        bound: dict[int, tuple[ast.stmt, ast.expr]] = {}
        stores: list[ast.Name] = []
        looped = False
        for node in own_nodes(function):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id == name:
                stores.append(node)
            elif isinstance(node, ast.Assign):
                bound.update((id(t), (node, node.value)) for t in node.targets)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                bound[id(node.target)] = (node, node.value)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
                looped = looped or holds_node(node, self._call)
        values: list[ast.expr] = []
        for target in stores:
            found = bound.get(id(target))
            if found is not None and end_of(found[0]) <= start_of(self._call):
                values.append(found[1])
            elif found is None and start_of(target) < start_of(self._call):
                return []  # bound before the call some other way
            elif looped:
                return []
        return values

    def _bound(self, name: ast.Name) -> ast.expr | None:
        if self._function is None:
            return None
        return last_straight_binding(self._function, self._call, name.id)
