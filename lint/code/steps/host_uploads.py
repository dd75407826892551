"""Tensors built from host data on a device every training step: ``torch.tensor(values,
device=...)`` / ``torch.as_tensor(...)`` in a forward path (``forward`` / ``training_step``
of a module and what they call) or a step hook, where ``values`` is made on the host
(a list, tuple or comprehension, a number, ``len(...)``, a shape, or a name whose last
assignment before the call is one of those).

Each is a host-to-device copy from pageable memory, which PyTorch finishes with a stream
synchronisation: the CPU waits for every kernel queued before it. Left out: a target
device that is the CPU, data that may already be a tensor (no copy), an empty list, a
call under a sparse condition (``if step % 100 == 0``), evaluation steps
(``validation_step``, ...) and test files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from ddplint.analysis.host_waits import UPLOADING_FACTORIES
from ddplint.code.ranks.one_process import OneProcessPaths
from ddplint.code.steps.forward_paths import ForwardPaths, PathReason
from ddplint.code.steps.sparse_conditions import under_sparse_condition
from ddplint.code.steps.step_hooks import StepHooks
from ddplint.code.steps.step_waits import StepWaits
from ddplint.code.syntax.call_args import argument, keyword_argument
from ddplint.code.syntax.device_values import is_cpu_device
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import ImportTable

#: Factories that copy host data to ``device=`` (their first argument is the data).
#: Entries of forward paths that do not run per training step.
_EVALUATION_ENTRY = re.compile(r"validation_step|test_step|predict_step")
#: Calls whose result is a Python value.
HOST_CALLS = frozenset({"len", "list", "tuple", "range", "int", "float", "sum", "max", "min"})
#: Attributes / methods that give Python ints from a tensor's metadata.
SHAPE_READS = frozenset({"shape", "size", "ndim", "dim", "numel"})


@dataclass(frozen=True)
class HostUpload:
    """A tensor built from host data on a device, every step."""

    call: cst.Call
    reason: PathReason


class HostUploads:
    """The module's per-step uploads of host data."""

    def __init__(
        self,
        index: ModuleIndex,
        names: ImportTable,
        forward_paths: ForwardPaths,
        step_hooks: StepHooks,
        waits: StepWaits | None = None,
        *,
        in_training: bool = True,
        one_process: OneProcessPaths | None = None,
    ) -> None:
        self._one_process = one_process
        self._index = index
        self._names = names
        self._forward = forward_paths
        self._hooks = step_hooks
        self._waits = waits
        self.found = self._find() if in_training else []

    def _find(self) -> list[HostUpload]:
        found = []
        for call in self._index.nodes(cst.Call):
            if self._names.qualified_name(call.func) not in UPLOADING_FACTORIES:
                continue
            if not self._to_device(call) or not self._host_data(call):
                continue
            reason = self._forward.reason_for(call) or self._hooks.reason_for(
                self._index.enclosing_function(call)
            )
            if reason is None or _EVALUATION_ENTRY.search(reason.entry):
                continue
            if under_sparse_condition(self._index, call) or self._costs_nothing(call):
                continue
            if self._one_process is not None and self._one_process.holds(call):
                continue  # a single-process job: no peer waits on it
            found.append(HostUpload(call, reason))
        return found

    def _costs_nothing(self, call: cst.Call) -> bool:
        """Built only while a cache is empty (the first step) or only now and then (on an
        error, a periodic test, an export, a single-process run), or after an earlier
        host read of the same pass drained the queue (the copy's synchronisation waits
        for nothing)."""
        return self._waits is not None and (
            self._waits.filled_once(call)
            or self._waits.occasional(call) is not None
            or self._waits.queue_drained(call)
        )

    def _to_device(self, call: cst.Call) -> bool:
        """``device=`` names something other than the CPU (or None): not ``"cpu"``,
        ``torch.device("cpu")``, nor a name last bound to one of those."""
        device = keyword_argument(call, "device")
        if device is None:
            return False
        value = device.value
        if isinstance(value, cst.Name) and value.value == "None":
            return False
        if isinstance(value, cst.Name):
            bound = self._last_value_before(call, value.value)
            value = bound if bound is not None else value
        return not is_cpu_device(value, self._names)

    def _host_data(self, call: cst.Call) -> bool:
        data = argument(call, "data", 0)
        return data is not None and self._is_host(call, data.value, depth=0)

    def _is_host(self, site: cst.CSTNode, value: cst.BaseExpression, depth: int) -> bool:
        """Whether ``value`` is made on the host (a Python value, never a tensor)."""
        if isinstance(value, (cst.List, cst.Tuple)):
            # ``torch.tensor([])`` copies nothing; ``shapes = []`` is filled later
            return bool(value.elements) or depth > 0
        if isinstance(value, (cst.ListComp, cst.Integer, cst.Float)):
            return True
        if isinstance(value, cst.UnaryOperation):
            return self._is_host(site, value.expression, depth)
        if isinstance(value, cst.BinaryOperation):
            return self._is_host(site, value.left, depth) and self._is_host(
                site, value.right, depth
            )
        if isinstance(value, cst.Call):
            func = value.func
            if isinstance(func, cst.Name) and func.value in HOST_CALLS:
                return True
            return isinstance(func, cst.Attribute) and func.attr.value in SHAPE_READS
        if isinstance(value, cst.Subscript):
            target = value.value
            return isinstance(target, cst.Attribute) and target.attr.value in SHAPE_READS
        if isinstance(value, cst.Name) and depth < 2:
            bound = self._last_value_before(site, value.value)
            return bound is not None and self._is_host(site, bound, depth + 1)
        return False

    def _last_value_before(self, site: cst.CSTNode, name: str) -> cst.BaseExpression | None:
        """The value of the last ``name = value`` of the function before the statement
        of ``site`` (``shapes = []`` ... ``shapes = torch.as_tensor(shapes, ...)``);
        None when the function binds it no such way first."""
        function = self._index.enclosing_function(site)
        if function is None:
            return None
        statement = self._index.enclosing_statement(site)
        found: cst.BaseExpression | None = None
        for node in self._index.walk_within(function):
            if node is statement:
                return found
            if (
                isinstance(node, cst.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0].target, cst.Name)
                and node.targets[0].target.value == name
            ):
                found = node.value
        return None
