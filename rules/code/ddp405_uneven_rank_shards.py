"""DDP405: per-rank data shards of different lengths, with nothing to even them out."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.api import DATA_LOADERS
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.iterable_datasets import IterableDatasets
from ddplint.analysis.names import dotted_name
from ddplint.analysis.rank_shards import RankShard, RankShards, joins_uneven_inputs
from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import ast_node_text
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
    `DataLoader` / `Subset` in the same function. The rank and the world size are
    known by where their values come from (`dist.get_rank()`, `os.environ["RANK"]`,
    `sampler.num_replicas`, names and `self` fields bound to them), not by what a
    variable is called. Not flagged when the code of the class (or function) gives
    every rank the same count: pads the list with its own items (`x + x[:k]`), drops
    the tail (`drop_last=True`, a `DistributedSampler`), takes a length modulo the
    world size or rounds it to a multiple of it (`len(x) // world * world`), stops
    after a count (`islice(stream, n)`), agrees on the count with a collective, or
    streams without end (`while True`, `cycle`), there or in a function of the module
    it calls (a padding helper); nor when the module joins uneven
    inputs (`with model.join():`, `Join`). What the code is called decides nothing: a
    name saying `pad` or `even` does not silence it.

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
    This rule is built on the analysis core (rank shards and what evens them out, on
    Python's `ast`).

    ## References
    - PyTorch docs: `DistributedDataParallel.join` and the `Join` context manager
      ("Distributed Training with Uneven Inputs Using the Join Context Manager").
    - PyTorch docs: `torch.utils.data.distributed.DistributedSampler` (`drop_last`).
    - pytorch/pytorch#38174 (DDP hangs with uneven inputs).
    """

    code = "DDP405"
    reads_libcst = False
    name = "uneven-rank-shards"
    summary = "Per-rank data shards of different lengths; ranks stop at different steps"
    severity = Severity.WARNING
    default_enabled = False
    needs_peers = True
    needles = ("rank",)
    also_needles = ("world", "replica", "num_processes", "data_parallel", "dp_size", "nranks")

    screened_by = staticmethod(may_shard_a_list_by_rank)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        module = ctx.ast_module
        if module is None or is_test_file(ctx.source.path) or joins_uneven_inputs(module):
            return
        analysis = ctx.analysis
        shards = RankShards(module, analysis.names, analysis.callee_of)
        iterable_classes = set(
            IterableDatasets(analysis.nodes, analysis.names, analysis.constants).classes
        )
        for shard in shards.shards():
            owner = _feeding_owner(analysis, shard, iterable_classes)
            if owner is None or shards.equalises(owner):
                continue
            yield _finding(self, ctx, shard)


def _feeding_owner(
    analysis: ModuleAnalysis, shard: RankShard, iterable_classes: set[str]
) -> ast.AST | None:
    """Where the shard feeds training data (the class, or the function that builds a
    loader on it), or None when it is something else (a weight or sequence slice)."""
    function, cls = shard.function, shard.owner_class
    if cls is not None and (
        cls.name in iterable_classes or (function is not None and function.name == "__iter__")
    ):
        return cls
    if function is None:
        return None
    name = _bound_name(function, shard.node)
    if name is None:
        return None
    at = (shard.node.lineno, shard.node.col_offset)
    for call in analysis.nodes.calls_by_scope.get(function, []):
        if (call.lineno, call.col_offset) < at:
            continue
        resolved = analysis.names.resolve(call.func)
        if resolved not in DATA_LOADERS and resolved not in _SUBSETS:
            continue
        given = [*call.args, *(k.value for k in call.keywords)]
        if any(dotted_name(argument) == name for argument in given):
            return function
    return None


def _bound_name(function: ast.FunctionDef | ast.AsyncFunctionDef, value: ast.expr) -> str | None:
    """``x`` (or ``self.x``) when ``value`` is the whole right side of ``x = value``."""
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and node.value is value and len(node.targets) == 1:
            return dotted_name(node.targets[0])
        if isinstance(node, ast.AnnAssign) and node.value is value:
            return dotted_name(node.target)
    return None


def _finding(rule: UnevenRankShards, ctx: CodeContext, shard: RankShard) -> Finding:
    text = " ".join(ast_node_text(ctx, shard.node).split())
    data = " ".join(ast_node_text(ctx, shard.data).split())
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
    return ctx.ast_finding(rule, shard.node, message, summary="per-rank shards of unequal length")
