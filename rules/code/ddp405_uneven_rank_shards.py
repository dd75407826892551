"""DDP405: per-rank data shards of different lengths, with nothing to even them out."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ddplint.analysis.iterable_datasets import IterableDatasets
from ddplint.code.context import CodeContext
from ddplint.code.steps.data_loaders import bound_name, is_data_loader
from ddplint.code.steps.rank_shards import (
    RankShard,
    RankShards,
    equalises_shards,
    joins_uneven_inputs,
)
from ddplint.code_facts import is_test_file
from ddplint.finding import Finding, Severity
from ddplint.rule import CodeRule
from ddplint.rules.screens import may_shard_a_list_by_rank

_SUBSETS = frozenset({"torch.utils.data.Subset", "torch.utils.data.dataset.Subset"})


class UnevenRankShards(CodeRule):
    """
    ## What it does
    Flags a per-rank shard of a data list that can give ranks different lengths:
    round robin (`files[rank::world_size]`, `islice(files, rank, None, world_size)`,
    `if i % world_size != rank: continue`), contiguous chunks whose bounds are floored
    one by one (`data[rank * n // world:(rank + 1) * n // world]`), or
    `np.array_split(data, world_size)[rank]`, when the shard feeds the data: it is taken
    in an `IterableDataset` class, in a sampler's or dataset's `__iter__`, or passed to a
    `DataLoader` / `Subset` in the same function. Not flagged when the class (or
    function) pads or truncates to a common count (`total_size`, `num_samples`, padding,
    `islice`, `drop_last`, a length taken modulo the world size), streams without end
    (`while True`, `cycle`), or the module joins uneven inputs (`with model.join():`,
    `Join`).

    ## Why is this bad?
    Unless the list's length divides by the world size (and, for files, every file holds
    as many samples), the ranks get different numbers of batches. The rank that runs
    out first leaves the loop while the others wait in the next backward's gradient
    all-reduce (or a per-batch metric sync): the job hangs at the end of the epoch until
    the NCCL timeout, and the last batches of the longer ranks pair with whatever
    collective the short rank runs next. `DistributedSampler` avoids it by padding (or
    dropping) to `ceil(n / world)` samples per rank.

    ## Example
    ```python
    class Shards(IterableDataset):
        def __iter__(self):
            for path in self.files[dist.get_rank()::dist.get_world_size()]:
                yield from read(path)
    ```

    ## Use instead
    ```python
    class Shards(IterableDataset):
        def __iter__(self):
            rank, world = dist.get_rank(), dist.get_world_size()
            files = self.files[: len(self.files) // world * world]  # an equal count
            for path in files[rank::world]:
                yield from read(path)
    ```
    and, when files hold different numbers of samples, stop every rank after the same
    number of steps (`itertools.islice`) or train under `with model.join():`.

    ## Fix safety
    No automatic fix: padding, truncating or joining are choices about the data.

    ## References
    - PyTorch docs: `DistributedDataParallel.join` and the `Join` context manager
      ("Distributed Training with Uneven Inputs Using the Join Context Manager").
    - PyTorch docs: `torch.utils.data.distributed.DistributedSampler` (`drop_last`).
    - pytorch/pytorch#38174 (DDP hangs with uneven inputs).
    """

    code = "DDP405"
    name = "uneven-rank-shards"
    summary = "Per-rank data shards of different lengths; ranks stop at different steps"
    severity = Severity.WARNING
    default_enabled = False
    needles = ("rank",)
    also_needles = ("world", "replica", "num_processes", "data_parallel", "dp_size", "nranks")

    screened_by = staticmethod(may_shard_a_list_by_rank)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        if is_test_file(ctx.source.path) or joins_uneven_inputs(ctx.index):
            return
        shards = RankShards(ctx.index, ctx.names, ctx.rank_predicates)
        iterable_classes = _iterable_classes(ctx)
        for shard in shards.shards():
            owner = _feeding_owner(ctx, shard, iterable_classes)
            if owner is None or equalises_shards(ctx.index, shards, owner):
                continue
            yield _finding(self, ctx, shard)


def _iterable_classes(ctx: CodeContext) -> set[cst.ClassDef]:
    """The module's classes on an iterable-dataset base (the core's answer, by the
    class's name in this module)."""
    if ctx.ast_module is None:
        return set()
    analysis = ctx.analysis
    names = IterableDatasets(analysis.nodes, analysis.names, analysis.constants).classes
    by_name = {c.name.value: c for c in ctx.index.nodes(cst.ClassDef)}
    return {by_name[name] for name in names if name in by_name}


def _feeding_owner(
    ctx: CodeContext, shard: RankShard, iterable_classes: set[cst.ClassDef]
) -> cst.CSTNode | None:
    """Where the shard feeds training data (the class, or the function that builds a
    loader on it), or None when it is something else (a weight or sequence slice)."""
    function = ctx.index.enclosing_function(shard.node)
    cls = ctx.index.enclosing(shard.node, cst.ClassDef)
    if cls is not None and (
        cls in iterable_classes or (function is not None and function.name.value == "__iter__")
    ):
        return cls
    name = bound_name(ctx.index, shard.node)
    if function is None or name is None:
        return None
    for call in ctx.index.nodes(cst.Call):
        if (
            not ctx.index.is_inside(call, function)
            or ctx.index.order[call] < ctx.index.order[shard.node]
        ):
            continue
        feeds = is_data_loader(ctx.names, call) or ctx.names.qualified_name(call.func) in _SUBSETS
        if feeds and any(ctx.node_text(arg.value) == name for arg in call.args):
            return function
    return None


def _finding(rule: UnevenRankShards, ctx: CodeContext, shard: RankShard) -> Finding:
    text = " ".join(ctx.node_text(shard.node).split())
    data = " ".join(ctx.node_text(shard.data).split())
    how = {
        "round robin": (
            f"round robin over `{data}` gives the first `len % world` ranks one item more "
            "(and more when the items are files of different sizes)"
        ),
        "contiguous chunks": (
            "chunk bounds floored one by one give chunks of `n // world` and `n // world + 1` items"
        ),
        "array_split": "`array_split` gives the first `len % world` parts one item more",
        "modulo filter": (
            "keeping every world-th item of a stream gives the first `n % world` ranks "
            "one item more (and a stream's length is not known in advance)"
        ),
    }[shard.form]
    message = (
        f"`{text}`: {how}, and nothing pads, "
        "truncates or joins: ranks run out of batches at different steps — the rank that "
        "finishes first leaves the loop while the others wait in the next gradient "
        "all-reduce, and the job hangs at the end of the epoch"
    )
    return ctx.finding(rule, shard.node, message, summary="per-rank shards of unequal length")
