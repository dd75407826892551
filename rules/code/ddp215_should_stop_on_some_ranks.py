"""DDP215: ``trainer.should_stop`` set on some ranks only."""

from __future__ import annotations

from collections.abc import Iterator

from ddplint.analysis.rank_guards import BY_RANK
from ddplint.analysis.trainer_questions import OnSomeRanks, should_stop_on_some_ranks
from ddplint.code.context import CodeContext
from ddplint.finding import Finding, Severity
from ddplint.rule import CodeRule
from ddplint.rules.code.ddp214_log_dir_on_some_ranks import guard_related, guard_text
from ddplint.rules.code.ddp219_ranks_part_before_collective import header_text


class ShouldStopOnSomeRanks(CodeRule):
    """
    ## What it does
    Flags `trainer.should_stop = ...` (also `self.trainer.should_stop`) that sets the
    flag on some ranks only: under a rank test (`if trainer.is_global_zero:`, a
    `@rank_zero_only` hook), under a condition on a value that differs between ranks
    (this rank's loss or batch: `if torch.isnan(loss):` in `training_step`; a flag set
    on some ranks only; a local probe such as the clock), or assigned such a value.

    The trainer is known by what made it, never by a variable's name (as DDP214 knows
    it). It is built on the analysis core (control dependence on the divergence
    analysis).

    Not flagged: a value decided collectively
    (`trainer.should_stop = trainer.strategy.reduce_boolean_decision(stop, all=False)`,
    or a flag that went through `all_reduce` / `broadcast`); a condition every rank
    shares (the epoch, `global_step`, configuration); a flag set on some ranks that
    every way out of the function sets again, on every rank, to such a shared value
    (`if trainer.is_global_zero: trainer.should_stop = True`, then `trainer.should_stop
    = trainer.strategy.reduce_boolean_decision(trainer.should_stop, all=False)`).

    ## Why is this bad?
    Lightning does not share `should_stop` between ranks: the fit and epoch loops read
    each rank's own flag (`FitLoop.done`, `_TrainingEpochLoop.done` in Lightning 2.6.6).
    Lightning's `EarlyStopping` and `ModelCheckpoint` reduce their own decisions with
    `trainer.strategy.reduce_boolean_decision` before setting it; a flag set directly on
    one rank stops that rank only, and the others run into the next step's gradient
    all-reduce or the next collective and hang until the timeout.

    ## Example
    ```python
    def training_step(self, batch, batch_idx):
        loss = self.compute_loss(batch)
        if torch.isnan(loss):
            self.trainer.should_stop = True
        return loss
    ```

    ## Use instead
    ```python
    def training_step(self, batch, batch_idx):
        loss = self.compute_loss(batch)
        stop = self.trainer.strategy.reduce_boolean_decision(bool(torch.isnan(loss)), all=False)
        if stop:
            self.trainer.should_stop = True
        return loss
    ```

    ## Fix safety
    No automatic fix: where to reduce the decision is the author's call.

    ## References
    - Lightning 2.6.6 source, `lightning/pytorch/callbacks/early_stopping.py`: "stop every
      ddp process if any world process decides to stop"
      (`trainer.strategy.reduce_boolean_decision(should_stop, all=False)`).
    - Lightning docs, `Strategy.reduce_boolean_decision`.
    """

    code = "DDP215"
    needs_peers = True
    name = "should-stop-on-some-ranks"
    summary = "trainer.should_stop set on some ranks only"
    severity = Severity.ERROR
    needles = ("should_stop",)

    reads_libcst = False

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        for found in should_stop_on_some_ranks(ctx.analysis):
            message = (
                f"`{header_text(found.target)}` {_reason(found)}: Lightning reads each "
                "rank's own flag, so this rank stops while the others go on into the next "
                "step's gradient all-reduce or collective and wait until the timeout. Decide "
                "together first: `trainer.strategy.reduce_boolean_decision(stop, all=False)`"
            )
            related = [guard_related(found.guard)] if found.guard is not None else []
            yield ctx.ast_finding(
                self,
                found.target,
                message,
                summary="trainer.should_stop set on some ranks only",
                related=related,
            )


def _reason(found: OnSomeRanks) -> str:
    guard = found.guard
    if guard is None:
        assert found.value is not None
        return f"sets a value that reads {found.value.source.value}"
    if guard.runs_when is None or guard.taint.source in BY_RANK:
        return f"runs {guard_text(guard)}"
    when = "when" if guard.runs_when else "unless"
    return f"runs only {when} `{header_text(guard.test)}`, which reads {guard.taint.source.value}"
