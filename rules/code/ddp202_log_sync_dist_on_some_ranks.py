"""DDP202: ``self.log(..., sync_dist=True)`` under a rank guard."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.lightning_monitors import LightningMonitors
from ddplint.analysis.synced_logs import synced_logs_on_some_ranks
from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import ast_node_text
from ddplint.finding import Applicability, Edit, Finding, Fix, Severity
from ddplint.needles import RANK_NEEDLES
from ddplint.rule import CodeRule
from ddplint.rules.code.ddp214_log_dir_on_some_ranks import guard_related, guard_text
from ddplint.rules.screens import logs_with_sync_dist


class LogSyncDistOnSomeRanks(CodeRule):
    """
    ## What it does
    Flags `self.log(..., sync_dist=True)` / `self.log_dict(..., sync_dist=True)` that
    runs on some ranks only: under `if self.trainer.is_global_zero:` (or any rank
    condition, its `else`, an early `return` on one), in a `@rank_zero_only` hook, or a
    call of a function of the module that logs so under such a condition
    (`if self.global_rank == 0: self._log_metrics()`, reported at the call). In a callback,
    the same for the LightningModule a hook is handed (`pl_module.log(...)`).

    The module is known by what it is, never by a variable's name: the instance of a
    LightningModule's method, the module a callback hook is handed, a parameter
    annotated `LightningModule`. It is built on the analysis core (control dependence
    on the divergence analysis, rank guards).

    Not flagged: a log on every rank; `rank_zero_only=True` (Lightning reduces
    nothing); a rank test whose other branch logs the same keys with `sync_dist=True`
    (every rank joins the reduction).

    ## Why is this bad?
    `sync_dist=True` makes Lightning all-reduce the value across ranks (twice for a mean
    at epoch end). The ranks that skip the call never join that all-reduce, so the
    logging ranks wait until the collective timeout (Lightning #19783, #19604), or the
    reduction pairs with some later collective of the other ranks. Lightning's docs:
    "If you call self.log on rank 0 only, set rank_zero_only=True".

    ## Example
    ```python
    def validation_step(self, batch, batch_idx):
        wer = self.compute_wer(batch)
        if self.trainer.is_global_zero:
            self.log("val_wer", wer, sync_dist=True)
    ```

    ## Use instead
    ```python
    def validation_step(self, batch, batch_idx):
        wer = self.compute_wer(batch)
        self.log("val_wer", wer, sync_dist=True)  # every rank: a true mean
    ```
    or, to keep rank 0's value only, `self.log("val_wer", wer, rank_zero_only=True)`.

    ## Fix safety
    Under a guard that lets global rank 0 alone through (`is_global_zero`,
    `global_rank == 0`, `@rank_zero_only`; not `local_rank == 0`) the fix replaces
    `sync_dist=True` by `rank_zero_only=True`. It is safe: the logged value was only
    ever rank 0's, and the call no longer waits for the other ranks. Under any other
    rank condition no fix is offered (the logger only writes rank 0's values), nor
    where the other ranks log other keys with `sync_dist` (the fix would leave their
    reductions waiting).
    No fix is offered either when a `ModelCheckpoint`/`EarlyStopping` of the same module
    monitors the key (or the key is not a literal while one monitors something):
    Lightning cannot monitor a rank-zero-only metric, so log it on every rank instead.

    ## References
    - Lightning docs: `LightningModule.log`, `sync_dist` and `rank_zero_only`.
    - Lightning issues #19783, #19604.
    """

    code = "DDP202"
    needs_peers = True
    name = "log-sync-dist-on-some-ranks"
    summary = "self.log(..., sync_dist=True) reached only on some ranks"
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE
    needles = RANK_NEEDLES
    #: The call it reports passes ``sync_dist`` (a project fact cannot stand for it).
    required = ("sync_dist",)

    screened_by = staticmethod(logs_with_sync_dist)
    reads_libcst = False

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        logs = synced_logs_on_some_ranks(ctx.analysis)
        if not logs:
            return
        monitors = LightningMonitors(ctx.analysis)
        for log in logs:
            method = ast_node_text(ctx, (log.log or log.call).func)
            where = guard_text(log.guard)
            brief = "on rank 0 only" if log.global_zero else "on some ranks only"
            summary = f"`{method}(..., sync_dist=True)` runs {brief}"
            message = (
                f"`{method}(..., sync_dist=True)` runs {where}: its sync is an all-reduce "
                "that the other ranks never join, so the logging ranks wait until the "
                "timeout"
            )
            if log.log is not None:
                called = ast_node_text(ctx, log.call.func)
                summary = f"`{called}()` logs with sync_dist=True {brief}"
                message = (
                    f"`{called}()` runs {where}, and it logs with `{method}(..., "
                    f"sync_dist=True)` (line {log.log.lineno}): an all-reduce that the other "
                    "ranks never join, so the logging ranks wait until the timeout"
                )
            related = [guard_related(log.guard)]
            if log.log is not None:
                related.append((log.log, "the log that all-reduces"))
            fix = None
            clash = next((m for k in log.keys or () if (m := monitors.monitored(k))), None)
            if clash is not None:
                message += (
                    f"; `{clash.key}` is monitored by `{ast_node_text(ctx, clash.call.func)}` "
                    f"(line {clash.line}), which cannot monitor a rank-zero-only metric: log "
                    "it on every rank"
                )
                related.append((clash.call, "the callback that monitors it"))
            elif log.instead:
                spelled = ", ".join(f"`{key}`" for key in log.instead)
                message = (
                    f"`{method}(..., sync_dist=True)` runs {where}, and the other ranks log "
                    f"{spelled} with sync_dist instead: each all-reduce pairs with one of "
                    "another metric (silently mixed values, or a hang when the counts "
                    "differ); log the same keys on every rank"
                )
            elif log.keys is None and monitors.monitors:
                message += "; log it on every rank, or with rank_zero_only=True if unmonitored"
            elif log.global_zero and log.log is None:
                message += "; to log rank 0's value alone, use rank_zero_only=True"
                fix = _fix(ctx, log.call)
            elif log.global_zero:
                message += "; call it on every rank, or log rank 0's value with rank_zero_only=True"
            else:
                message += "; log it on every rank"
            yield ctx.ast_finding(
                self, log.call, message, summary=summary, related=related, fix=fix
            )


def _fix(ctx: CodeContext, call: ast.Call) -> Fix | None:
    """``sync_dist=True`` replaced by ``rank_zero_only=True``."""
    if any(k.arg == "rank_zero_only" for k in call.keywords):
        return None
    sync = next(k for k in call.keywords if k.arg == "sync_dist")
    edit = Edit(*ctx.ast_range(sync), "rank_zero_only=True")
    return Fix(Applicability.SAFE, (edit,), "Log rank 0's value with `rank_zero_only=True`")
