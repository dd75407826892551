"""Which YAML documents are training configs (Hydra / NeMo / Lightning shape).

A GitHub workflow, a docker-compose file, a Kubernetes manifest or a pre-commit config
is not, even when it mentions a trainer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ddplint.config.openmmlab import looks_like_mmcv1

#: Keyword arguments of ``lightning.Trainer`` that training configs set.
TRAINER_ARGS = frozenset(
    {
        "accelerator",
        "strategy",
        "devices",
        "gpus",
        "num_nodes",
        "precision",
        "max_epochs",
        "min_epochs",
        "max_steps",
        "max_time",
        "sync_batchnorm",
        "accumulate_grad_batches",
        "gradient_clip_val",
        "val_check_interval",
        "check_val_every_n_epoch",
        "log_every_n_steps",
        "use_distributed_sampler",
        "replace_sampler_ddp",
        "num_sanity_val_steps",
        "limit_train_batches",
        "limit_val_batches",
        "enable_checkpointing",
        "callbacks",
        "logger",
        "plugins",
        "benchmark",
        "deterministic",
    }
)
#: Sections of a NeMo / Hydra ``model:`` block that only training configs have.
MODEL_SECTIONS = frozenset(
    {"train_ds", "validation_ds", "test_ds", "encoder", "decoder", "preprocessor", "data", "optim"}
)
#: Top-level shapes of well-known YAML files that are not training configs.
FOREIGN_SHAPES: tuple[frozenset[object], ...] = (
    frozenset({"jobs", "on"}),  # GitHub Actions workflow
    frozenset({"jobs", True}),  # ``on:`` read as a YAML 1.1 boolean by some tools
    frozenset({"services"}),  # docker-compose
    frozenset({"apiVersion", "kind"}),  # Kubernetes manifest
    frozenset({"repos"}),  # .pre-commit-config.yaml
    frozenset({"stages", "image"}),  # GitLab CI
)
#: Keys of a Lhotse data section (icefall / k2 datamodules): with a stated
#: ``world_size`` such a file is a training config without a Lightning trainer.
LHOTSE_DATA_KEYS = frozenset({"bucketing_sampler", "num_buckets", "max_duration", "manifest_dir"})
LHOTSE_DATA_SECTIONS = ("dataset", "data", "datamodule")
#: Cheap text check before loading a file at all.
TRAINING_NEEDLES = (b"trainer", b"model", b"exp_manager", b"bucketing_sampler", b"manifest_dir")


def _is_mapping_with(value: Any, keys: frozenset[str]) -> bool:
    return isinstance(value, Mapping) and any(k in value for k in keys)


def is_training_config(root: Any) -> bool:
    """A mapping with a Lightning ``trainer:`` section, a ``model:`` with dataset /
    encoder sections, a NeMo ``exp_manager:``, an OpenMMLab ``model: {type: ...}`` with
    mmcv 1.x runner settings, or a stated ``world_size`` with a Lhotse data section; and
    not a known foreign shape."""
    if not isinstance(root, Mapping):
        return False
    keys = set(root)
    if any(shape <= keys for shape in FOREIGN_SHAPES):
        return False
    if _is_mapping_with(root.get("trainer"), TRAINER_ARGS):
        return True
    model = root.get("model")
    if _is_mapping_with(model, MODEL_SECTIONS) or (
        isinstance(model, Mapping) and any(str(k).endswith("_ds") for k in model)
    ):
        return True
    if isinstance(root.get("exp_manager"), Mapping):
        return True
    if _is_mapping_with(model, frozenset({"type"})) and looks_like_mmcv1([str(k) for k in keys]):
        return True  # an OpenMMLab (mmcv 1.x) config written as YAML
    return "world_size" in root and any(
        _is_mapping_with(root.get(section), LHOTSE_DATA_KEYS) for section in LHOTSE_DATA_SECTIONS
    )
