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
from ddplint.code.collectives.kinds import (
    _LIGHTNING_MODULE_METHODS,
    _LOG_METHODS,
    _receiver_kind,
)
from ddplint.code.collectives.kinds import (
    DEVICE_MESH_CREATORS as DEVICE_MESH_CREATORS,
)
from ddplint.code.collectives.kinds import (
    CollectiveKind as CollectiveKind,
)
from ddplint.code.collectives.kinds import (
    kind_of_function as kind_of_function,
)
from ddplint.code.collectives.kinds import (
    kind_of_method as kind_of_method,
)
from ddplint.code.syntax.names import ImportTable, dotted_name

if TYPE_CHECKING:
    from ddplint.code.collectives.receivers import Receivers


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


def keyword_is_true(call: cst.Call, name: str) -> bool:
    """Whether ``name=True`` (a literal True) is passed."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return isinstance(arg.value, cst.Name) and arg.value.value == "True"
    return False


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
