"""DDP214: ``trainer.log_dir`` (a broadcast) read on some ranks only."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.rank_guards import RankGuard
from ddplint.analysis.trainer_questions import log_dirs_on_some_ranks
from ddplint.code.context import CodeContext
from ddplint.finding import Finding, Severity
from ddplint.needles import RANK_NEEDLES
from ddplint.rule import CodeRule
from ddplint.rules.code.ddp219_ranks_part_before_collective import header_text


class LogDirOnSomeRanks(CodeRule):
    """
    ## What it does
    Flags a read of Lightning's `trainer.log_dir` (also `self.trainer.log_dir`) that runs
    on some ranks only: under `if trainer.is_global_zero:` / `if self.global_rank == 0:`,
    after a rank-guarded early exit, or in a `@rank_zero_only` function or hook.

    The trainer is known by what made it, never by a variable's name: a `Trainer(...)`
    of Lightning, `self.trainer` in a LightningModule, the trainer a callback hook is
    handed (`on_*(self, trainer, pl_module)`), a parameter annotated `Trainer`, or a name
    bound to one of these. It is built on the analysis core (control dependence on the
    divergence analysis).

    Not flagged: the logger's own `log_dir` (`self.logger.log_dir`,
    `trainer.logger.log_dir`), which does not communicate; a read on every rank.

    ## Why is this bad?
    `Trainer.log_dir` is a property that ends with `self.strategy.broadcast(dirpath)`
    (Lightning 2.6.6, `trainer/trainer.py`); its docstring says "You must call this on
    all processes. Failing to do so will cause your program to stall forever." Read on
    rank 0 only, that broadcast waits for peers that never join, or pairs with their
    next collective.

    ## Example
    ```python
    class SaveSamples(Callback):
        @rank_zero_only
        def on_validation_epoch_end(self, trainer, pl_module):
            save_images(samples, trainer.log_dir)
    ```

    ## Use instead
    ```python
    class SaveSamples(Callback):
        def on_validation_epoch_end(self, trainer, pl_module):
            log_dir = trainer.log_dir  # every rank takes part in the broadcast
            if trainer.is_global_zero:
                save_images(samples, log_dir)
    ```
    or read `trainer.logger.log_dir` (no broadcast) where the logger is known.

    ## Fix safety
    No automatic fix: the read has to move above the rank test, which may change what
    other code sees.

    ## References
    - Lightning docs, `Trainer.log_dir`: "You must call this on all processes. Failing to
      do so will cause your program to stall forever."
    - Lightning 2.6.6 source, `lightning/pytorch/trainer/trainer.py`, `Trainer.log_dir`
      (`dirpath = self.strategy.broadcast(dirpath)`).
    """

    code = "DDP214"
    needs_peers = True
    name = "log-dir-on-some-ranks"
    summary = "trainer.log_dir (a broadcast) read on some ranks only"
    severity = Severity.ERROR
    needles = ("log_dir",)
    also_needles = RANK_NEEDLES

    reads_libcst = False

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        for found in log_dirs_on_some_ranks(ctx.analysis):
            assert found.guard is not None
            message = (
                f"`{header_text(found.target)}` runs {guard_text(found.guard)}, but the "
                "property broadcasts (`strategy.broadcast(dirpath)`): the ranks that do not "
                "read it never join, so this one waits until the timeout. Read it on every "
                "rank before the rank test, or use the logger's own `log_dir`"
            )
            yield ctx.ast_finding(
                self,
                found.target,
                message,
                summary="trainer.log_dir broadcasts; read on some ranks only",
                related=[guard_related(found.guard)],
            )


def guard_related(guard: RankGuard) -> tuple[ast.AST, str]:
    """The guard as a related place of a finding."""
    if guard.runs_when is None:
        return guard.cause, "the decorator that runs it on one rank"
    return guard.cause, "the test that decides whether it runs"


def guard_text(guard: RankGuard) -> str:
    """Where guarded code runs, for messages: "only on ranks where `rank == 0` (line 12)"."""
    if guard.runs_when is None:
        decorator = header_text(guard.test)
        return f"only where `@{decorator}` runs `{guard.function}` (line {guard.line})"
    test, runs_when = guard.test, guard.runs_when
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, runs_when = test.operand, not runs_when
    negated = "" if runs_when else " is false"
    return f"only on ranks where `{header_text(test)}`{negated} (line {guard.line})"
