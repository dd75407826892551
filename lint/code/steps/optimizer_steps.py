"""Calls that update parameters or their schedule: optimizer, scheduler and scaler steps.

``optimizer.step()``, ``self.optimizers().step()``, ``lr_scheduler.step()``,
``scaler.step(optimizer)``, ``model_engine.step()`` (DeepSpeed). Receivers carry no types
statically; the receiver's last name says what it is.
"""

from __future__ import annotations

import re

import libcst as cst

from ddplint.code.syntax.names import dotted_name

_STEPPER = re.compile(r"(optim|^opt$|^opt_|_opt$|sched|scaler|^engine$|_engine$)", re.IGNORECASE)


def is_optimizer_step(call: cst.Call) -> bool:
    """``<optimizer|scheduler|scaler|engine>.step(...)``."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "step"):
        return False
    receiver = func.value
    if isinstance(receiver, cst.Call):  # self.optimizers().step()
        receiver = receiver.func
    name = dotted_name(receiver)
    return name is not None and bool(_STEPPER.search(name.rsplit(".", 1)[-1]))
