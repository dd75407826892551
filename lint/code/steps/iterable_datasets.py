"""``IterableDataset`` subclasses a module defines, whether they split their stream by
rank, and the ``DataLoader`` calls they feed.

A class "splits by rank" when its code (or a base class's in the same module) does:
reads the rank or the world size (the spellings the rank rules know, exactly:
``self.rank``, ``get_world_size()``, ``os.environ["RANK"]``), calls a library's splitter
(``split_by_node``, ``split_dataset_by_node``, ``sharding_filter``), or strides or
filters its stream by values that are not the loader worker's (``files[k::n]``,
``islice(it, k, None, n)``, ``i % n == k``: the rank handed in under another name).
Words inside names (``node``, ``partition``, ``shard``) decide nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import libcst as cst

from ddplint.analysis.api import (
    DATALOADER_POSITIONS,
    RANK_ATTRIBUTES,
    RANK_ENV_VARS,
    RANK_FUNCTION_NAMES,
    WORLD_SIZE_ATTRIBUTES,
    WORLD_SIZE_ENV_VARS,
    WORLD_SIZE_FUNCTION_NAMES,
)
from ddplint.code.steps.data_loaders import bound_name, is_data_loader
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
#: Library calls that split a stream between nodes or ranks (webdataset, datasets,
#: torchdata).
_RANK_SPLITTERS = frozenset(
    {"split_by_node", "split_dataset_by_node", "sharding_filter", "nodesplitter"}
)
_RANK_SPELLINGS = (
    RANK_ATTRIBUTES
    | RANK_FUNCTION_NAMES
    | WORLD_SIZE_ATTRIBUTES
    | WORLD_SIZE_FUNCTION_NAMES
    | _RANK_SPLITTERS
)
_WORKER_INFO = frozenset(
    {"torch.utils.data.get_worker_info", "torch.utils.data._utils.worker.get_worker_info"}
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
            workers = self._worker_infos(owner)
            for node in self._index.walk_within(owner.body, into_functions=True):
                if _reads_rank(node) or self._strides(node, workers):
                    return True
        return False

    def _worker_infos(self, owner: cst.ClassDef) -> frozenset[str]:
        """Names bound to ``get_worker_info()`` in ``owner``."""
        found: set[str] = set()
        for node in self._index.walk_within(owner.body, into_functions=True):
            if isinstance(node, cst.Assign) and self._calls_worker_info(node.value):
                found.update(spelled for t in node.targets if (spelled := dotted_name(t.target)))
        return frozenset(found)

    def _calls_worker_info(self, expr: cst.CSTNode) -> bool:
        return isinstance(expr, cst.Call) and self._names.qualified_name(expr.func) in _WORKER_INFO

    def _strides(self, node: cst.CSTNode, workers: frozenset[str]) -> bool:
        """``x[k::n]``, ``islice(x, k, None, n)`` or ``i % n == k`` with a step that is
        neither a literal nor the loader worker's count."""
        step: cst.BaseExpression | None = None
        if isinstance(node, cst.Slice) and node.lower is not None:
            step = node.step
        elif (
            isinstance(node, cst.Call)
            and self._names.qualified_name(node.func) == "itertools.islice"
            and len(node.args) == 4
        ):
            step = node.args[3].value
        elif (
            isinstance(node, cst.Comparison)
            and isinstance(node.left, cst.BinaryOperation)
            and isinstance(node.left.operator, cst.Modulo)
            and all(isinstance(t.operator, (cst.Equal, cst.NotEqual)) for t in node.comparisons)
        ):
            step = node.left.right
        return step is not None and not self._literal_or_worker(step, workers)

    def _literal_or_worker(self, expr: cst.BaseExpression, workers: frozenset[str]) -> bool:
        if isinstance(expr, (cst.Integer, cst.UnaryOperation)):
            return True
        for node in (expr, *self._index.walk_within(expr)):
            if self._calls_worker_info(node):
                return True
            spelled = dotted_name(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
            if spelled is not None and spelled.split(".", 1)[0] in workers:
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


def _reads_rank(node: cst.CSTNode) -> bool:
    """``node`` reads the rank or the world size, or names a library's splitter."""
    if isinstance(node, (cst.Name, cst.Attribute)):
        spelled = node.value if isinstance(node, cst.Name) else node.attr.value
        return spelled in _RANK_SPELLINGS
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value in RANK_ENV_VARS or value in WORLD_SIZE_ENV_VARS
    return False
