"""Process groups a module creates, on LibCST (DDP501, DDP503; the core's is
``analysis/process_groups``): ``init_process_group`` calls with their backend, the
default group's backend, and whether a ``group=`` argument means the default group.

Backends are known only when spelled as a literal (``"nccl"``, ``Backend.NCCL``);
anything computed is unknown, and rules stay silent on unknown.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import libcst as cst

from ddplint.analysis.api import DEVICE_CHOICES as DEVICE_CHOICES
from ddplint.code.collectives.catalogue import torch_distributed_call, torch_distributed_function
from ddplint.code.syntax.call_args import argument
from ddplint.code.syntax.constants import constant_value
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import ImportTable

_WORLD_GROUPS = ("group.WORLD", "GroupMember.WORLD")
#: Where ``backend`` sits among the positional parameters of the group creators.


@dataclass(frozen=True)
class InitCall:
    """One ``init_process_group`` call."""

    call: cst.Call
    backend: str | None


class ProcessGroups:
    """What one module says about its process groups."""

    def __init__(self, index: ModuleIndex, names: ImportTable) -> None:
        self._index = index
        self._names = names

    @cached_property
    def init_calls(self) -> list[InitCall]:
        calls = []
        for call in self._index.nodes(cst.Call):
            if torch_distributed_call(self._names, call) == "init_process_group":
                backend_arg = argument(call, "backend", 0)
                backend = self.backend_literal(backend_arg.value) if backend_arg else None
                calls.append(InitCall(call, backend))
        return calls

    @cached_property
    def default_backend(self) -> str | None:
        """The default group's backend when every ``init_process_group`` here names the
        same literal backend; else None."""
        backends = {init.backend for init in self.init_calls}
        if len(backends) == 1:
            return next(iter(backends))
        return None

    def backend_literal(self, expr: cst.BaseExpression) -> str | None:
        """``"nccl"`` for ``"nccl"``, ``"NCCL"`` or ``dist.Backend.NCCL``; None if not a
        literal backend."""
        value = constant_value(self._index, expr)
        if isinstance(value, str):
            return value.strip().lower() or None
        qualified = self._names.qualified_name(expr)
        if qualified is not None:
            head, _, member = qualified.rpartition(".")
            if torch_distributed_function(head) == "Backend" and member.isupper():
                return member.lower()
        return None

    def is_default_group(self, group: cst.Arg | None) -> bool:
        """Whether a ``group=`` argument (None when absent) means the default group."""
        return group is None or _is_none(group.value) or self._is_world(group.value)

    def _is_world(self, expr: cst.BaseExpression) -> bool:
        qualified = self._names.qualified_name(expr) or ""
        return any(
            qualified == f"{module}.{group}"
            for module in ("torch.distributed", "torch.distributed.distributed_c10d")
            for group in _WORLD_GROUPS
        )


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"
