"""What a collective is by its name alone, without LibCST: the kinds of the
``torch.distributed`` functions and of the framework methods (by what the receiver's
name says it is). The LibCST catalogue (``catalogue``) and the project summaries
(``ast``) both read calls through these."""

from __future__ import annotations

from dataclasses import dataclass

from ddplint.analysis.api import (
    CHECKPOINT_FUNCTIONS,
    FSDP_COLLECTIVES,
    GROUP_CREATORS,
    TORCH_COLLECTIVES,
    TORCH_DIST_MODULES,
)
from ddplint.analysis.api import (
    DEVICE_MESH_CREATORS as DEVICE_MESH_CREATORS,
)

# Framework methods that communicate, keyed by what the receiver's last name says it is.
_STRATEGY_METHODS = frozenset({"barrier", "broadcast", "reduce", "reduce_boolean_decision"})
_TRAINER_METHODS = frozenset({"save_checkpoint"})
_FABRIC_METHODS = frozenset({"barrier", "broadcast", "all_reduce", "all_gather", "save"})
_ACCELERATE_METHODS = frozenset(
    {
        "wait_for_everyone",
        "gather",
        "gather_for_metrics",
        "reduce",
        "save_state",
        "pad_across_processes",
    }
)
_DEEPSPEED_ENGINE_METHODS = frozenset({"save_checkpoint"})
_LIGHTNING_MODULE_METHODS = frozenset({"all_gather"})
_LOG_METHODS = frozenset({"log", "log_dict"})
#: Operations after which every rank holds the same value.
_UNIFORM_OPS = frozenset(
    {
        "broadcast",
        "broadcast_object_list",
        "all_reduce",
        "all_gather",
        "all_gather_object",
        "all_gather_into_tensor",
        "reduce_boolean_decision",
        "gather_for_metrics",
    }
)
#: Receiver kind and method of the framework calls that save a checkpoint.
_CHECKPOINT_METHODS = frozenset(
    {
        ("trainer", "save_checkpoint"),
        ("accelerator", "save_state"),
        ("engine", "save_checkpoint"),
        ("fabric", "save"),
    }
)


def _receiver_kind(receiver: str) -> str | None:
    """What a receiver's name says it is: ``self.trainer.strategy`` -> ``strategy``."""
    last = receiver.rsplit(".", 1)[-1].lower()
    if last == "strategy" or last.endswith("_strategy"):
        return "strategy"
    if last == "trainer" or last.endswith("_trainer"):
        return "trainer"
    if last == "fabric" or last.endswith("_fabric"):
        return "fabric"
    if "accelerator" in last:
        return "accelerator"
    if last == "engine" or last.endswith("_engine"):
        return "engine"
    if last in ("self", "pl_module"):  # `pl_module`: the module a Lightning callback gets
        return "self"
    return None


@dataclass(frozen=True)
class CollectiveKind:
    """What a collective is, apart from where it stands: the fields of ``Collective``
    without the node, shared by the LibCST and the ``ast`` readers."""

    api: str
    op: str
    family: str
    creates_group: bool = False
    saves_checkpoint: bool = False


def kind_of_function(qualified: str) -> CollectiveKind | None:
    """The collective a fully qualified function (``torch.distributed.barrier``) is."""
    module, _, function = qualified.rpartition(".")
    if module in TORCH_DIST_MODULES and function in TORCH_COLLECTIVES:
        family = "deepspeed" if module.startswith("deepspeed") else "torch.distributed"
        return CollectiveKind(
            f"torch.distributed.{function}",
            function,
            family,
            creates_group=function in GROUP_CREATORS,
        )
    if qualified in DEVICE_MESH_CREATORS:
        return CollectiveKind("init_device_mesh", "init_device_mesh", "torch.distributed", True)
    if qualified in CHECKPOINT_FUNCTIONS:
        api = CHECKPOINT_FUNCTIONS[qualified]
        return CollectiveKind(api, api.rsplit(".", 1)[-1], "checkpoint", saves_checkpoint=True)
    if qualified in FSDP_COLLECTIVES:
        api = FSDP_COLLECTIVES[qualified]
        return CollectiveKind(api, api.rsplit(".", 1)[-1], "fsdp")
    return None


_FRAMEWORK_METHODS = {
    "strategy": _STRATEGY_METHODS,
    "trainer": _TRAINER_METHODS,
    "fabric": _FABRIC_METHODS,
    "accelerator": _ACCELERATE_METHODS,
    "engine": _DEEPSPEED_ENGINE_METHODS,
}


def kind_of_method(
    receiver: str, method: str, allocated: str | None = None
) -> CollectiveKind | None:
    """The framework collective ``receiver.method()`` is: by the receiver's ``allocated``
    kind (``receivers.Receivers``) when the module says, else by what its name says
    (``self.trainer.strategy.barrier``); ``self`` methods are not decided here."""
    kind = allocated or _receiver_kind(receiver)
    if kind not in _FRAMEWORK_METHODS or method not in _FRAMEWORK_METHODS[kind]:
        return None
    return CollectiveKind(
        f"{kind}.{method}", method, kind, saves_checkpoint=(kind, method) in _CHECKPOINT_METHODS
    )
