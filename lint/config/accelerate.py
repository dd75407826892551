"""accelerate launch configs (``accelerate config`` writes them; ``accelerate launch
--config_file`` reads them): which launcher they choose and how many processes it
starts on each machine."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ddplint.config.document import ConfigDocument
from ddplint.config.values import ABSENT, positive_int

#: Cheap text check before a file is loaded.
ACCELERATE_NEEDLES = ("distributed_type",)
#: ``distributed_type`` values ``accelerate launch`` starts one process per device for,
#: through torchrun or the DeepSpeed launcher (``multi_gpu_launcher`` /
#: ``deepspeed_launcher``); ``*_VISIBLE_DEVICES`` is set from ``gpu_ids``.
PROCESS_PER_DEVICE = frozenset(
    {
        "MULTI_GPU",
        "MULTI_NPU",
        "MULTI_MLU",
        "MULTI_SDAA",
        "MULTI_MUSA",
        "MULTI_XPU",
        "MULTI_HPU",
        "MULTI_NEURON",
        "DEEPSPEED",
        "FSDP",
        "MEGATRON_LM",
    }
)
#: The ``MULTI_*`` types: ``accelerate launch`` refuses fewer than two ``gpu_ids`` for them.
MULTI_DEVICE = frozenset(t for t in PROCESS_PER_DEVICE if t.startswith("MULTI_"))


def is_accelerate_config(root: Any) -> bool:
    """A mapping with ``distributed_type`` beside ``compute_environment`` or
    ``num_processes`` (the keys ``accelerate config`` always writes)."""
    return (
        isinstance(root, Mapping)
        and "distributed_type" in root
        and ("compute_environment" in root or "num_processes" in root)
    )


@dataclass(frozen=True)
class AccelerateLayout:
    """What an accelerate config says about processes; None where it is not a plain
    value. ``gpu_ids`` is None for ``all`` (or absent)."""

    distributed_type: str | None
    num_processes: int | None
    num_machines: int | None
    gpu_ids: tuple[str, ...] | None


def _gpu_ids(value: Any) -> tuple[str, ...] | None:
    """``"0,1"``, ``0`` or a list: the ids; ``all``, absent or unknown: None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return (str(value),)
    if isinstance(value, list):
        return tuple(str(v) for v in value) or None
    if isinstance(value, str) and value.strip().lower() != "all":
        ids = tuple(part.strip() for part in value.split(",") if part.strip())
        return ids if ids and all(i.isdigit() for i in ids) else None
    return None


def layout(doc: ConfigDocument) -> AccelerateLayout:
    kind = doc.value(("distributed_type",))
    machines = doc.value(("num_machines",))
    return AccelerateLayout(
        distributed_type=kind.upper() if isinstance(kind, str) else None,
        num_processes=positive_int(doc.value(("num_processes",))),
        num_machines=1 if machines is ABSENT or machines is None else positive_int(machines),
        gpu_ids=_gpu_ids(doc.value(("gpu_ids",))),
    )
