"""DDP616: a config's callback monitors a metric the code logs rank-locally."""

from __future__ import annotations

from collections.abc import Iterator

from ddplint.code_facts import METRIC_LOGS
from ddplint.config.context import ConfigContext
from ddplint.config.monitors import monitored_metrics
from ddplint.finding import Finding, Severity
from ddplint.rule import ConfigRule


class MonitorRankLocalMetric(ConfigRule):
    """
    ## What it does
    Flags the `monitor` of a `ModelCheckpoint` or `EarlyStopping` in a YAML config
    (LightningCLI `class_path` / `init_args`, Hydra `_target_`, in `trainer.callbacks`
    or a callbacks group file; NeMo `exp_manager.checkpoint_callback_params` and, when
    enabled, `early_stopping_callback_params`) when every literal
    `self.log` / `self.log_dict` of that metric in the repository's Python code leaves
    it rank-local: with `rank_zero_only=True` (Lightning then reduces nothing), or on
    some ranks only (under a test on the rank, in a `@rank_zero_only` function, or in a
    method called only from such places). The code side is DDP230's question, asked by
    the analysis core; DDP230 itself flags the callbacks made in the same Python module.

    Not flagged: a metric also logged on every rank somewhere in the code (which model
    the config trains cannot be told), a value that already agrees (the step, epoch or
    learning rate, an earlier `all_reduce` / `broadcast` of it, a `torchmetrics`
    metric), a config whose trainer runs one process, test files. DDP605 is the
    related rule for a checkpoint *file name* formatted from a metric logged without
    `sync_dist`.

    Preview while its precision is measured.

    ## Why is this bad?
    The callbacks run on every rank and read the monitored key from each rank's own
    `trainer.callback_metrics`. Logged on rank 0 only, the key is missing elsewhere:
    `ModelCheckpoint` raises "could not find the monitored key" there and
    `EarlyStopping` raises or skips the stop decision that rank 0 waits in. Logged with
    `rank_zero_only=True`, each rank ranks checkpoints by its own value and runs a
    different number of the callback's `reduce_boolean_decision` collectives: the job
    hangs (Lightning issue #19045).

    ## Example
    ```yaml
    exp_manager:
      checkpoint_callback_params:
        monitor: val_wer   # logged with self.log("val_wer", wer, rank_zero_only=True)
    ```

    ## Use instead
    Log the metric on every rank, reduced (`sync_dist=True` or a `torchmetrics`
    metric), or monitor a metric that is.

    ## Fix safety
    No automatic fix: the change belongs in the Python code.

    ## References
    - Lightning 2.6.6: `LightningModule.log(rank_zero_only=...)` docstring;
      `callbacks/model_checkpoint.py`, `callbacks/early_stopping.py`.
    - Lightning issues #19045, #15852, #19072.
    """

    code = "DDP616"
    name = "monitor-rank-local-metric"
    summary = "a callback in the config monitors a metric the code logs rank-locally"
    severity = Severity.ERROR
    default_enabled = False
    needles = ("monitor",)
    code_facts = (METRIC_LOGS,)

    def check(self, ctx: ConfigContext) -> Iterator[Finding]:
        for doc in ctx.documents:
            if doc.mapping(("trainer",)) is not None and ctx.world(doc).single:
                continue
            for monitored in monitored_metrics(doc):
                logs = ctx.code_facts.logs_of(monitored.metric)
                if not logs or any(log.rank_local is None for log in logs):
                    continue
                first = logs[0]
                message = (
                    f"makes `{monitored.callback}` monitor `{monitored.metric}`, which every "
                    f"log of it in the code leaves rank-local ({first.where}: "
                    f"{first.rank_local}): the callback runs on every rank, where the key is "
                    "missing or holds that rank's own value, so ranks decide differently and "
                    "hang or raise"
                )
                summary = f"monitors `{monitored.metric}`, logged rank-locally ({first.where})"
                yield ctx.finding(self, doc, monitored.entry, message, None, summary=summary)
