"""Per-rank shards of a data list: ``files[rank::world_size]`` (round robin),
``data[rank * n // w:(rank + 1) * n // w]`` and ``np.array_split(data, w)[rank]``
(contiguous chunks), and whether each rank's shard can have a different length.

The rank and the world size are found by where the value comes from (the rank
predicates' reads: ``dist.get_rank()``, ``os.environ["RANK"]``, the libraries'
attributes ``rank`` / ``process_index`` / ``num_replicas``, names bound to them, and
``self.<name>`` set from them), not by what a variable is called. Only the data-parallel
rank counts: a tensor- or pipeline-parallel rank slices weights, not the data each
rank trains on.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from ddplint.analysis.api import DISTRIBUTED_SAMPLERS, RANK_ATTRIBUTES
from ddplint.analysis.forms import ARRAY_SPLITS
from ddplint.code.collectives.catalogue import keyword_is_true, kind_of_function
from ddplint.code.ranks.rank_predicates import RankPredicates
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import ImportTable, dotted_name

#: Rank reads that are not the data-parallel rank: a slice by a tensor- or
#: pipeline-parallel rank splits weights, not data.
_MODEL_PARALLEL_RANKS = frozenset(
    {
        "megatron.core.parallel_state.get_tensor_model_parallel_rank",
        "megatron.core.parallel_state.get_pipeline_model_parallel_rank",
    }
)


def _names_rank_number(spelled: str) -> bool:
    """``spelled`` is the libraries' spelling of the rank number (``rank``,
    ``process_index``), not a per-rank truth value (``is_main_process``)."""
    return spelled in RANK_ATTRIBUTES and not spelled.startswith("is_")


@dataclass(frozen=True)
class RankShard:
    """One expression that picks this rank's part of ``data`` (its text, for messages)
    in a way that gives ranks parts of different lengths unless the length divides."""

    node: cst.BaseExpression
    data: cst.BaseExpression
    form: str


class RankShards:
    """The uneven per-rank shards of one module."""

    def __init__(self, index: ModuleIndex, names: ImportTable, ranks: RankPredicates) -> None:
        self._index = index
        self._names = names
        self._ranks = ranks
        self._instance_values = _instance_assignments(index)

    def shards(self) -> Iterator[RankShard]:
        for subscript in self._index.nodes(cst.Subscript):
            shard = self._round_robin(subscript) or self._contiguous(subscript)
            if shard is not None:
                yield shard
        for call in self._index.nodes(cst.Call):
            shard = self._round_robin_islice(call)
            if shard is not None:
                yield shard
        for comparison in self._index.nodes(cst.Comparison):
            shard = self._modulo_filter(comparison)
            if shard is not None:
                yield shard

    def _round_robin_islice(self, call: cst.Call) -> RankShard | None:
        """``itertools.islice(stream, rank, None, world)``."""
        if self._names.qualified_name(call.func) != "itertools.islice" or len(call.args) != 4:
            return None
        start, step = call.args[1].value, call.args[3].value
        if self.mentions_rank(start) and self.mentions_world_size(step):
            return RankShard(call, call.args[0].value, "round robin")
        return None

    def _modulo_filter(self, comparison: cst.Comparison) -> RankShard | None:
        """``i % world == rank`` / ``!=`` (keep every world-th item of a stream)."""
        if len(comparison.comparisons) != 1:
            return None
        target = comparison.comparisons[0]
        if not isinstance(target.operator, (cst.Equal, cst.NotEqual)):
            return None
        for modulo, other in (
            (comparison.left, target.comparator),
            (target.comparator, comparison.left),
        ):
            if (
                isinstance(modulo, cst.BinaryOperation)
                and isinstance(modulo.operator, cst.Modulo)
                and self.mentions_world_size(modulo.right)
                and self.mentions_rank(other)
            ):
                return RankShard(comparison, modulo.left, "modulo filter")
        return None

    def _round_robin(self, subscript: cst.Subscript) -> RankShard | None:
        """``x[rank::world]`` (also ``x[rank * k + worker::world * k]``)."""
        piece = _only_slice(subscript)
        if piece is None or piece.lower is None or piece.step is None or piece.upper:
            return None
        if self.mentions_rank(piece.lower) and self.mentions_world_size(piece.step):
            return RankShard(subscript, subscript.value, "round robin")
        return None

    def _contiguous(self, subscript: cst.Subscript) -> RankShard | None:
        """``x[rank * n // w:(rank + 1) * n // w]`` (bounds floored one by one: parts of
        ``n // w`` and ``n // w + 1`` items) and ``array_split(x, w)[rank]``."""
        piece = _only_slice(subscript)
        if piece is not None and piece.lower is not None and piece.upper is not None:
            if piece.step is None and all(
                self._floored_rank_bound(bound) for bound in (piece.lower, piece.upper)
            ):
                return RankShard(subscript, subscript.value, "contiguous chunks")
            return None
        index = _only_index(subscript)
        split = subscript.value
        if index is None or not isinstance(split, cst.Call) or len(split.args) < 2:
            return None
        if self._names.qualified_name(split.func) not in ARRAY_SPLITS:
            return None
        if self.mentions_rank(index) and self.mentions_world_size(split.args[1].value):
            return RankShard(subscript, split.args[0].value, "array_split")
        return None

    def _floored_rank_bound(self, bound: cst.BaseExpression) -> bool:
        """``rank * n // w`` / ``(rank + 1) * n // w``: a floor division by the world
        size whose left side holds the rank."""
        return (
            isinstance(bound, cst.BinaryOperation)
            and isinstance(bound.operator, cst.FloorDivide)
            and self.mentions_rank(bound.left)
            and self.mentions_world_size(bound.right)
        )

    def mentions_rank(self, expr: cst.BaseExpression) -> bool:
        """``expr`` reads the data-parallel rank: a rank call, variable or attribute of
        the libraries, a name bound to one, or an attribute the class sets from one."""
        return self._reads(expr, world=False, seen=frozenset())

    def _reads(self, expr: cst.BaseExpression, *, world: bool, seen: frozenset[str]) -> bool:
        if world:
            if self._ranks.world_size_reads(expr):
                return True
        elif any(self._is_data_rank(read) for read in self._ranks.rank_reads(expr)):
            return True
        cls = self._index.enclosing(expr, cst.ClassDef)
        for node in (expr, *self._index.walk_within(expr)):
            attribute = _instance_attribute(node)
            if attribute is None or cls is None or attribute in seen:
                continue
            for value in self._instance_values.get((cls, attribute), ()):
                if self._reads(value, world=world, seen=seen | {attribute}):
                    return True
        return False

    def _is_data_rank(self, read: cst.CSTNode) -> bool:
        """A rank read that holds the data-parallel rank number: not a model-parallel
        rank, not a per-rank truth value (``is_main_process``, ``is_global_rank_zero()``)."""
        if isinstance(read, cst.Call):
            qualified = self._names.qualified_name(read.func) or dotted_name(read.func) or ""
            if qualified in _MODEL_PARALLEL_RANKS:
                return False
            return not qualified.rsplit(".", 1)[-1].startswith("is_")
        if isinstance(read, cst.Name):
            return _names_rank_number(read.value)
        if isinstance(read, cst.Attribute):
            return _names_rank_number(read.attr.value)
        return True  # ``os.environ["RANK"]``

    def counts_per_rank(self, node: cst.BinaryOperation) -> bool:
        """``n % world`` (a divisibility check or remainder) or ``n // world`` with no rank
        on the left (one count for every rank, as in ``len(x) // world * world``)."""
        if not self.mentions_world_size(node.right):
            return False
        if isinstance(node.operator, cst.Modulo):
            return not self._compared_with_rank(node)
        return isinstance(node.operator, cst.FloorDivide) and not self.mentions_rank(node.left)

    def _compared_with_rank(self, node: cst.BinaryOperation) -> bool:
        """``i % world == rank``: the modulo picks items, it does not check a count."""
        parent = self._index.parent.get(node)
        if isinstance(parent, cst.ComparisonTarget):
            parent = self._index.parent.get(parent)
        return isinstance(parent, cst.Comparison) and self.mentions_rank(parent)

    def equalises(self, node: cst.BinaryOperation | cst.Call) -> bool:
        """A count shared by all ranks (``counts_per_rank``) or ``islice(stream, count)``:
        every rank stops after the same count."""
        if isinstance(node, cst.BinaryOperation):
            return self.counts_per_rank(node)
        return self._names.qualified_name(node.func) == "itertools.islice" and len(node.args) == 2

    def _agrees(self, call: cst.Call) -> bool:
        """A collective that moves data between ranks (not one that makes a group)."""
        kind = kind_of_function(self._names.qualified_name(call.func) or "")
        return kind is not None and not kind.creates_group

    def agrees_or_drops(self, call: cst.Call) -> bool:
        """A call that gives every rank the same count: a ``torch.distributed``
        collective (the ranks agree on it), ``drop_last=True``, an endless stream or a
        ``DistributedSampler``."""
        return (
            self._agrees(call)
            or keyword_is_true(call, "drop_last")
            or self._names.qualified_name(call.func) in _EQUALISING_CALLS
        )

    def mentions_world_size(self, expr: cst.BaseExpression) -> bool:
        """``expr`` reads the world size (``get_world_size()``, ``num_replicas``, a name
        bound to one, an attribute the class sets from one)."""
        return self._reads(expr, world=True, seen=frozenset())


def _instance_attribute(node: cst.CSTNode) -> str | None:
    """``name`` for ``self.name``."""
    if (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
    ):
        return node.attr.value
    return None


def _instance_assignments(
    index: ModuleIndex,
) -> dict[tuple[cst.ClassDef, str], list[cst.BaseExpression]]:
    """The values each class's methods assign to ``self.<name>``."""
    found: dict[tuple[cst.ClassDef, str], list[cst.BaseExpression]] = {}
    for assign in index.nodes(cst.Assign):
        cls = index.enclosing(assign, cst.ClassDef)
        if cls is None:
            continue
        for target in assign.targets:
            attribute = _instance_attribute(target.target)
            if attribute is not None:
                found.setdefault((cls, attribute), []).append(assign.value)
    return found


def _only_slice(subscript: cst.Subscript) -> cst.Slice | None:
    if len(subscript.slice) != 1:
        return None
    piece = subscript.slice[0].slice
    return piece if isinstance(piece, cst.Slice) else None


def _only_index(subscript: cst.Subscript) -> cst.BaseExpression | None:
    if len(subscript.slice) != 1:
        return None
    piece = subscript.slice[0].slice
    return piece.value if isinstance(piece, cst.Index) else None


#: Calls that hand every rank the same count whatever the shard: an endless stream
#: (stopped by a step count) or a sampler that pads or drops the uneven tail itself.
_EQUALISING_CALLS = frozenset({"itertools.cycle", "itertools.repeat", *DISTRIBUTED_SAMPLERS})


def equalises_shards(index: ModuleIndex, shards: RankShards, owner: cst.CSTNode) -> bool:
    """Whether ``owner`` (a class, function or module) gives every rank the same count,
    by what its code does: pads a list with its own items (``x + x[:k]``), repeats the
    stream (``while True``, ``itertools.cycle``), drops the tail (``drop_last=True``, a
    ``DistributedSampler``), agrees on the count with a collective, or takes a length
    modulo the world size or divides it into one count for all."""
    return any(_equalises(shards, node) for node in index.walk_within(owner, into_functions=True))


def _equalises(shards: RankShards, node: cst.CSTNode) -> bool:
    if isinstance(node, cst.While):
        return isinstance(node.test, cst.Name) and node.test.value == "True"
    if isinstance(node, cst.Call):
        return shards.equalises(node) or shards.agrees_or_drops(node)
    if isinstance(node, cst.BinaryOperation):
        return shards.equalises(node) or _pads_with_itself(node)
    return isinstance(node, cst.AugAssign) and _pads_with_itself(node)


def _pads_with_itself(node: cst.BinaryOperation | cst.AugAssign) -> bool:
    """``x + x[:k]``, ``x += (x * m)[:k]``: a list extended with its own items (how
    ``DistributedSampler`` pads to a multiple of the world size)."""
    if isinstance(node, cst.BinaryOperation):
        if not isinstance(node.operator, cst.Add):
            return False
        base, added = node.left, node.right
    else:
        if not isinstance(node.operator, cst.AddAssign):
            return False
        base, added = node.target, node.value
    spelled = dotted_name(base)
    if spelled is None or not isinstance(added, cst.Subscript):
        return False
    return any(
        dotted_name(part) == spelled
        for part in _subexpressions(added.value)
        if isinstance(part, (cst.Name, cst.Attribute))
    )


def _subexpressions(expr: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """``expr`` and the operands of the arithmetic it is made of."""
    yield expr
    if isinstance(expr, cst.BinaryOperation):
        yield from _subexpressions(expr.left)
        yield from _subexpressions(expr.right)


def joins_uneven_inputs(index: ModuleIndex) -> bool:
    """The module uses DDP's uneven-input support: ``with model.join():`` or ``Join``."""
    for with_item in index.nodes(cst.WithItem):
        call = with_item.item
        if isinstance(call, cst.Call):
            func = call.func
            name = func.attr.value if isinstance(func, cst.Attribute) else dotted_name(func)
            if name in ("join", "Join"):
                return True
    return False
