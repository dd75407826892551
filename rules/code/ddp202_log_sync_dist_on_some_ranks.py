"""DDP202: ``self.log(..., sync_dist=True)`` under a rank guard."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ddplint.code.context import CodeContext
from ddplint.code.ranks.guard_brief import ranks_brief, runs_on_rank_zero
from ddplint.code.syntax.names import dotted_name
from ddplint.finding import Applicability, Edit, Finding, Fix, Severity
from ddplint.needles import RANK_NEEDLES
from ddplint.rule import CodeRule
from ddplint.rules.screens import logs_with_sync_dist

#: Callbacks that read a logged metric by name: they cannot use a rank-zero-only one.
_MONITORING_CALLBACKS = ("ModelCheckpoint", "EarlyStopping")
#: Decorators whose body runs on global rank 0 (so the value was only ever rank 0's).


def _string(expr: cst.BaseExpression | None) -> str | None:
    if isinstance(expr, cst.SimpleString) and isinstance(expr.evaluated_value, str):
        return expr.evaluated_value
    return None


def _keyword(call: cst.Call, name: str) -> cst.Arg | None:
    return next((a for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def logged_keys(call: cst.Call) -> list[str] | None:
    """The metric names ``self.log``/``self.log_dict`` logs, or None when not literal."""
    if not isinstance(call.func, cst.Attribute):
        return None
    positional = [a for a in call.args if a.keyword is None and not a.star]
    if call.func.attr.value == "log":
        named = _keyword(call, "name")
        key = _string(named.value if named else positional[0].value if positional else None)
        return [key] if key is not None else None
    metrics = _keyword(call, "dictionary")
    value = metrics.value if metrics else positional[0].value if positional else None
    if not isinstance(value, cst.Dict):
        return None
    keys = [_string(e.key) if isinstance(e, cst.DictElement) else None for e in value.elements]
    return [k for k in keys if k is not None] if all(k is not None for k in keys) else None


def monitored_keys(ctx: CodeContext) -> dict[str, cst.Call]:
    """``monitor=`` names of the ModelCheckpoint/EarlyStopping callbacks built in the module."""
    found: dict[str, cst.Call] = {}
    for call in ctx.index.nodes(cst.Call):
        callee = (dotted_name(call.func) or "").rsplit(".", 1)[-1]
        if not callee.endswith(_MONITORING_CALLBACKS):
            continue
        monitor = _keyword(call, "monitor")
        key = _string(monitor.value) if monitor is not None else None
        if key is not None:
            found.setdefault(key, call)
    return found


class LogSyncDistOnSomeRanks(CodeRule):
    """
    ## What it does
    Flags `self.log(..., sync_dist=True)` / `self.log_dict(..., sync_dist=True)` that
    runs on some ranks only: under `if self.trainer.is_global_zero:` (or any rank
    condition, its `else`, an early `return` on one), or in a `@rank_zero_only` hook.

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
    Under a rank-0 guard (`is_global_zero`, `global_rank == 0`, `@rank_zero_only`) the
    fix replaces `sync_dist=True` by `rank_zero_only=True`. It is safe: the logged value
    was only ever rank 0's, and the call no longer waits for the other ranks. Under any
    other rank condition no fix is offered (the logger only writes rank 0's values).
    No fix is offered either when a `ModelCheckpoint`/`EarlyStopping` of the same module
    monitors the key (or the key is not a literal while one monitors something):
    Lightning cannot monitor a rank-zero-only metric, so log it on every rank instead.

    ## References
    - Lightning docs: `LightningModule.log`, `sync_dist` and `rank_zero_only`.
    - Lightning issues #19783, #19604.
    """

    code = "DDP202"
    name = "log-sync-dist-on-some-ranks"
    summary = "self.log(..., sync_dist=True) reached only on some ranks"
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE
    needles = RANK_NEEDLES
    #: The call it reports passes ``sync_dist`` (a project fact cannot stand for it).
    required = ("sync_dist",)

    screened_by = staticmethod(logs_with_sync_dist)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        monitored: dict[str, cst.Call] | None = None
        reachability = ctx.rank_reachability
        for call, _, guard in reachability.divergent_collectives(lambda c: c.syncs_logged_metric):
            if monitored is None:
                monitored = monitored_keys(ctx)
            where = reachability.describe(guard)
            method = ctx.node_text(call.func)
            summary = f"`{method}(..., sync_dist=True)` runs {ranks_brief(ctx, guard)}"
            message = (
                f"`{method}(..., sync_dist=True)` runs {where}: its sync is an all-reduce "
                "that the other ranks never join, so the logging ranks wait until the "
                "timeout"
            )
            keys = logged_keys(call)
            clash = next((k for k in keys or () if k in monitored), None)
            if clash is not None:
                callback = monitored[clash]
                name = ctx.node_text(callback.func)
                message += (
                    f"; `{clash}` is monitored by `{name}` (line {ctx.range_of(callback)[0]}), "
                    "which cannot monitor a rank-zero-only metric: log it on every rank"
                )
                yield ctx.finding(self, call, message, summary=summary)
            elif keys is None and monitored:
                message += "; log it on every rank, or with rank_zero_only=True if unmonitored"
                yield ctx.finding(self, call, message, summary=summary)
            elif runs_on_rank_zero(ctx, guard):
                message += "; to log rank 0's value alone, use rank_zero_only=True"
                yield ctx.finding(self, call, message, self._fix(ctx, call), summary=summary)
            else:
                message += "; log it on every rank"
                yield ctx.finding(self, call, message, summary=summary)

    @staticmethod
    def _fix(ctx: CodeContext, call: cst.Call) -> Fix | None:
        if _keyword(call, "rank_zero_only") is not None:
            return None
        sync = _keyword(call, "sync_dist")
        if sync is None or sync.keyword is None:
            return None
        start = ctx.range_of(sync.keyword)
        end = ctx.range_of(sync.value)
        edit = Edit(start[0], start[1], end[2], end[3], "rank_zero_only=True")
        return Fix(Applicability.SAFE, (edit,), "Log rank 0's value with `rank_zero_only=True`")
