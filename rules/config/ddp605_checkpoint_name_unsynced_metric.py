"""DDP605: a checkpoint file name formatted from a metric each rank computes alone."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from ddplint.code_facts import METRIC_LOGS
from ddplint.config.checkpoint_names import metrics, without_group
from ddplint.config.context import ConfigContext
from ddplint.config.document import ConfigDocument, Entry, KeyPath
from ddplint.config.edits import replace_value
from ddplint.config.nemo import class_name, is_megatron
from ddplint.finding import Applicability, Finding, Fix, Severity
from ddplint.rule import ConfigRule

NEMO_PARAMS = ("exp_manager", "checkpoint_callback_params")


@dataclass(frozen=True)
class CheckpointName:
    """Where a checkpoint file-name template is set; ``nemo``: by NeMo's exp_manager."""

    path: KeyPath
    nemo: bool


def checkpoint_names(doc: ConfigDocument) -> list[CheckpointName]:
    """NeMo's ``exp_manager.checkpoint_callback_params.filename`` and the ``filename`` of
    every ``ModelCheckpoint`` in ``trainer.callbacks`` (LightningCLI / Hydra forms)."""
    names = []
    params = doc.mapping(NEMO_PARAMS)
    enabled = doc.value(("exp_manager", "create_checkpoint_callback")) is not False
    if params is not None and "filename" in params and enabled:
        names.append(CheckpointName((*NEMO_PARAMS, "filename"), True))
    callbacks = doc.value(("trainer", "callbacks"))
    for index, callback in enumerate(callbacks if isinstance(callbacks, list) else []):
        if not isinstance(callback, Mapping):
            continue
        base = ("trainer", "callbacks", index)
        target = doc.value((*base, "class_path")) if "class_path" in callback else None
        target = target or doc.value((*base, "_target_"))
        if (class_name(target) or "").endswith("ModelCheckpoint"):
            for arguments in ((*base, "init_args"), base):
                if doc.entry((*arguments, "filename")) is not None:
                    names.append(CheckpointName((*arguments, "filename"), False))
                    break
    return names


def _is_asr_model(doc: ConfigDocument) -> bool:
    """NeMo ASR models (CTC, RNNT, hybrid, AED) have a tokenizer or labels and a decoder;
    their ``on_validation_epoch_end`` passes ``sync_metrics=True``."""
    model = doc.mapping(("model",))
    return model is not None and "decoder" in model and ("tokenizer" in model or "labels" in model)


class CheckpointNameUnsyncedMetric(ConfigRule):
    """
    ## What it does
    Flags a checkpoint file-name template (NeMo
    `exp_manager.checkpoint_callback_params.filename`, or the `filename` of a
    `ModelCheckpoint` in `trainer.callbacks`) that formats a logged metric
    (`{val_loss:.3f}`, also through `${...monitor}`) in a multi-device config, when that
    metric is logged without `sync_dist=True`: according to the Python code of the same
    repository (every literal `self.log` / `self.log_dict` of that name leaves it off;
    test files do not count), or, when no code there logs it, because NeMo's `ModelPT`
    logs validation metrics without `sync_dist` (ASR models excepted, which sync them).
    When the code logs it both ways the rule cannot tell which model the config trains,
    and stays quiet.
    Megatron-based configs are not flagged: those models average metrics over the
    data-parallel ranks themselves.

    ## Why is this bad?
    Each rank formats the name from its own value of the metric, so the ranks disagree
    about the checkpoint path. NeMo's checkpoint callback then guards a barrier with a
    per-rank `os.path.exists` on that path: some ranks wait in the barrier, the others
    do not (NeMo #13739, fixed in PR 14380); with Lightning's own callback the ranks
    keep different "best model" paths.

    ## Example
    ```yaml
    exp_manager:
      checkpoint_callback_params:
        monitor: val_loss
        filename: '${name}--{val_loss:.3f}-{step}'
    ```

    ## Use instead
    ```yaml
    exp_manager:
      checkpoint_callback_params:
        monitor: val_loss
        filename: '${name}-{step}'
    ```
    or log the metric with `self.log("val_loss", ..., sync_dist=True)`.

    ## Fix safety
    The fix removes the metric's `{...}` group (and the separator before it) from the
    template. It is unsafe: checkpoint names change, and tools that parse them may
    depend on the metric being there. The monitored metric still picks the best
    checkpoints.

    ## References
    - Lightning docs: `LightningModule.log(sync_dist=...)`, `ModelCheckpoint(filename=...)`.
    - NeMo issue #13739, PR 14380; `ModelPT.on_validation_epoch_end(sync_metrics=False)`.
    """

    code = "DDP605"
    name = "checkpoint-name-unsynced-metric"
    summary = "Checkpoint file name formatted from a metric logged without sync_dist"
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE
    needles = ("checkpoint_callback_params", "ModelCheckpoint")
    code_facts = (METRIC_LOGS,)

    def check(self, ctx: ConfigContext) -> Iterator[Finding]:
        for doc in ctx.configs:
            if ctx.world(doc).single or is_megatron(doc):
                continue
            for name in checkpoint_names(doc):
                template = doc.value(name.path)
                if not isinstance(template, str):
                    continue
                for metric in metrics(template):
                    reason = self._unsynced(ctx, doc, metric, name.nemo)
                    if reason is None:
                        continue
                    found = doc.entry(name.path)
                    assert found is not None
                    message = (
                        f"formats `{metric}` into the checkpoint name, and `{metric}` {reason}: "
                        f"each rank names the checkpoint from its own value "
                        f"({ctx.world(doc).describe}), and NeMo's checkpoint callback then "
                        "waits in a barrier on some ranks only"
                    )
                    fix = self._fix(ctx, doc, found, template, metric)
                    summary = f"uses `{metric}`, which differs per rank"
                    yield ctx.finding(self, doc, found, message, fix, summary=summary)

    @staticmethod
    def _unsynced(ctx: ConfigContext, doc: ConfigDocument, metric: str, nemo: bool) -> str | None:
        """Why ``metric`` differs per rank, or None when it does not or cannot be told."""
        logs = ctx.code_facts.logs_of(metric)
        literal = [log for log in logs if log.sync_dist is not None]
        if literal:
            if all(log.sync_dist is False for log in literal):
                return f"is logged without `sync_dist=True` ({literal[0].where})"
            return None  # synced somewhere: which model this config trains is not known
        if not logs and nemo and not _is_asr_model(doc):
            return (
                "is logged without `sync_dist` by NeMo's `ModelPT.on_validation_epoch_end` "
                "(its default; none of the project's Python files read here logs it with "
                "`sync_dist=True`)"
            )
        return None

    @staticmethod
    def _fix(
        ctx: ConfigContext, doc: ConfigDocument, found: Entry, resolved: str, metric: str
    ) -> Fix | None:
        text = doc.value_text(found)
        if not isinstance(found.value, str) or not text:
            return None
        shorter = without_group(str(found.value), resolved, metric)
        if shorter is None:
            return None
        if text[0] == "'":
            token = "'" + shorter.replace("'", "''") + "'"
        elif text[0] == '"':
            token = '"' + shorter.replace("\\", "\\\\").replace('"', '\\"') + '"'
        else:
            token = shorter
        return ctx.checked_fix(
            doc,
            [replace_value(doc, found, token)],
            {found.path: shorter},
            Applicability.UNSAFE,
            f"Remove `{metric}` from the checkpoint file name",
        )
