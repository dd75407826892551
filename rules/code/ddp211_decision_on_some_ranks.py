"""DDP211: a stop / skip flag set on some ranks only, then obeyed by every rank."""

from __future__ import annotations

from collections.abc import Iterator

from ddplint.analysis.decisions import decided_by_some_ranks, decided_flag
from ddplint.analysis.questions import Parting, where_ranks_part
from ddplint.code.context import CodeContext
from ddplint.finding import Finding, Severity
from ddplint.needles import COLLECTIVE_CALL_NEEDLES, IMPLICIT_NEEDLES, RANK_NEEDLES
from ddplint.rule import CodeRule
from ddplint.rules.code.ddp219_ranks_part_before_collective import (
    parting_message,
    parting_related,
)


class DecisionOnSomeRanks(CodeRule):
    """
    ## What it does
    Flags a `break` / `continue` / `return` (or a collective) decided by a flag that is
    set under a test that differs between ranks and never shared: an early-stopping,
    patience or skip flag computed on rank 0 (`if rank == 0: stop = val_loss > best`)
    and then tested by every rank (`if stop: break`) before a collective (or the
    all-reduce of a DDP model's backward) that the others still run, this iteration or
    the next. The finding names the flag and where it was set.

    This is DDP219's question (where ranks stop issuing the same collectives) in the
    case where the reason is a value some ranks set: each such place is reported by
    DDP211 alone, every other parting by DDP219 (one finding per root cause). It is
    built on the analysis core.

    Not flagged: the flag shared before it is used (`dist.broadcast(flag, src=0)`,
    `broadcast_object_list([stop])` then `stop = objs[0]`, `all_reduce`); a flag bound
    again on every rank after the guarded assignment; a test whose branches issue the
    same collectives; a flag that decides no collective.

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
    reads_libcst = False
    name = "decision-on-some-ranks"
    summary = "a flag set on some ranks only decides an exit every rank takes"
    severity = Severity.ERROR
    #: Preview since issue 23: under the bar of precision on blind code (docs/precision.md).
    default_enabled = False
    needs_peers = True
    needles = RANK_NEEDLES
    more_needles = ((*COLLECTIVE_CALL_NEEDLES, *IMPLICIT_NEEDLES),)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        for parting in where_ranks_part(ctx.analysis):
            if not decided_by_some_ranks(parting):
                continue
            found = decided_flag(ctx.analysis, parting)
            flag = found[0] if found is not None else None
            yield ctx.ast_finding(
                self,
                parting.cause,
                _message(parting, flag),
                summary=_summary(parting, flag),
                related=parting_related(parting),
            )


def _message(parting: Parting, flag: str | None) -> str:
    named = f"`{flag}`" if flag is not None else "a value it reads"
    reason = (
        f"{named} is set on some ranks only (under the test on line {parting.taint.line}) "
        "and never shared"
    )
    return parting_message(parting, reason)


def _summary(parting: Parting, flag: str | None) -> str:
    named = f"`{flag}`" if flag is not None else "a value"
    return f"{named}, set on some ranks only, decides whether `{parting.missed.name}` runs"
