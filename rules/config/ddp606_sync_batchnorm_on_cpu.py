"""DDP606: ``sync_batchnorm: true`` on CPU."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from ddplint.config.context import ConfigContext
from ddplint.config.document import ConfigDocument
from ddplint.config.nemo import (
    ALWAYS_BATCHNORM,
    CONV_NORM_CLASSES,
    JASPER_CLASSES,
    batchnorm_modules,
    class_name,
    names_nemo_modules,
)
from ddplint.config.world_size import on_cpu
from ddplint.finding import Finding, Severity
from ddplint.rule import ConfigRule

SYNC_KEY = ("trainer", "sync_batchnorm")
#: Lightning strategies that convert BatchNorm to SyncBatchNorm when fitting.
LAYER_SYNC_STRATEGIES = ("ddp", "fsdp")
LAYER_SYNC_CLASSES = frozenset({"DDPStrategy", "FSDPStrategy", "NLPDDPStrategy"})


def _strategy_syncs_layers(ctx: ConfigContext, doc: ConfigDocument) -> str | None:
    """Why Lightning will apply SyncBatchNorm here, or None."""
    strategy = doc.value(("trainer", "strategy"))
    if isinstance(strategy, str) and strategy.lower().startswith(LAYER_SYNC_STRATEGIES):
        return f"`strategy: {strategy}`"
    if isinstance(strategy, Mapping):
        target = doc.value(("trainer", "strategy", "_target_"))
        if class_name(target) in LAYER_SYNC_CLASSES:
            return f"a `{class_name(target)}`"
    world = ctx.world(doc)
    if world.processes is not None and world.processes > 1:
        return f"{world.describe} (Lightning picks DDP)"
    return None


class SyncBatchNormOnCpu(ConfigRule):
    """
    ## What it does
    Flags `trainer.sync_batchnorm: true` with `trainer.accelerator: cpu` when Lightning
    will convert the model's BatchNorm layers (a DDP or FSDP strategy, or more than one
    process) and the config builds BatchNorm layers (NeMo Conformer / Squeezeformer
    encoders with `conv_norm_type: batch_norm`, Jasper-block encoders, ECAPA-TDNN, a
    `torch.nn.BatchNorm*` target). When the config names no NeMo module, so its layers
    are not known (a LightningCLI `model: class_path:`, a project's own `_target_`), the
    switch itself is the evidence: one asks for SyncBatchNorm to convert BatchNorm. A
    NeMo config whose modules hold no BatchNorm (wav2vec, layer-norm Conformers) is
    quiet.

    ## Why is this bad?
    Lightning replaces every BatchNorm with `torch.nn.SyncBatchNorm` when fitting with
    DDP, and `DistributedDataParallel` refuses such a model on CPU:
    `ValueError: SyncBatchNorm layers only work with GPU modules` (checked with
    Lightning 2.6.6 and torch 2.13, `devices: 1, strategy: ddp` included; without a DDP
    strategy one CPU process trains). SyncBatchNorm's own training forward also refuses
    CPU tensors. The job fails before the first step, after the queue wait.

    ## Example
    ```yaml
    trainer:
      accelerator: cpu
      devices: 2
      strategy: ddp
      sync_batchnorm: true
    ```

    ## Use instead
    ```yaml
    trainer:
      accelerator: cpu
      devices: 2
      strategy: ddp
      sync_batchnorm: false
    ```
    or train on GPUs.

    ## Fix safety
    No automatic fix: whether the config is meant for GPUs (wrong accelerator) or for
    CPU (wrong `sync_batchnorm`) is the author's call.

    ## References
    - PyTorch `torch.nn.SyncBatchNorm.forward`; Lightning `DDPStrategy` (`_layer_sync`).
    """

    code = "DDP606"
    name = "sync-batchnorm-on-cpu"
    summary = "`sync_batchnorm: true` with `accelerator: cpu` (SyncBatchNorm raises on CPU)"
    severity = Severity.ERROR
    needles = ("sync_batchnorm",)

    def check(self, ctx: ConfigContext) -> Iterator[Finding]:
        for doc in ctx.configs:
            if doc.value(SYNC_KEY) is not True:
                continue
            if not on_cpu(doc):
                continue
            why = _strategy_syncs_layers(ctx, doc)
            if why is None:
                continue
            layers = batchnorm_modules(doc, CONV_NORM_CLASSES | JASPER_CLASSES | ALWAYS_BATCHNORM)
            if layers:
                shown = ", ".join(f"`{m.where}` ({m.class_name})" for m in layers[:2])
                held = f"the BatchNorm layers of {shown}"
            elif names_nemo_modules(doc):
                continue  # NeMo modules whose layers are known: none is BatchNorm
            else:
                held = "the model's BatchNorm layers (asking for SyncBatchNorm says it has some)"
            found = doc.entry(SYNC_KEY)
            assert found is not None
            message = (
                f"is true with `accelerator: cpu` and {why}: Lightning turns {held} into "
                "SyncBatchNorm, and DDP then fails at set-up with "
                "`ValueError: SyncBatchNorm layers only work with GPU modules`"
            )
            summary = "is true on CPU with DDP: SyncBatchNorm fails at set-up"
            yield ctx.finding(self, doc, found, message, summary=summary)
