"""DDP602: BatchNorm encoder trained on several devices without ``sync_batchnorm``."""

from __future__ import annotations

from collections.abc import Iterator

from ddplint.config.context import ConfigContext
from ddplint.config.edits import bool_text, set_or_add
from ddplint.config.nemo import batchnorm_modules
from ddplint.config.values import ABSENT
from ddplint.config.world_size import on_cpu
from ddplint.finding import Applicability, Finding, Severity
from ddplint.rule import ConfigRule

TRAINER = ("trainer",)
SYNC_KEY = ("trainer", "sync_batchnorm")


class BatchNormWithoutSync(ConfigRule):
    """
    ## What it does
    Flags a training config whose encoder is a NeMo Conformer / FastConformer (or
    Squeezeformer) with `conv_norm_type: batch_norm` (the default) that runs on more
    than one device (`trainer.devices` x `trainer.num_nodes` above 1, or `devices: -1`
    / `auto` on GPUs) while `trainer.sync_batchnorm` is false or not set.

    ## Why is this bad?
    Without `sync_batchnorm` every rank normalises with the statistics of its own
    per-GPU batch. Speech batches are small and padded to different lengths, so the
    statistics are noisy and differ between ranks; training is silently worse or
    unstable. Nothing fails: this is a quality warning, not a hang. NeMo's own
    Conformer configs set `sync_batchnorm: true`.

    ## Example
    ```yaml
    model:
      encoder:
        _target_: nemo.collections.asr.modules.ConformerEncoder
    trainer:
      devices: 8
      strategy: ddp
    ```

    ## Use instead
    ```yaml
    trainer:
      devices: 8
      strategy: ddp
      sync_batchnorm: true
    ```

    ## Fix safety
    The fix sets (or adds) `trainer.sync_batchnorm: true`. It is unsafe: it changes
    training numerics and adds a collective per BatchNorm layer per step. On CPU
    SyncBatchNorm raises (DDP606), so CPU configs are not flagged.

    ## References
    - Lightning docs: `Trainer(sync_batchnorm=...)`; PyTorch `nn.SyncBatchNorm`.
    - NeMo `ConformerEncoder(conv_norm_type="batch_norm")`.
    """

    code = "DDP602"
    name = "batchnorm-without-sync"
    summary = "BatchNorm Conformer encoder on several devices without `sync_batchnorm`"
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE
    needles = ("ConformerEncoder", "SpectrogramConformer", "SqueezeformerEncoder")

    def check(self, ctx: ConfigContext) -> Iterator[Finding]:
        for doc in ctx.configs:
            world = ctx.world(doc)
            if world.single:
                continue
            if on_cpu(doc):
                continue
            sync = doc.value(SYNC_KEY)
            if sync is not ABSENT and sync is not False:
                continue
            encoders = batchnorm_modules(doc)
            if not encoders:
                continue
            found = doc.entry(SYNC_KEY) or doc.entry(TRAINER)
            assert found is not None
            fix = ctx.checked_fix(
                doc,
                [
                    set_or_add(
                        doc, TRAINER, "sync_batchnorm", bool_text(doc, doc.entry(SYNC_KEY), True)
                    )
                ],
                {SYNC_KEY: True},
                Applicability.UNSAFE,
                "Set `trainer.sync_batchnorm: true`",
            )
            shown = ", ".join(f"`{m.where}` ({m.class_name})" for m in encoders[:2])
            state = "false" if sync is False else "not set"
            message = (
                f"is {state} while {shown} trains BatchNorm layers (`conv_norm_type: "
                f"batch_norm`, NeMo's default) with {world.describe}: each rank normalises "
                "with its own batch statistics (silent: no error, noisier and rank-dependent "
                "normalisation)"
            )
            on = f"{world.processes} processes" if world.processes else "several processes"
            summary = f"{'is false' if sync is False else 'not set'} with BatchNorm on {on}"
            yield ctx.finding(self, doc, found, message, fix, key_path=SYNC_KEY, summary=summary)
