"""The one catalogue of collective-bearing calls, resolved through imports.

A collective pairs by order inside a process group: every rank of the group must reach
it. This module says which calls are collectives, whatever API spells them:
``torch.distributed`` (and ``deepspeed.comm``) resolved by qualified name, and the
framework forms (Lightning, Fabric, accelerate, DeepSpeed engines) recognised by the
method name on a receiver whose name says what it is (``self.trainer.strategy``,
``accelerator``, ``fabric``), since receivers carry no types statically.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from ddplint.analysis.api import (
    CHECKPOINT_FUNCTIONS as CHECKPOINT_FUNCTIONS,
)
from ddplint.analysis.api import (
    FSDP_COLLECTIVES as FSDP_COLLECTIVES,
)
from ddplint.analysis.api import (
    GROUP_CREATORS as GROUP_CREATORS,
)
from ddplint.analysis.api import (
    SHARDING_WRAPPERS as SHARDING_WRAPPERS,
)
from ddplint.analysis.api import (
    STATE_DICT_READS as STATE_DICT_READS,
)
from ddplint.analysis.api import (
    TORCH_COLLECTIVES as TORCH_COLLECTIVES,
)
from ddplint.analysis.api import (
    TORCH_DIST_MODULES as TORCH_DIST_MODULES,
)
from ddplint.code.syntax.names import ImportTable, dotted_name

if TYPE_CHECKING:
    from ddplint.code.collectives.receivers import Receivers

DEVICE_MESH_CREATORS = frozenset(
    {"torch.distributed.device_mesh.init_device_mesh", "torch.distributed.init_device_mesh"}
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


@dataclass(frozen=True)
class Collective:
    """A call every rank of a group must make. ``api`` is a stable label for messages
    and for comparing branches (``torch.distributed.barrier``, ``strategy.barrier``)."""

    node: cst.Call
    api: str
    op: str
    family: str
    creates_group: bool = False
    #: Saves a checkpoint (and synchronises while doing it): must run on every rank.
    saves_checkpoint: bool = False
    #: For a call of a project function defined in another module (see
    #: ``ddplint.code.project``): where it reaches the collective, for messages
    #: (``in `utils.save_checkpoint` (utils.py:40)``); empty for the collective itself.
    via: str = ""

    @property
    def result_is_uniform(self) -> bool:
        """Whether every rank ends up with the same value: what it returns, or its first
        argument in place (``broadcast_object_list(objs)``, ``all_reduce(t)``)."""
        if self.op in _UNIFORM_OPS:
            return True
        return self.family not in ("torch.distributed", "deepspeed") and self.op in (
            "reduce",
            "gather",
        )

    @property
    def syncs_logged_metric(self) -> bool:
        """Lightning's ``self.log``/``self.log_dict`` with ``sync_dist=True``."""
        return self.family == "lightning" and self.op == "all_reduce"


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


def keyword_is_true(call: cst.Call, name: str) -> bool:
    """Whether ``name=True`` (a literal True) is passed."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return isinstance(arg.value, cst.Name) and arg.value.value == "True"
    return False


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


def _of_kind(call: cst.Call, kind: CollectiveKind) -> Collective:
    return Collective(
        call, kind.api, kind.op, kind.family, kind.creates_group, kind.saves_checkpoint
    )


def classify_call(
    call: cst.Call, names: ImportTable, receivers: Receivers | None = None
) -> Collective | None:
    """The collective this call is, or None; ``receivers`` says what the module's own
    allocations hold (without it, a receiver is judged by its name)."""
    qualified = names.qualified_name(call.func)
    if qualified is not None:
        kind = kind_of_function(qualified)
        if kind is not None:
            return _of_kind(call, kind)
    if not isinstance(call.func, cst.Attribute):
        return None
    method = call.func.attr.value
    receiver = dotted_name(call.func.value)
    if receiver is None:
        return None
    if _receiver_kind(receiver) == "self":
        # ``rank_zero_only=True`` turns Lightning's sync into a no-op: no collective.
        if (
            method in _LOG_METHODS
            and keyword_is_true(call, "sync_dist")
            and not keyword_is_true(call, "rank_zero_only")
        ):
            return Collective(call, f"self.{method}(sync_dist=True)", "all_reduce", "lightning")
        if method in _LIGHTNING_MODULE_METHODS:
            return Collective(call, f"self.{method}", method, "lightning")
        return None
    allocated = receivers.kind(receiver) if receivers is not None else None
    framework = kind_of_method(receiver, method, allocated)
    return _of_kind(call, framework) if framework is not None else None


#: Text one of which every call of a catalogued collective holds, whatever the spelling
#: (an aliased import still names the function in its import): the function or method
#: name, or the module it comes from. A pre-filter, used with ``COLLECTIVE_NEEDLES``.
COLLECTIVE_CALL_NEEDLES = (
    "barrier",
    "reduce",
    "gather",
    "broadcast",
    "scatter",
    "all_to_all",
    "new_group",
    "new_subgroups",
    "device_mesh",
    "save_checkpoint",
    "wait_for_everyone",
    "save_state",
    "sync_dist",
    "summon_full_params",
    "state_dict",
    "pad_across",
    "save(",
    "distributed.checkpoint",
)

#: Text one of which every module with a catalogued collective contains (the import of
#: ``torch.distributed`` / ``deepspeed``, or the framework receiver's name): a cheap
#: pre-filter for rules that need a collective in the module (``Rule.needles``).
COLLECTIVE_NEEDLES = (
    "torch.distributed",
    "import distributed",
    "deepspeed",
    "strategy",
    "save_checkpoint",
    "fabric",
    "accelerator",
    "all_gather",
    "sync_dist",
)


_TORCH_DISTRIBUTED_PREFIXES = (
    "torch.distributed.",
    "torch.distributed.distributed_c10d.",
    "torch.distributed.c10d.",
)


def torch_distributed_function(qualified: str | None) -> str | None:
    """``barrier`` for ``torch.distributed.barrier`` (or its ``distributed_c10d``
    spelling); None for anything outside ``torch.distributed``'s top level. Any
    function, not only collectives (``init_process_group``, ``get_backend``)."""
    if qualified is None:
        return None
    for prefix in _TORCH_DISTRIBUTED_PREFIXES:
        if qualified.startswith(prefix):
            rest = qualified[len(prefix) :]
            if rest.isidentifier():
                return rest
    return None


def torch_distributed_call(names: ImportTable, call: cst.Call) -> str | None:
    """The ``torch.distributed`` function ``call`` calls, by its short name."""
    return torch_distributed_function(names.qualified_name(call.func))
