"""``IterableDataset`` subclasses a module defines, whether they split their stream by
rank, and the ``DataLoader`` calls they feed.

A class "splits by rank" when anything in it (or in a base class of the same module)
names a rank, world size, shard, replica or node: ``self.rank``, ``get_world_size()``,
``split_by_node``, ``num_shards``. That is generous on purpose: only a class that never
mentions how ranks share the stream is taken to hand every rank all of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import libcst as cst

from ddplint.code.steps.data_loaders import DATALOADER_POSITIONS, bound_name, is_data_loader
from ddplint.code.syntax.call_args import argument
from ddplint.code.syntax.constants import single_assignment
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import ImportTable, dotted_name

ITERABLE_DATASET_BASES = frozenset(
    {
        "torch.utils.data.IterableDataset",
        "torch.utils.data.dataset.IterableDataset",
        "torch.utils.data.IterDataPipe",
        "torch.utils.data.datapipes.datapipe.IterDataPipe",
    }
)
_RANK_WORDS = (
    "rank",
    "world",
    "shard",
    "replica",
    "node",
    "num_processes",
    "process_index",
    "partition",
)


@dataclass(frozen=True)
class IterableLoader:
    """A ``DataLoader`` over an instance of an ``IterableDataset`` class of this module."""

    call: cst.Call
    dataset_class: cst.ClassDef
    name: str | None


class IterableDatasets:
    """The module's ``IterableDataset`` classes and the loaders built on them."""

    def __init__(self, index: ModuleIndex, names: ImportTable) -> None:
        self._index = index
        self._names = names
        self._classes = {c.name.value: c for c in index.nodes(cst.ClassDef)}

    @cached_property
    def classes(self) -> dict[str, cst.ClassDef]:
        return {
            name: cls for name, cls in self._classes.items() if self._is_iterable(cls, frozenset())
        }

    def _is_iterable(self, cls: cst.ClassDef, seen: frozenset[str]) -> bool:
        for base in cls.bases:
            if self._names.qualified_name(base.value) in ITERABLE_DATASET_BASES:
                return True
            local = dotted_name(base.value)
            if (
                local in self._classes
                and local not in seen
                and self._is_iterable(self._classes[local], seen | {cls.name.value})
            ):
                return True
        return False

    def _lineage(self, cls: cst.ClassDef) -> list[cst.ClassDef]:
        """``cls`` and its base classes defined in this module."""
        found: list[cst.ClassDef] = []
        pending = [cls]
        while pending:
            current = pending.pop()
            if any(current is known for known in found):
                continue
            found.append(current)
            for base in current.bases:
                local = dotted_name(base.value)
                if local in self._classes:
                    pending.append(self._classes[local])
        return found

    def splits_by_rank(self, cls: cst.ClassDef) -> bool:
        for owner in self._lineage(cls):
            for node in self._index.walk_within(owner.body, into_functions=True):
                word = ""
                if isinstance(node, cst.Name):
                    word = node.value
                elif isinstance(node, cst.Attribute):
                    word = node.attr.value
                elif isinstance(node, cst.SimpleString):
                    value = node.evaluated_value
                    word = value if isinstance(value, str) else ""
                lowered = word.lower()
                if any(w in lowered for w in _RANK_WORDS):
                    return True
        return False

    def defines_len(self, cls: cst.ClassDef) -> bool:
        return any(
            isinstance(statement, cst.FunctionDef) and statement.name.value == "__len__"
            for owner in self._lineage(cls)
            if isinstance(owner.body, cst.IndentedBlock)
            for statement in owner.body.body
        )

    @cached_property
    def loaders(self) -> list[IterableLoader]:
        loaders = []
        for call in self._index.nodes(cst.Call):
            if not is_data_loader(self._names, call):
                continue
            dataset = argument(call, "dataset", DATALOADER_POSITIONS["dataset"])
            if dataset is None:
                continue
            cls = self._instance_class(call, dataset.value)
            if cls is not None:
                loaders.append(IterableLoader(call, cls, bound_name(self._index, call)))
        return loaders

    def _instance_class(self, site: cst.CSTNode, expr: cst.BaseExpression) -> cst.ClassDef | None:
        """The module's IterableDataset class that ``expr`` (``X(...)`` or a name bound
        once to it) instantiates."""
        if isinstance(expr, cst.Name):
            bound = single_assignment(self._index, site, expr.value)
            if bound is not None:
                expr = bound
        if isinstance(expr, cst.Call):
            return self.classes.get(dotted_name(expr.func) or "")
        return None
