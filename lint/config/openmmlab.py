"""OpenMMLab configs (mmcv 1.x / mmengine; Python or YAML): whether they build
SyncBatchNorm, whether the run they describe is one process, and which runner
turns SyncBatchNorm back into BatchNorm by itself.

A ``norm_cfg`` of ``type='SyncBN'`` builds ``torch.nn.SyncBatchNorm``;
``type='MMSyncBN'`` builds mmcv's own ``mmcv.ops.SyncBatchNorm``. Without a process
group, mmengine's runner reverts both to BatchNorm ("Distributed training is not used,
all SyncBatchNorm (SyncBN) layers in the model will be automatically reverted"), and
torch 2.0+ (pytorch PR 89706) runs ``nn.SyncBatchNorm`` as BatchNorm. An mmcv 1.x
runner (``MMDataParallel``) does neither: the first training forward asks for the
default process group and fails.
"""

from __future__ import annotations

from collections.abc import Collection

from ddplint.code.torch_floor import at_least

#: ``norm_cfg`` types that synchronise statistics across ranks.
SYNC_NORM_TYPES = frozenset({"SyncBN", "MMSyncBN"})
#: Top-level names only mmengine-era configs use (its runner reverts SyncBN itself).
MMENGINE_NAMES = frozenset(
    {"default_scope", "train_dataloader", "train_cfg", "optim_wrapper", "env_cfg", "val_evaluator"}
)
#: Top-level names of mmcv 1.x configs.
MMCV1_NAMES = frozenset(
    {"optimizer_config", "lr_config", "log_config", "workflow", "runner", "dist_params"}
)
#: torch where ``nn.SyncBatchNorm`` without a process group runs as BatchNorm.
TORCH_FALLBACK_SINCE = (2, 0)


def looks_like_mmcv1(names: Collection[str]) -> bool:
    """An mmcv 1.x config: a ``model`` and mmcv 1.x runner settings (or ``gpu_ids``, which
    mmengine dropped), none of mmengine's. A config whose runner settings are all in its
    ``_base_`` files is not known and not reported."""
    found = set(names)
    return (
        "model" in found
        and bool((MMCV1_NAMES | {"gpu_ids"}) & found)
        and not (MMENGINE_NAMES & found)
    )


def single_process(launcher: object, gpu_ids: int | None) -> str | None:
    """Why the config describes one process (``launcher = 'none'``, one ``gpu_ids``
    entry), or None. Another launcher (``pytorch``, ``slurm``) starts several."""
    if isinstance(launcher, str):
        return "launcher `none`" if launcher.strip().lower() == "none" else None
    if gpu_ids == 1:
        return "one entry in `gpu_ids`"
    return None


def failing_norm(norm_type: str, torch_version: str | None) -> str | None:
    """Under which torch the norm fails without a process group, for messages; None
    when the project's torch floor already falls back (``SyncBN`` on torch 2.0+)."""
    if norm_type == "MMSyncBN":
        return "on any torch (mmcv's SyncBatchNorm always all-reduces in training)"
    if torch_version is not None and at_least(torch_version, TORCH_FALLBACK_SINCE):
        return None
    admitted = (
        f"the project's torch floor {torch_version}" if torch_version else "an unknown torch floor"
    )
    return f"on torch < 2.0 ({admitted})"


def message(norm: str, why_single: str, under: str) -> str:
    """The shared explanation of DDP609 / DDP610."""
    return (
        f"builds `{norm}` while the config runs one process ({why_single}) with an mmcv 1.x "
        f"runner: the first training forward asks for the default process group and fails "
        f"with `Default process group has not been initialized` {under}; mmengine's runner "
        "and torch 2.0+ fall back to BatchNorm, mmcv 1.x does not"
    )
