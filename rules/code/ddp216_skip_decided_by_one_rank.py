"""DDP216: a skip decided by one rank's batch and broadcast to the others."""

from __future__ import annotations

from collections.abc import Iterator

from ddplint.analysis.names import call_argument
from ddplint.analysis.skip_decisions import skips_decided_by_one_rank
from ddplint.code.context import CodeContext
from ddplint.finding import Finding, Severity
from ddplint.rule import CodeRule
from ddplint.rules.code.ddp219_ranks_part_before_collective import header_text


class SkipDecidedByOneRank(CodeRule):
    """
    ## What it does
    Flags, in a training loop or `training_step`, a `broadcast` (or
    `broadcast_object_list`) of a flag computed from this rank's loss or batch
    (`bad = torch.isnan(loss)`) whose result then decides a `continue` / `break` /
    `return` on every rank: the source rank's data decides for all.

    A training loop is a loop whose body runs a backward; this rank's data is its
    items, a LightningModule step's batch, or a model's output (the analysis core's
    batch view of the divergence analysis).

    Not flagged: the flag reduced with `all_reduce(flag, op=MAX)` (any rank can ask
    for the skip); a broadcast of a value that is not this rank's data (a config, a
    decision already reduced); a broadcast whose result decides no exit.

    ## Why is this bad?
    The ranks stay in step, but only the source rank's batch is looked at. A NaN or
    an oversized loss on rank 3 is never skipped: rank 3 back-propagates it, DDP's
    gradient all-reduce spreads the NaN to every rank, and the model is silently
    ruined. Each rank's own data should take part in the decision.

    ## Example
    ```python
    bad = torch.isnan(loss).int()
    dist.broadcast(bad, src=0)  # only rank 0's loss decides
    if bad.item():
        continue
    loss.backward()
    ```

    ## Use instead
    ```python
    bad = torch.isnan(loss).int()
    dist.all_reduce(bad, op=dist.ReduceOp.MAX)  # any rank's NaN skips the step everywhere
    if bad.item():
        continue
    loss.backward()
    ```

    ## Fix safety
    No automatic fix: the reduction a flag needs (MAX for "any rank", MIN for "all
    ranks") depends on what it means.

    ## References
    - PyTorch docs, `torch.distributed.broadcast` ("broadcasts the tensor to the whole
      group": the source rank's value replaces the others') and `all_reduce` with
      `ReduceOp.MAX`.
    """

    code = "DDP216"
    needs_peers = True
    name = "skip-decided-by-one-rank"
    summary = "a skip flag from one rank's batch is broadcast instead of reduced"
    severity = Severity.WARNING
    needles = ("broadcast",)
    also_needles = ("backward(", "training_step")

    reads_libcst = False

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        for skip in skips_decided_by_one_rank(ctx.analysis):
            source = call_argument(skip.broadcast, 1, "src")
            rank = header_text(source) if source is not None else "the source rank"
            message = (
                f"`{header_text(skip.broadcast)}` hands rank {rank}'s flag, computed from its "
                f"own batch or loss, to every rank, and `{header_text(skip.exit)}` obeys it: a "
                "NaN or bad batch on another rank is never skipped, and its gradients reach "
                "every rank through the all-reduce (silently). Reduce the flag instead: "
                "`all_reduce(flag, op=ReduceOp.MAX)`"
            )
            yield ctx.ast_finding(
                self,
                skip.broadcast,
                message,
                summary="one rank's batch decides the skip for all ranks",
                related=[(skip.exit, "the exit the broadcast flag decides")],
            )
