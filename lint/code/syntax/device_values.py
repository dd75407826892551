"""Whether a ``device=`` value names the CPU: ``"cpu"``, ``"cpu:0"``,
``torch.device("cpu")``, ``torch.device(type="cpu")``."""

from __future__ import annotations

import libcst as cst

from ddplint.code.syntax.call_args import argument
from ddplint.code.syntax.names import ImportTable


def _cpu_text(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.SimpleString) and value.value.strip("'\"").startswith("cpu")


def is_cpu_device(value: cst.BaseExpression, names: ImportTable) -> bool:
    """A device value that is the CPU, spelled as text or built with ``torch.device``."""
    if _cpu_text(value):
        return True
    if isinstance(value, cst.Call) and names.qualified_name(value.func) == "torch.device":
        kind = argument(value, "type", 0)
        return kind is not None and _cpu_text(kind.value)
    return False
