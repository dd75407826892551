"""DDP211: a stop / skip flag set on some ranks only, then obeyed by every rank."""

from __future__ import annotations

from collections.abc import Iterator

from ddplint.code.context import CodeContext
from ddplint.code.values.divergence import Source
from ddplint.finding import Finding, Severity
from ddplint.needles import RANK_NEEDLES
from ddplint.rule import CodeRule
from ddplint.rules.code.ddp210_divergent_exit_before_collective import (
    divergent_exit_message,
    divergent_exit_summary,
)


class DecisionOnSomeRanks(CodeRule):
    """
    ## What it does
    Flags a `break` / `continue` / `return` (or a collective) decided by a flag that is
    set under a rank guard and never shared: an early-stopping, patience or skip flag
    computed on rank 0 (`if rank == 0: stop = val_loss > best`, or `self.stop = True` in
    a rank-0-only method) and then tested by every rank (`if stop: break`) before a
    collective or `backward()` that the others still run, this iteration or the next.

    Not flagged: the flag shared before it is used (`dist.broadcast(flag, src=0)`,
    `broadcast_object_list([stop])` then `stop = objs[0]`, `all_reduce`,
    `strategy.reduce_boolean_decision`); a flag reassigned on every rank after the guarded
    assignment; a test that itself sits under the rank guard (DDP201's).

    ## Why is this bad?
    The other ranks still hold the flag's initial value. Rank 0 leaves the loop; its
    peers run the next step and wait in its gradient all-reduce or collective until the
    timeout (10 minutes with NCCL by default, 30 under Lightning), and the job dies
    with a hang instead of stopping.

    ## Example
    ```python
    stop = False
    for epoch in range(epochs):
        train_one_epoch(model, loader)
        if dist.get_rank() == 0:
            stop = early_stopper.step(evaluate(model))
        if stop:
            break
    ```

    ## Use instead
    ```python
    stop = torch.tensor(0, device=device)
    for epoch in range(epochs):
        train_one_epoch(model, loader)
        if dist.get_rank() == 0:
            stop.fill_(int(early_stopper.step(evaluate(model))))
        dist.broadcast(stop, src=0)  # every rank sees rank 0's decision
        if stop.item():
            break
    ```

    ## Fix safety
    No automatic fix: where to share the decision (and with which reduction) is the
    author's call.

    ## References
    - PyTorch docs, `torch.distributed.broadcast` and `broadcast_object_list`.
    - Lightning source (2.6.6), `EarlyStopping._run_early_stopping_check`: "stop every
      ddp process if any world process decides to stop" via
      `trainer.strategy.reduce_boolean_decision`.
    """

    code = "DDP211"
    name = "decision-on-some-ranks"
    summary = "a flag set on some ranks only decides an exit every rank takes"
    severity = Severity.ERROR
    #: Preview since issue 23: under the bar of precision on blind code (docs/precision.md).
    default_enabled = False
    needles = RANK_NEEDLES

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        owned_by_ddp204 = {skip.statement for skip in ctx.step_skips.find()}
        for found in ctx.divergent_exits.find({Source.DECIDED}):
            if found.statement in owned_by_ddp204:
                continue
            message = divergent_exit_message(ctx, found)
            summary = divergent_exit_summary(found)
            yield ctx.finding(self, found.statement, message, summary=summary)
