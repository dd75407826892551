"""``IterableDataset`` subclasses a module defines, whether they split their stream by
rank, and the ``DataLoader`` calls they feed, on CPython's ``ast``.

A class "splits by rank" when its code (or a base class's in the same module) does:
reads the rank or the world size (the spellings the rank rules know, exactly:
``self.rank``, ``get_world_size()``, ``os.environ["RANK"]``), calls a library's splitter
(``split_by_node``, ``split_dataset_by_node``, ``sharding_filter``), or strides or
filters its stream by values that are not the loader worker's (``files[k::n]``,
``islice(it, k, None, n)``, ``i % n == k``: the rank handed in under another name).
Words inside names (``node``, ``partition``, ``shard``) decide nothing.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

from ddplint.analysis.api import (
    DATA_LOADERS,
    DATALOADER_POSITIONS,
    RANK_ATTRIBUTES,
    RANK_ENV_VARS,
    RANK_FUNCTION_NAMES,
    WORLD_SIZE_ATTRIBUTES,
    WORLD_SIZE_ENV_VARS,
    WORLD_SIZE_FUNCTION_NAMES,
)
from ddplint.analysis.constants import ScopedConstants
from ddplint.analysis.module_nodes import ModuleNodes
from ddplint.analysis.names import Names, dotted_name, passed_argument

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
    """A ``DataLoader`` over an instance of an ``IterableDataset`` class of this module;
    ``name``: what the loader is bound to (``loader``, ``self.loader``), if anything."""

    call: ast.Call
    dataset_class: ast.ClassDef
    name: str | None


class IterableDatasets:
    """The module's ``IterableDataset`` classes and the loaders built on them."""

    def __init__(self, nodes: ModuleNodes, names: Names, constants: ScopedConstants) -> None:
        self._nodes = nodes
        self._names = names
        self._constants = constants
        by_position = sorted(nodes.of_type(ast.ClassDef), key=lambda c: (c.lineno, c.col_offset))
        #: Every class of the module by name (the last of a name wins).
        self._classes = {c.name: c for c in by_position}

    @cached_property
    def classes(self) -> dict[str, ast.ClassDef]:
        """The module's classes on an iterable-dataset base, by name."""
        return {
            name: cls for name, cls in self._classes.items() if self._is_iterable(cls, frozenset())
        }

    def _is_iterable(self, cls: ast.ClassDef, seen: frozenset[str]) -> bool:
        for base in cls.bases:
            if self._names.resolve(base) in ITERABLE_DATASET_BASES:
                return True
            local = dotted_name(base)
            if (
                local in self._classes
                and local not in seen
                and self._is_iterable(self._classes[local], seen | {cls.name})
            ):
                return True
        return False

    def _lineage(self, cls: ast.ClassDef) -> list[ast.ClassDef]:
        """``cls`` and its base classes defined in this module."""
        found: list[ast.ClassDef] = []
        pending = [cls]
        while pending:
            current = pending.pop()
            if any(current is known for known in found):
                continue
            found.append(current)
            for base in current.bases:
                local = dotted_name(base)
                if local in self._classes:
                    pending.append(self._classes[local])
        return found

    def splits_by_rank(self, cls: ast.ClassDef) -> bool:
        for owner in self._lineage(cls):
            workers = self._worker_infos(owner)
            for node in _body_nodes(owner):
                if _reads_rank(node) or self._strides(node, workers):
                    return True
        return False

    def _worker_infos(self, owner: ast.ClassDef) -> frozenset[str]:
        """Names bound to ``get_worker_info()`` in ``owner``."""
        found: set[str] = set()
        for node in _body_nodes(owner):
            if isinstance(node, ast.Assign) and self._calls_worker_info(node.value):
                found.update(spelled for t in node.targets if (spelled := dotted_name(t)))
        return frozenset(found)

    def _calls_worker_info(self, expression: ast.AST) -> bool:
        return isinstance(expression, ast.Call) and self._names.resolve(expression.func) in (
            _WORKER_INFO
        )

    def _strides(self, node: ast.AST, workers: frozenset[str]) -> bool:
        """``x[k::n]``, ``islice(x, k, None, n)`` or ``i % n == k`` with a step that is
        neither a literal nor the loader worker's count."""
        step: ast.expr | None = None
        if isinstance(node, ast.Slice) and node.lower is not None:
            step = node.step
        elif isinstance(node, ast.Call) and self._names.resolve(node.func) == "itertools.islice":
            given = [*node.args, *(k.value for k in node.keywords)]
            step = given[3] if len(given) == 4 else None
        elif (
            isinstance(node, ast.Compare)
            and isinstance(node.left, ast.BinOp)
            and isinstance(node.left.op, ast.Mod)
            and all(isinstance(op, (ast.Eq, ast.NotEq)) for op in node.ops)
        ):
            step = node.left.right
        return step is not None and not self._literal_or_worker(step, workers)

    def _literal_or_worker(self, expression: ast.expr, workers: frozenset[str]) -> bool:
        if isinstance(expression, ast.UnaryOp) or (
            isinstance(expression, ast.Constant)
            and isinstance(expression.value, int)
            and not isinstance(expression.value, bool)
        ):
            return True
        for node in ast.walk(expression):
            if self._calls_worker_info(node):
                return True
            spelled = dotted_name(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
            if spelled is not None and spelled.split(".", 1)[0] in workers:
                return True
        return False

    def defines_len(self, cls: ast.ClassDef) -> bool:
        return any(
            isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))
            and statement.name == "__len__"
            for owner in self._lineage(cls)
            for statement in owner.body
        )

    @cached_property
    def loaders(self) -> list[IterableLoader]:
        """The module's ``DataLoader`` calls over an instance of one of its iterable
        datasets, in source order."""
        if not self.classes:
            return []
        bound = _bound_names(self._nodes)
        found = []
        for scope, calls in self._nodes.calls_by_scope.items():
            for call in calls:
                if self._names.resolve(call.func) not in DATA_LOADERS:
                    continue
                dataset = passed_argument(call, "dataset", DATALOADER_POSITIONS["dataset"])
                cls = None if dataset is None else self._instance_class(dataset, scope)
                if cls is not None:
                    found.append(IterableLoader(call, cls, bound.get(id(call))))
        return sorted(found, key=lambda loader: (loader.call.lineno, loader.call.col_offset))

    def _instance_class(self, expression: ast.expr, scope: ast.AST) -> ast.ClassDef | None:
        """The module's IterableDataset class that ``expression`` (``X(...)`` or a name
        bound once to it) instantiates."""
        if isinstance(expression, ast.Name):
            found = self._constants.single_assignment(
                self._constants.owner_of(scope), expression.id
            )
            if found is not None:
                expression = found[0]
        if isinstance(expression, ast.Call):
            return self.classes.get(dotted_name(expression.func) or "")
        return None


def _body_nodes(owner: ast.ClassDef) -> Iterator[ast.AST]:
    """Every node of a class's body, nested functions included."""
    for statement in owner.body:
        yield from ast.walk(statement)


def _bound_names(nodes: ModuleNodes) -> dict[int, str]:
    """``x`` (or ``self.x``) for each call that is the whole right side of ``x = call``,
    keyed by the call's id."""
    found: dict[int, str] = {}
    statements: list[ast.Assign | ast.AnnAssign] = [
        *nodes.of_type(ast.Assign),
        *nodes.of_type(ast.AnnAssign),
    ]
    for statement in statements:
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        if isinstance(statement.value, ast.Call) and len(targets) == 1:
            spelled = dotted_name(targets[0])
            if spelled is not None:
                found[id(statement.value)] = spelled
    return found


def _spellings(node: ast.AST) -> Iterator[str]:
    """The names a node spells: a name, an attribute, a parameter, a keyword argument,
    a definition, an import."""
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, ast.Attribute):
        yield node.attr
    elif isinstance(node, (ast.arg, ast.keyword)) and node.arg is not None:
        yield node.arg
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name
    elif isinstance(node, ast.alias):
        yield from node.name.split(".")
        if node.asname:
            yield node.asname


def _reads_rank(node: ast.AST) -> bool:
    """``node`` reads the rank or the world size, or names a library's splitter."""
    if isinstance(node, ast.Constant):
        return node.value in RANK_ENV_VARS or node.value in WORLD_SIZE_ENV_VARS
    return any(spelled in _RANK_SPELLINGS for spelled in _spellings(node))
