"""DDP230: a metric a Lightning callback monitors, logged rank-locally."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.lightning_monitors import LightningMonitors, Monitor, RankLocalLog
from ddplint.code.context import CodeContext
from ddplint.finding import Finding, Severity
from ddplint.rule import CodeRule


class MonitoredMetricRankLocal(CodeRule):
    """
    ## What it does
    Flags a LightningModule's (or NeMo model's) `self.log("key", ...)` (or
    `self.log_dict({"key": ...})`) of a metric that a `ModelCheckpoint(monitor="key")`
    or `EarlyStopping(monitor="key")` of the same module monitors, when the log leaves
    the metric rank-local:

    - it passes `rank_zero_only=True`, so Lightning reduces nothing (also with
      `sync_dist=True`) and each rank's callback reads its own value; or
    - it runs on some ranks only: under a test that reads the rank
      (`if self.global_rank == 0:`, `if self.trainer.is_global_zero:`, an early
      `return` on the other ranks), in a function decorated `@rank_zero_only`, or in a
      method of the class called only from such places.

    Callbacks are recognised by their allocation (Lightning's classes by import, or a
    class of the module derived from one, with the `monitor` it hands to
    `super().__init__`), never by a variable's name. Not flagged: a value that already
    agrees (a constant, the step, epoch or learning rate, the buffer of an earlier
    `all_reduce` / `broadcast` in the same method, a `torchmetrics` metric), a key
    also logged elsewhere in the module on every rank, a log on some ranks only with
    `sync_dist=True` (DDP202 reports it: its reduction hangs first), a key no callback
    of the module monitors (DDP616 checks the callbacks of YAML
    configs). Callbacks made in another module of the project are not seen yet.

    This rule is built on the analysis core and is in preview while its precision is
    measured.

    ## Why is this bad?
    `ModelCheckpoint` and `EarlyStopping` run on every rank and assume the monitored
    value is the same everywhere. Lightning 2.6.6's `LightningModule.log` says so: with
    `rank_zero_only=True` "you won't be able to use this metric as a monitor in
    callbacks ... Improper use can lead to deadlocks". Where the key is missing on the
    other ranks, their `ModelCheckpoint` raises `MisconfigurationException:
    ModelCheckpoint(monitor=...) could not find the monitored key` and `EarlyStopping`
    raises (`strict=True`) or returns before its `reduce_boolean_decision` while rank 0
    waits in it. Where each rank holds its own value (`rank_zero_only=True` switches
    the reduction off even with `sync_dist=True`, and silences Lightning's own
    "It is recommended to use `sync_dist=True`" warning), `ModelCheckpoint` ranks
    checkpoints by each rank's value: the ranks keep different `best_model_path` and
    top-k, and where the file name formats the metric, the version-counter loop of
    `_get_metric_interpolated_filepath_name` runs a different number of
    `reduce_boolean_decision` collectives per rank and the job hangs (Lightning issue
    #19045); `EarlyStopping` stops when any rank's own unreduced value says so.

    ## Example
    ```python
    class Model(L.LightningModule):
        def validation_step(self, batch, batch_idx):
            loss = self.loss(batch)
            self.log("val_loss", loss, sync_dist=True, rank_zero_only=True)

    trainer = L.Trainer(strategy="ddp", callbacks=[ModelCheckpoint(monitor="val_loss")])
    ```

    ## Use instead
    ```python
            self.log("val_loss", loss, sync_dist=True)
    ```
    Log a monitored metric on every rank, reduced (`sync_dist=True` or a `torchmetrics`
    metric); keep `rank_zero_only=True` for metrics no callback reads.

    ## Fix safety
    No automatic fix: dropping `rank_zero_only` adds a collective per log call, and a
    log under a rank test needs the test moved, which is the author's call.

    ## References
    - Lightning 2.6.6: `LightningModule.log(rank_zero_only=...)` docstring;
      `trainer/connectors/logger_connector/result.py` (`_Sync`: no reduction with
      `rank_zero_only`); `callbacks/model_checkpoint.py` (`_save_topk_checkpoint`,
      `file_exists`, `_get_metric_interpolated_filepath_name`);
      `callbacks/early_stopping.py` (`_validate_condition_metric`,
      `_run_early_stopping_check`).
    - Lightning issues #19045 (hang with `rank_zero_only=True` and a monitored metric),
      #15852 and #19072 (metric logged on rank 0 only).
    """

    code = "DDP230"
    reads_libcst = False
    name = "monitored-metric-rank-local"
    summary = "a metric a callback monitors is logged rank-locally"
    severity = Severity.ERROR
    default_enabled = False
    needs_peers = True
    needles = ("ModelCheckpoint", "EarlyStopping")
    more_needles = ((".log(", ".log_dict("),)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        monitors = LightningMonitors(ctx.analysis)
        if not monitors.monitors:
            return
        for key in sorted({log.key for log in monitors.logs}):
            monitor = monitors.monitored(key)
            if monitor is None:
                continue
            for log in monitors.rank_local(key):
                if log.on_some_ranks and _syncs(log.call):
                    continue  # DDP202's root cause: that sync hangs before any callback
                yield ctx.ast_finding(
                    self, log.call, _message(log, monitor), summary=_summary(log, monitor)
                )


def _syncs(call: ast.Call) -> bool:
    """``sync_dist=True`` without ``rank_zero_only=True``: the log reduces."""
    given = {k.arg: k.value for k in call.keywords}

    def true(name: str) -> bool:
        value = given.get(name)
        return isinstance(value, ast.Constant) and value.value is True

    return true("sync_dist") and not true("rank_zero_only")


def _message(log: RankLocalLog, monitor: Monitor) -> str:
    where = f"`{monitor.callback}(monitor={log.key!r})` (line {monitor.line})"
    if log.on_some_ranks:
        return (
            f"`{log.key}` is monitored by {where} but logged on some ranks only, because "
            f"{log.reason}: the callback runs on every rank, and on the others the key is "
            "missing (ModelCheckpoint raises `could not find the monitored key`, "
            "EarlyStopping raises or skips the stop decision rank 0 waits in)"
        )
    if monitor.callback == "EarlyStopping":
        return (
            f"`{log.key}` is monitored by {where} but each rank keeps its own value, "
            f"because {log.reason}: every rank decides from its own unreduced value, and "
            "training stops as soon as one rank's value says so; log it reduced, on every rank"
        )
    return (
        f"`{log.key}` is monitored by {where} but each rank keeps its own value, because "
        f"{log.reason}: each rank ranks checkpoints by its own value (different "
        "`best_model_path` and top-k per rank), and where the file name formats the "
        "metric the ranks run different numbers of the callback's collectives and hang "
        "(Lightning #19045); log it reduced, on every rank"
    )


def _summary(log: RankLocalLog, monitor: Monitor) -> str:
    if log.on_some_ranks:
        return f"monitored `{log.key}` logged on some ranks only ({monitor.callback})"
    return f"monitored `{log.key}` logged with `rank_zero_only=True` ({monitor.callback})"
