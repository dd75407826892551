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
#: Every keyword argument of ``lightning.Trainer`` in 2.x, those 1.x took and 2.x
#: dropped, and the keys Hydra's ``instantiate`` reads: a ``trainer:`` section holding a
#: nested section under any other key is not passed to Lightning's ``Trainer`` as written
#: (it would raise ``TypeError`` there), so the project's own trainer reads it.
LIGHTNING_TRAINER_KEYS = TRAINER_ARGS | frozenset(
    {
        "barebones",
        "default_root_dir",
        "detect_anomaly",
        "enable_autolog_hparams",
        "enable_model_summary",
        "enable_progress_bar",
        "fast_dev_run",
        "gradient_clip_algorithm",
        "inference_mode",
        "limit_predict_batches",
        "limit_test_batches",
        "min_steps",
        "model_registry",
        "overfit_batches",
        "profiler",
        "reload_dataloaders_every_n_epochs",
        # Lightning 1.x
        "amp_backend",
        "amp_level",
        "auto_lr_find",
        "auto_scale_batch_size",
        "auto_select_gpus",
        "checkpoint_callback",
        "distributed_backend",
        "flush_logs_every_n_steps",
        "ipus",
        "log_gpu_memory",
        "move_metrics_to_cpu",
        "multiple_trainloader_mode",
        "num_processes",
        "prepare_data_per_node",
        "process_position",
        "progress_bar_refresh_rate",
        "reload_dataloaders_every_epoch",
        "resume_from_checkpoint",
        "stochastic_weight_avg",
        "terminate_on_nan",
        "tpu_cores",
        "track_grad_norm",
        "truncated_bptt_steps",
        "weights_save_path",
        "weights_summary",
        # Hydra
        "_target_",
        "_partial_",
        "_convert_",
        "_recursive_",
        "_args_",
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


def own_trainer_sections(trainer: Mapping[Any, Any]) -> list[str]:
    """The keys of a ``trainer:`` section that hold a nested section and are no parameter
    of Lightning's ``Trainer`` (``checkpoint: {save_dir: ...}``, ``distributed: {...}``):
    the marks of a project's own trainer class."""
    return [
        str(key)
        for key, value in trainer.items()
        if isinstance(value, Mapping) and str(key) not in LIGHTNING_TRAINER_KEYS
    ]


def lightning_trainer(root: Any) -> Mapping[Any, Any] | None:
    """The document's ``trainer:`` section when Lightning's ``Trainer`` can be what reads
    it (Lightning's defaults, such as ``num_nodes: 1``, then apply); None when there is
    none or when it holds sections only a project's own trainer takes."""
    trainer = root.get("trainer") if isinstance(root, Mapping) else None
    if not isinstance(trainer, Mapping) or own_trainer_sections(trainer):
        return None
    return trainer
