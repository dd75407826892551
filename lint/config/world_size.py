"""How many processes a training config starts: ``trainer.devices`` x ``trainer.num_nodes``
(Lightning's forms: int, -1, "auto", a list of indices, "0,1", "2"; 1.x ``gpus``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ddplint.config.document import ConfigDocument
from ddplint.config.training import lightning_trainer
from ddplint.config.values import ABSENT, UNKNOWN


@dataclass(frozen=True)
class WorldSize:
    """``processes`` is the count when known; ``may_be_multi`` says whether more than
    one process is possible (a known count above 1, ``devices: -1`` / ``auto`` on a GPU,
    or several nodes)."""

    processes: int | None
    may_be_multi: bool
    describe: str

    @property
    def single(self) -> bool:
        return not self.may_be_multi


def count_devices(devices: Any) -> int | str | None:
    """A count, None when it cannot be known, or "all" for every visible device."""
    if devices is ABSENT or devices is None:
        return "all"  # Lightning's default is "auto"
    if devices is UNKNOWN:
        return None
    if isinstance(devices, bool):
        return None
    if isinstance(devices, int):
        if devices == -1:
            return "all"
        return devices if devices > 0 else None
    if isinstance(devices, list):
        return len(devices) or None
    if isinstance(devices, str):
        text = devices.strip().lower()
        if text in ("auto", "-1"):
            return "all"
        if text.isdigit():
            return int(text) or None
        if "," in text:
            parts = [p.strip() for p in text.split(",") if p.strip()]
            return len(parts) if parts and all(p.isdigit() for p in parts) else None
    return None


def _processes(count: int) -> str:
    return f"{count} process" if count == 1 else f"{count} processes"


def on_cpu(doc: ConfigDocument) -> bool:
    """``trainer.accelerator: cpu``."""
    accelerator = doc.value(("trainer", "accelerator"))
    return isinstance(accelerator, str) and accelerator.lower() == "cpu"


def _declared_world_size(doc: ConfigDocument) -> WorldSize:
    """A config without a Lightning trainer that states its world size at the top
    (``world_size: 4``, as icefall / k2 recipes pass it to their launcher)."""
    declared = doc.value(("world_size",))
    if isinstance(declared, int) and not isinstance(declared, bool) and declared > 0:
        return WorldSize(declared, declared > 1, f"world_size: {declared}")
    return WorldSize(None, False, "no Lightning trainer section")


def world_size(doc: ConfigDocument) -> WorldSize:
    trainer = lightning_trainer(doc.root)
    if trainer is None:
        return _declared_world_size(doc)
    devices = doc.value(("trainer", "devices"))
    if devices is ABSENT and "gpus" in trainer:
        devices = doc.value(("trainer", "gpus"))
    if isinstance(devices, Mapping):
        devices = UNKNOWN
    nodes = doc.value(("trainer", "num_nodes"))
    if nodes is ABSENT or nodes is None:
        nodes = 1
    count = count_devices(devices)
    shown = "auto" if devices is ABSENT else "?" if devices is UNKNOWN else devices
    if not isinstance(nodes, int) or isinstance(nodes, bool) or nodes < 1:
        multi = count == "all" or (isinstance(count, int) and count > 1)
        return WorldSize(None, multi, f"devices: {shown}, num_nodes unknown")
    text = f"devices: {shown} x num_nodes: {nodes}"
    if isinstance(count, int):
        total = count * nodes
        return WorldSize(total, total > 1, f"{text} = {_processes(total)}")
    if count == "all":
        if on_cpu(doc):
            # "auto" on CPU is one process per node.
            return WorldSize(nodes, nodes > 1, f"{text} on CPU = {_processes(nodes)}")
        return WorldSize(None, True, f"{text} (every visible GPU)")
    return WorldSize(None, nodes > 1, f"{text} (device count unknown)")
