"""Calls that update parameters or their schedule: optimizer, scheduler and scaler steps.

``optimizer.step()``, ``self.optimizers().step()``, ``lr_scheduler.step()``,
``scaler.step(optimizer)``, ``model_engine.step()`` (DeepSpeed). The receiver's kind
decides where its allocation is known (``values.object_types``: a factory-built
optimizer under any name steps, a diffusers noise scheduler's ``step()`` does not);
where it is not, the receiver's last name says what it is.
"""

from __future__ import annotations

import re

import libcst as cst

from ddplint.analysis.object_kinds import CATALOGUED_KINDS, STEPPING_KINDS
from ddplint.code.syntax.names import dotted_name
from ddplint.code.values.object_types import ObjectTypes

#: The fallback for a receiver of unknown kind.
_STEPPER = re.compile(r"(optim|^opt$|^opt_|_opt$|sched|scaler|^engine$|_engine$)", re.IGNORECASE)


def is_optimizer_step(call: cst.Call, types: ObjectTypes) -> bool:
    """``<optimizer|scheduler|scaler|engine>.step(...)``."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "step"):
        return False
    receiver = func.value
    if not isinstance(receiver, cst.Call):
        kind = types.kind_of(receiver)
        if kind in CATALOGUED_KINDS:
            return kind in STEPPING_KINDS
    else:  # self.optimizers().step()
        receiver = receiver.func
    name = dotted_name(receiver)
    return name is not None and bool(_STEPPER.search(name.rsplit(".", 1)[-1]))
