"""DDP214: ``trainer.log_dir`` (a broadcast) read on some ranks only."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ddplint.code.context import CodeContext
from ddplint.code.syntax.names import dotted_name
from ddplint.finding import Finding, Severity
from ddplint.needles import RANK_NEEDLES
from ddplint.rule import CodeRule


def _reads_trainer_log_dir(node: cst.Attribute) -> bool:
    """``trainer.log_dir``, ``self.trainer.log_dir``, ``pl_module.trainer.log_dir``."""
    if node.attr.value != "log_dir":
        return False
    receiver = dotted_name(node.value) or ""
    last = receiver.rsplit(".", 1)[-1].lower()
    return last == "trainer" or last.endswith("_trainer")


class LogDirOnSomeRanks(CodeRule):
    """
    ## What it does
    Flags a read of Lightning's `trainer.log_dir` (also `self.trainer.log_dir`) that runs
    on some ranks only: under `if trainer.is_global_zero:` / `if self.global_rank == 0:`,
    after a rank-guarded early exit, or in a `@rank_zero_only` function or hook.

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
    name = "log-dir-on-some-ranks"
    summary = "trainer.log_dir (a broadcast) read on some ranks only"
    severity = Severity.ERROR
    needles = ("log_dir",)
    also_needles = RANK_NEEDLES

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        reachability = ctx.rank_reachability
        for node in ctx.index.nodes(cst.Attribute):
            if not _reads_trainer_log_dir(node):
                continue
            guard = reachability.guard_of(node)
            if guard is None:
                continue
            where = reachability.describe(guard)
            message = (
                f"`{ctx.node_text(node)}` runs {where}, but the property broadcasts "
                "(`strategy.broadcast(dirpath)`): the ranks that do not read it never join, "
                "so this one waits until the timeout. Read it on every rank before the rank "
                "test, or use the logger's own `log_dir`"
            )
            yield ctx.finding(
                self, node, message, summary="trainer.log_dir broadcasts; read on some ranks only"
            )
