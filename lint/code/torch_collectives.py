"""Interim: ``torch.distributed`` functions by resolved name, and which of them are
collectives (every rank of the group must call them, in the same order).

This is deliberately small: the shared catalogue of collective-bearing calls
(Lightning, accelerate, DeepSpeed, DDP forward, ...) lives in
``lint/code/collectives.py``; rules that ask "is this a collective?" should move to it.
Until then, this module is the one place they ask.
"""

from __future__ import annotations

import libcst as cst

from lint.code.names import ImportTable

_TORCH_DISTRIBUTED_MODULES = (
    "torch.distributed.",
    "torch.distributed.distributed_c10d.",
    "torch.distributed.c10d.",
)
TORCH_COLLECTIVES = frozenset(
    {
        "barrier",
        "monitored_barrier",
        "all_reduce",
        "all_gather",
        "all_gather_into_tensor",
        "all_gather_object",
        "all_gather_coalesced",
        "broadcast",
        "broadcast_object_list",
        "reduce",
        "reduce_scatter",
        "reduce_scatter_tensor",
        "gather",
        "gather_object",
        "scatter",
        "scatter_object_list",
        "all_to_all",
        "all_to_all_single",
        "new_group",
        "new_subgroups",
    }
)


def torch_distributed_function(qualified: str | None) -> str | None:
    """``barrier`` for ``torch.distributed.barrier`` (or its ``distributed_c10d``
    spelling); None for anything outside ``torch.distributed``'s top level."""
    if qualified is None:
        return None
    for prefix in _TORCH_DISTRIBUTED_MODULES:
        if qualified.startswith(prefix):
            rest = qualified[len(prefix) :]
            if rest.isidentifier():
                return rest
    return None


def torch_distributed_call(names: ImportTable, call: cst.Call) -> str | None:
    """The ``torch.distributed`` function ``call`` calls, by its short name."""
    return torch_distributed_function(names.qualified_name(call.func))


def is_torch_collective(names: ImportTable, call: cst.Call) -> bool:
    """Whether ``call`` is a ``torch.distributed`` collective."""
    return torch_distributed_call(names, call) in TORCH_COLLECTIVES
