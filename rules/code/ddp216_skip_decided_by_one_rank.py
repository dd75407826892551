"""DDP216: a skip decided by one rank's batch and broadcast to the others."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ddplint.code.context import CodeContext
from ddplint.code.syntax.call_args import argument
from ddplint.code.syntax.conditions import guarding_conditions
from ddplint.code.syntax.messages import snippet
from ddplint.code.values.data_dependence import value_names_read
from ddplint.code.values.divergence import Source
from ddplint.finding import Finding, Severity
from ddplint.rule import CodeRule

_BROADCASTS = frozenset({"broadcast", "broadcast_object_list"})
_EXITS = (cst.Continue, cst.Break, cst.Return)


class SkipDecidedByOneRank(CodeRule):
    """
    ## What it does
    Flags, in a training loop or `training_step`, a `broadcast` (or
    `broadcast_object_list`) of a flag computed from this rank's loss or batch
    (`bad = torch.isnan(loss)`) whose result then decides a `continue` / `break` /
    `return` on every rank: the source rank's data decides for all.

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
    name = "skip-decided-by-one-rank"
    summary = "a skip flag from one rank's batch is broadcast instead of reduced"
    severity = Severity.WARNING
    needles = ("broadcast",)
    also_needles = ("backward(", "training_step")

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        for call, collective in ctx.collectives.items():
            if collective.op not in _BROADCASTS or not call.args:
                continue
            operand = call.args[0].value
            if not isinstance(operand, cst.Name):
                continue
            held = ctx.divergence.held_before(call, operand.value)
            if held is None or held.source is not Source.DATA:
                continue
            decided = self._decided_exit(ctx, call, operand.value)
            if decided is None:
                continue
            source = argument(call, "src", 1)
            rank = snippet(ctx, source.value) if source is not None else "the source rank"
            message = (
                f"`{snippet(ctx, call)}` hands rank {rank}'s flag, computed from its own "
                f"batch or loss, to every rank, and `{snippet(ctx, decided)}` obeys it: a "
                "NaN or bad batch on another rank is never skipped, and its gradients reach "
                "every rank through the all-reduce (silently). Reduce the flag instead: "
                "`all_reduce(flag, op=ReduceOp.MAX)`"
            )
            yield ctx.finding(
                self, call, message, summary="one rank's batch decides the skip for all ranks"
            )

    @staticmethod
    def _decided_exit(ctx: CodeContext, call: cst.Call, key: str) -> cst.CSTNode | None:
        """The first exit after ``call`` in its training loop or step whose condition
        reads ``key``."""
        loop = ctx.training_steps.training_loop_of(call)
        function = ctx.index.enclosing_function(call)
        region: cst.CSTNode | None = loop.body if loop is not None else None
        if region is None and ctx.training_steps.is_training_step(function):
            assert function is not None
            region = function.body
        if region is None:
            return None
        position = ctx.index.order[call]
        for node in ctx.index.walk_within(region):
            if not isinstance(node, _EXITS) or ctx.index.order[node] < position:
                continue
            for guard in guarding_conditions(ctx.index, node):
                if any(n.value == key for n in value_names_read(guard.test)):
                    return node
        return None
