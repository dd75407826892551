"""Calls that take a process-group ``timeout`` (a ``datetime.timedelta``), where the
argument sits, and whether a float in seconds is tolerated: by the resolved name of
the API called (DDP303, DDP304, DDP306 and ``process_groups`` read it).

Checked against torch 2.13 (gloo): an int is a TypeError everywhere; a float is a
TypeError in ``init_process_group``/``new_group``/``new_subgroups``, accepted as seconds
by ``barrier`` and converted with a warning by ``monitored_barrier``. Lightning
strategies, accelerate's ``InitProcessGroupKwargs`` and ``deepspeed.init_distributed``
pass the value on to ``init_process_group``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ddplint.analysis.api import torch_distributed_function
from ddplint.analysis.names import Names, passed_argument


@dataclass(frozen=True)
class TimeoutParameter:
    """Where ``timeout`` goes in one API."""

    api: str
    position: int | None
    accepts_float: bool = False


_TORCH = {
    "init_process_group": TimeoutParameter("init_process_group", 2),
    "new_group": TimeoutParameter("new_group", 1),
    "new_subgroups": TimeoutParameter("new_subgroups", 2),
    "new_subgroups_by_enumeration": TimeoutParameter("new_subgroups_by_enumeration", 1),
    "barrier": TimeoutParameter("barrier", 3, accepts_float=True),
    "monitored_barrier": TimeoutParameter("monitored_barrier", 1, accepts_float=True),
}
_LIGHTNING_STRATEGY_PACKAGES = (
    "lightning.pytorch.strategies.",
    "lightning.fabric.strategies.",
    "pytorch_lightning.strategies.",
    "lightning_fabric.strategies.",
)
_LIGHTNING_STRATEGIES = frozenset(
    {"DDPStrategy", "FSDPStrategy", "DeepSpeedStrategy", "ModelParallelStrategy"}
)
_OTHER = {
    "accelerate.InitProcessGroupKwargs": TimeoutParameter("InitProcessGroupKwargs", 2),
    "accelerate.utils.InitProcessGroupKwargs": TimeoutParameter("InitProcessGroupKwargs", 2),
    "accelerate.utils.dataclasses.InitProcessGroupKwargs": TimeoutParameter(
        "InitProcessGroupKwargs", 2
    ),
    "deepspeed.init_distributed": TimeoutParameter("init_distributed", 4),
    "deepspeed.comm.init_distributed": TimeoutParameter("init_distributed", 4),
    "deepspeed.comm.comm.init_distributed": TimeoutParameter("init_distributed", 4),
}


def timeout_parameter(qualified: str | None) -> TimeoutParameter | None:
    """The timeout parameter of the API named ``qualified``, if it is one we know."""
    if qualified is None:
        return None
    torch_function = torch_distributed_function(qualified)
    if torch_function in _TORCH:
        return _TORCH[torch_function]
    if qualified in _OTHER:
        return _OTHER[qualified]
    head, _, last = qualified.rpartition(".")
    if last in _LIGHTNING_STRATEGIES and any(
        (head + ".").startswith(p) for p in _LIGHTNING_STRATEGY_PACKAGES
    ):
        return TimeoutParameter(last, None)
    return None


def timeout_argument(
    names: Names, call: ast.Call
) -> tuple[TimeoutParameter, ast.expr | None] | None:
    """For a known timeout-taking call: its parameter and the argument passed (None when
    the call leaves the default)."""
    parameter = timeout_parameter(names.resolve(call.func))
    if parameter is None:
        return None
    return parameter, passed_argument(call, "timeout", parameter.position)
