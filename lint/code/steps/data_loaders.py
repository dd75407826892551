"""Data loaders and distributed samplers by resolved name, and the names they are
bound to (``loader = DataLoader(...)``)."""

from __future__ import annotations

import libcst as cst

from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import ImportTable, dotted_name

DATA_LOADERS = frozenset(
    {
        "torch.utils.data.DataLoader",
        "torch.utils.data.dataloader.DataLoader",
        "torchdata.stateful_dataloader.StatefulDataLoader",
    }
)
DISTRIBUTED_SAMPLERS = frozenset(
    {
        "torch.utils.data.DistributedSampler",
        "torch.utils.data.distributed.DistributedSampler",
    }
)
#: Positions among DataLoader's positional parameters.
DATALOADER_POSITIONS = {"dataset": 0, "sampler": 3, "num_workers": 5}


def is_data_loader(names: ImportTable, call: cst.Call) -> bool:
    return names.qualified_name(call.func) in DATA_LOADERS


def is_distributed_sampler(names: ImportTable, call: cst.Call) -> bool:
    return names.qualified_name(call.func) in DISTRIBUTED_SAMPLERS


def bound_name(index: ModuleIndex, value: cst.BaseExpression) -> str | None:
    """``x`` (or ``self.x``) when ``value`` is the whole right side of ``x = value``."""
    parent = index.parent.get(value)
    if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is value:
        targets = (
            [t.target for t in parent.targets]
            if isinstance(parent, cst.Assign)
            else [parent.target]
        )
        if len(targets) == 1:
            return dotted_name(targets[0])
    return None
