"""DDP403: batch counts that can differ across ranks (iterable datasets)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.constants import nodes_within
from ddplint.analysis.control_flow import Scope
from ddplint.analysis.enumerate_loops import EnumerateLoops
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.iterable_datasets import IterableDatasets, IterableLoader
from ddplint.analysis.names import dotted_name
from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import ast_node_text
from ddplint.finding import Finding, Severity
from ddplint.rule import CodeRule
from ddplint.rules.prefilters import iterable_dataset_class

#: Imports that say the module runs on several ranks.
DISTRIBUTED_MODULES = ("torch.distributed", "torch.nn.parallel", "lightning", "pytorch_lightning")


class UnevenBatchesAcrossRanks(CodeRule):
    """
    ## What it does
    Looks at `IterableDataset` subclasses defined in the module and the `DataLoader`s
    built on them in the same module, and flags:

    - in a module that uses `torch.distributed`, DDP or Lightning, a `DataLoader` over an
      `IterableDataset` whose class never mentions a rank, world size, shard, replica or
      node (no rank split of the stream);
    - `len(loader)` on such a loader when the dataset class has no `__len__`;
    - a `torch.distributed` collective under a last-batch test
      (`if i == len(loader) - 1:`) of a loop over such a loader.

    A `DistributedSampler` needs no check: it always gives every rank the same number of
    batches (it pads or drops).

    ## Why is this bad?
    An iterable dataset is not split by `DistributedSampler`; each rank iterates what
    `__iter__` yields. Without a rank split every rank reads the whole stream
    (each sample is trained on world-size times), and when the per-rank streams differ in
    length, one rank leaves the loop while the others wait in the next backward's
    all-reduce: without `DDP.join()` the job hangs at the end of the epoch
    (reproduced). A collective on a per-rank "last batch" is reached at different steps
    on different ranks. `len()` of a loader over an iterable dataset without `__len__`
    raises `TypeError`.

    ## Example
    ```python
    class Shards(IterableDataset):
        def __iter__(self):
            for path in self.paths:
                yield from read(path)

    loader = DataLoader(Shards(paths), batch_size=8)
    ```

    ## Use instead
    ```python
    class Shards(IterableDataset):
        def __iter__(self):
            rank, world = dist.get_rank(), dist.get_world_size()
            for path in self.paths[rank::world]:
                yield from read(path)
    ```
    and make every rank run the same number of steps (equal shards, or `DDP.join()`).

    This rule is built on the analysis core (Python's `ast`: the module's classes,
    loaders and loops, and the collectives the code spells).

    ## Fix safety
    No automatic fix: how to shard a stream depends on the data.

    ## References
    - PyTorch docs: `torch.utils.data.IterableDataset` (sharding by worker and rank),
      `DistributedDataParallel.join`.
    """

    code = "DDP403"
    needs_peers = True
    reads_libcst = False
    name = "uneven-batches-across-ranks"
    summary = "IterableDataset feeding several ranks without a rank split"
    severity = Severity.WARNING
    needles = ("IterableDataset", "IterDataPipe")
    required = ("DataLoader",)
    narrowed_by = staticmethod(iterable_dataset_class)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        analysis = ctx.analysis
        datasets = IterableDatasets(analysis.nodes, analysis.names, analysis.constants)
        if not datasets.loaders:
            return
        imported = analysis.names.imports.values()
        distributed = any(
            spelled == module or spelled.startswith(module + ".")
            for spelled in imported
            for module in DISTRIBUTED_MODULES
        )
        for loader in datasets.loaders:
            if distributed and not datasets.splits_by_rank(loader.dataset_class):
                cls = loader.dataset_class.name
                summary = f"IterableDataset `{cls}` is not split by rank: every rank reads it all"
                yield ctx.ast_finding(self, loader.call, _no_split_message(loader), summary=summary)
        yield from self._len_without_len(ctx, datasets)
        yield from self._gated_collectives(ctx, datasets)

    def _len_without_len(self, ctx: CodeContext, datasets: IterableDatasets) -> Iterator[Finding]:
        names = {
            loader.name: loader
            for loader in datasets.loaders
            if loader.name and not datasets.defines_len(loader.dataset_class)
        }
        if not names:
            return
        for call in ctx.analysis.nodes.of_type(ast.Call):
            if not (isinstance(call.func, ast.Name) and call.func.id == "len"):
                continue
            if len(call.args) != 1 or call.keywords:
                continue
            loader = names.get(dotted_name(call.args[0]) or "")
            if loader is None:
                continue
            cls = loader.dataset_class.name
            message = (
                f"`len()` of a DataLoader over the IterableDataset `{cls}`, which has no "
                "`__len__`: this raises TypeError; an iterable stream has no length known "
                "before it is read, and its per-rank length may differ"
            )
            summary = f"`len()` of a loader over `{cls}`, an IterableDataset without `__len__`"
            yield ctx.ast_finding(self, call, message, summary=summary)

    def _gated_collectives(self, ctx: CodeContext, datasets: IterableDatasets) -> Iterator[Finding]:
        analysis = ctx.analysis
        loaders = {loader.name: loader for loader in datasets.loaders if loader.name}
        if not loaders:
            return
        scopes: dict[int, Scope] = {
            id(c): s for s, calls in analysis.nodes.calls_by_scope.items() for c in calls
        }
        for loop in EnumerateLoops(analysis.nodes, analysis.names, analysis.constants):
            loader = loaders.get(loop.iterable_name or "")
            if loader is None:
                continue
            for branch in nodes_within(loop.loop.body):
                if not (isinstance(branch, ast.If) and loop.is_last_batch(branch.test)):
                    continue
                for node in nodes_within(branch.body):
                    if isinstance(node, ast.Call) and _spelled_collective(
                        analysis, node, scopes[id(node)]
                    ):
                        yield self._gated_finding(ctx, loader, node)

    def _gated_finding(self, ctx: CodeContext, loader: IterableLoader, call: ast.Call) -> Finding:
        name = " ".join(ast_node_text(ctx, call.func).split())
        summary = f"`{name}()` on each rank's own last batch of an IterableDataset"
        return ctx.ast_finding(self, call, _gated_message(name, loader), summary=summary)


def _spelled_collective(analysis: ModuleAnalysis, call: ast.Call, scope: Scope) -> bool:
    """Whether ``call`` is spelled as a collective: a DDP model's forward or a backward,
    which issue one inside, is each rank's own step, not a collective on the last batch."""
    found = analysis.call_collective(call, scope)
    return found is not None and not found.implicit


def _no_split_message(loader: IterableLoader) -> str:
    cls = loader.dataset_class.name
    return (
        f"DataLoader over the IterableDataset `{cls}`, which never splits its stream by "
        "rank: every rank reads all of it (each sample trained world-size times), and if "
        "the ranks' streams differ in length they stop at different steps and hang at the "
        "end of the epoch"
    )


def _gated_message(name: str, loader: IterableLoader) -> str:
    cls = loader.dataset_class.name
    return (
        f"`{name}()` runs on each rank's own last batch of an IterableDataset (`{cls}`) "
        "loader: when the ranks' batch counts differ, they reach it at different steps "
        "and the collectives pair wrongly or hang"
    )
