"""What a cluster launcher written in the same file allocates: nodes, tasks per node,
GPUs per node (SLURM sections, Hydra's submitit launcher ``hydra.launcher``).

Only sections whose job is the allocation are read: ``hydra.launcher`` (not a local
launcher), and top-level ``slurm:`` / ``submitit:`` / ``cluster:`` / ``launcher:``
mappings. Values that are not plain integers (resolvers, ``???``) are unknown and left
out.
"""

from __future__ import annotations

from dataclasses import dataclass

from ddplint.config.document import ConfigDocument, KeyPath
from ddplint.config.nemo import class_name

ALLOCATION_SECTIONS: tuple[KeyPath, ...] = (
    ("hydra", "launcher"),
    ("slurm",),
    ("submitit",),
    ("cluster",),
    ("launcher",),
)
NODE_KEYS = ("nodes", "num_nodes", "nnodes")
TASK_KEYS = ("ntasks_per_node", "tasks_per_node")
GPU_KEYS = ("gpus_per_node",)


@dataclass(frozen=True)
class Allocated:
    """One allocated quantity: its value and the key path that states it."""

    value: int
    path: KeyPath


@dataclass(frozen=True)
class Allocation:
    nodes: Allocated | None
    tasks_per_node: Allocated | None
    gpus_per_node: Allocated | None


def allocation(doc: ConfigDocument) -> Allocation | None:
    """The first allocation section of the document with a known quantity, or None."""
    for section in ALLOCATION_SECTIONS:
        mapping = doc.mapping(section)
        if mapping is None or _is_local_launcher(doc, section):
            continue
        found = Allocation(
            _first_int(doc, section, NODE_KEYS),
            _first_int(doc, section, TASK_KEYS),
            _first_int(doc, section, GPU_KEYS),
        )
        if found.nodes or found.tasks_per_node or found.gpus_per_node:
            return found
    return None


def _is_local_launcher(doc: ConfigDocument, section: KeyPath) -> bool:
    """Hydra's ``submitit_local`` / joblib launchers start processes on this machine:
    there is no scheduler allocation to compare with."""
    name = class_name(doc.value((*section, "_target_"))) or ""
    return "Local" in name or "Joblib" in name or "Ray" in name


def _first_int(doc: ConfigDocument, section: KeyPath, keys: tuple[str, ...]) -> Allocated | None:
    for key in keys:
        value = doc.value((*section, key))
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return Allocated(value, (*section, key))
    return None
