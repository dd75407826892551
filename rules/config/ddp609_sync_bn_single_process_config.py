"""DDP609: an OpenMMLab YAML config that builds SyncBN for a one-process mmcv 1.x run."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from ddplint.config.context import ConfigContext
from ddplint.config.document import ConfigDocument, Entry
from ddplint.config.openmmlab import (
    SYNC_NORM_TYPES,
    failing_norm,
    looks_like_mmcv1,
    message,
    single_process,
)
from ddplint.finding import Finding, Severity
from ddplint.rule import ConfigRule


def _gpu_count(doc: ConfigDocument) -> int | None:
    value = doc.value(("gpu_ids",))
    return len(value) if isinstance(value, list) else None


def _sync_norms(doc: ConfigDocument) -> Iterator[tuple[Entry, str]]:
    """Each ``type: SyncBN`` entry (``norm_cfg: {type: SyncBN}``) of the document."""
    for path, mapping in doc.mappings():
        if not isinstance(mapping, Mapping) or "type" not in mapping:
            continue
        norm = doc.value((*path, "type"))
        if isinstance(norm, str) and norm in SYNC_NORM_TYPES:
            found = doc.entry((*path, "type"))
            if found is not None:
                yield found, norm


class SyncBatchNormSingleProcessConfig(ConfigRule):
    """
    ## What it does
    Flags `type: SyncBN` / `type: MMSyncBN` (a `norm_cfg`) in an mmcv 1.x style YAML
    config (`model:` with runner settings such as `optimizer_config`, `lr_config`,
    `workflow`, `gpu_ids`; no mmengine keys) that runs one process: `launcher: none`,
    or a single `gpu_ids` entry. `SyncBN` is flagged only when the project's torch
    floor is below 2.0 or unknown; `MMSyncBN` on any torch. Python configs are DDP610.

    ## Why is this bad?
    With an mmcv 1.x runner (`MMDataParallel`), nothing initialises a process group for
    one process, and a SyncBatchNorm in training mode asks for it: the first forward
    fails with `RuntimeError: Default process group has not been initialized`. torch
    2.0+ runs `nn.SyncBatchNorm` as BatchNorm when no group exists, and mmengine's runner
    reverts SyncBN to BatchNorm itself, so newer stacks train (mmcv's own `MMSyncBN`
    still fails outside mmengine).

    ## Example
    ```yaml
    model:
      type: EncoderDecoder
      backbone:
        norm_cfg: {type: SyncBN, requires_grad: true}
    optimizer_config: {}
    gpu_ids: [0]
    ```

    ## Use instead
    ```yaml
    model:
      type: EncoderDecoder
      backbone:
        norm_cfg: {type: BN, requires_grad: true}
    ```
    or launch with `--launcher pytorch` (`torchrun`), even on one GPU.

    ## Fix safety
    No automatic fix: whether the run should be distributed is the author's call.

    ## References
    - pytorch/pytorch#63662 and PR 89706 (SyncBatchNorm falls back to BatchNorm, torch 2.0).
    - mmengine `Runner.wrap_model` / `revert_sync_batchnorm`.
    - open-mmlab/mmdetection3d#255 ("How to disable SyncBN for single GPU training").
    """

    code = "DDP609"
    name = "sync-bn-single-process-config"
    summary = "SyncBN in an mmcv 1.x config that runs one process"
    severity = Severity.ERROR
    needles = ("SyncBN",)

    def check(self, ctx: ConfigContext) -> Iterator[Finding]:
        for doc in ctx.configs:
            root = doc.mapping(())
            if root is None or not looks_like_mmcv1([str(k) for k in root]):
                continue
            why_single = single_process(doc.value(("launcher",)), _gpu_count(doc))
            if why_single is None:
                continue
            for found, norm in _sync_norms(doc):
                under = failing_norm(norm, ctx.options.torch_version)
                if under is None:
                    continue
                yield ctx.finding(
                    self,
                    doc,
                    found,
                    message(norm, why_single, under),
                    summary=f"is {norm} in a one-process mmcv 1.x run: no process group",
                )
