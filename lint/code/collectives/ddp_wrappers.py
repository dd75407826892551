"""Where a module wraps a model for data parallelism: ``DistributedDataParallel(...)``,
Lightning's ``DDPStrategy(...)`` and ``Trainer(strategy="ddp")``."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ddplint.analysis.api import DDP_WRAPPERS as DDP_WRAPPERS
from ddplint.code.syntax.call_args import argument, has_star_arguments, keyword_argument
from ddplint.code.syntax.constants import literal_value
from ddplint.code.syntax.names import ImportTable

LIGHTNING_DDP_STRATEGIES = frozenset(
    {
        "lightning.pytorch.strategies.DDPStrategy",
        "lightning.pytorch.strategies.ddp.DDPStrategy",
        "pytorch_lightning.strategies.DDPStrategy",
        "pytorch_lightning.strategies.ddp.DDPStrategy",
        "lightning.fabric.strategies.DDPStrategy",
        "lightning_fabric.strategies.DDPStrategy",
    }
)
LIGHTNING_TRAINERS = frozenset(
    {
        "lightning.Trainer",
        "lightning.pytorch.Trainer",
        "lightning.pytorch.trainer.Trainer",
        "lightning.pytorch.trainer.trainer.Trainer",
        "pytorch_lightning.Trainer",
        "pytorch_lightning.trainer.Trainer",
        "pytorch_lightning.trainer.trainer.Trainer",
    }
)
#: Lightning strategy names that mean DDP with ``find_unused_parameters=False``.
DDP_STRATEGY_NAMES = frozenset(
    name + suffix
    for name in ("ddp", "ddp_spawn", "ddp_fork", "ddp_notebook")
    for suffix in ("", "_find_unused_parameters_false")
)


def is_ddp_wrapper(names: ImportTable, call: cst.Call) -> bool:
    return names.qualified_name(call.func) in DDP_WRAPPERS


@dataclass(frozen=True)
class DataParallelWrapper:
    """One place that turns on DDP, and how it sets ``find_unused_parameters``."""

    call: cst.Call
    #: True / False when known; None when it cannot be seen (a variable, ``**kwargs``).
    find_unused_parameters: bool | None
    #: The model expressions it wraps: DDP's first argument; for Lightning, the model
    #: passed to every ``.fit(...)`` of the module.
    models: tuple[cst.BaseExpression, ...]
    #: The ``strategy="ddp"`` argument of a Trainer, when that is how DDP is chosen.
    strategy: cst.Arg | None = None


def data_parallel_wrappers(names: ImportTable, calls: list[cst.Call]) -> list[DataParallelWrapper]:
    fitted = tuple(
        model.value
        for call in calls
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "fit"
        for model in (argument(call, "model", 0),)
        if model is not None
    )
    wrappers = []
    for call in calls:
        qualified = names.qualified_name(call.func)
        if qualified in DDP_WRAPPERS:
            module = argument(call, "module", 0)
            models = (module.value,) if module is not None else ()
            wrappers.append(DataParallelWrapper(call, _flag(call), models))
        elif qualified in LIGHTNING_DDP_STRATEGIES:
            wrappers.append(DataParallelWrapper(call, _flag(call), fitted))
        elif qualified in LIGHTNING_TRAINERS:
            strategy = argument(call, "strategy")
            if strategy is not None and literal_value(strategy.value) in DDP_STRATEGY_NAMES:
                wrappers.append(DataParallelWrapper(call, False, fitted, strategy))
    return wrappers


def _flag(call: cst.Call) -> bool | None:
    arg = keyword_argument(call, "find_unused_parameters")
    if arg is None:
        return None if has_star_arguments(call) else False
    value = literal_value(arg.value)
    return value if isinstance(value, bool) else None
