"""DDP215: ``trainer.should_stop`` set on some ranks only."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ddplint.code.context import CodeContext
from ddplint.code.syntax.conditions import guarding_conditions
from ddplint.code.syntax.messages import snippet
from ddplint.code.syntax.names import dotted_name
from ddplint.finding import Finding, Severity
from ddplint.rule import CodeRule


def _sets_should_stop(target: cst.BaseAssignTargetExpression) -> bool:
    """``trainer.should_stop``, ``self.trainer.should_stop``."""
    if not isinstance(target, cst.Attribute) or target.attr.value != "should_stop":
        return False
    last = (dotted_name(target.value) or "").rsplit(".", 1)[-1].lower()
    return last == "trainer" or last.endswith("_trainer")


class ShouldStopOnSomeRanks(CodeRule):
    """
    ## What it does
    Flags `trainer.should_stop = ...` (also `self.trainer.should_stop`) that sets the
    flag on some ranks only: under a rank test (`if trainer.is_global_zero:`, a
    `@rank_zero_only` hook), under a condition on a value that differs between ranks
    (this rank's loss or batch: `if torch.isnan(loss):` in `training_step`; a flag set
    on some ranks only; a local probe such as the clock), or assigned such a value.

    Not flagged: a value decided collectively
    (`trainer.should_stop = trainer.strategy.reduce_boolean_decision(stop, all=False)`,
    or a flag that went through `all_reduce` / `broadcast`); a condition every rank
    shares (the epoch, `global_step`, configuration).

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
    name = "should-stop-on-some-ranks"
    summary = "trainer.should_stop set on some ranks only"
    severity = Severity.ERROR
    needles = ("should_stop",)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        for assign in ctx.index.nodes(cst.Assign):
            if not any(_sets_should_stop(t.target) for t in assign.targets):
                continue
            if _is_false(assign.value):
                continue
            reason = self._reason(ctx, assign)
            if reason is None:
                continue
            message = (
                f"`{snippet(ctx, assign)}` {reason}: Lightning reads each rank's own flag, so "
                "this rank stops while the others go on into the next step's gradient "
                "all-reduce or collective and wait until the timeout. Decide together first: "
                "`trainer.strategy.reduce_boolean_decision(stop, all=False)`"
            )
            yield ctx.finding(
                self, assign, message, summary="trainer.should_stop set on some ranks only"
            )

    @staticmethod
    def _reason(ctx: CodeContext, assign: cst.Assign) -> str | None:
        reachability = ctx.rank_reachability
        guard = reachability.guard_of(assign)
        if guard is not None:
            return f"runs {reachability.describe(guard)}"
        divergence = ctx.divergence
        for condition in guarding_conditions(ctx.index, assign):
            found = divergence.source_of(condition.test)
            if found is not None:
                when = "unless" if condition.negated else "when"
                return (
                    f"runs only {when} `{snippet(ctx, condition.test)}`, which reads "
                    f"{found.source.value}"
                )
        found = divergence.source_of(assign.value)
        if found is not None:
            return f"sets a value that reads {found.source.value}"
        return None


def _is_false(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Name) and value.value == "False"
