"""Ways out of a step function that hand back no loss tied to the model, on LibCST
nodes (the step-skip rules): ``return`` / ``return None``, and a freshly built constant
tensor (``torch.tensor(0.0)``, ``torch.zeros(1).to(device)``, ``{"loss":
torch.tensor(0.)}``), which has no graph back to the parameters. The analysis core asks
the same of ``ast`` nodes (``analysis.step_returns``), from the same catalogue.
"""

from __future__ import annotations

import libcst as cst

from ddplint.analysis.step_returns import CONSTANT_TENSORS, KEEPS_CONSTANT
from ddplint.code.syntax.names import ImportTable


def is_none_return(node: cst.CSTNode) -> bool:
    """``return`` or ``return None``."""
    return isinstance(node, cst.Return) and (
        node.value is None or (isinstance(node.value, cst.Name) and node.value.value == "None")
    )


def is_constant_tensor(expr: cst.BaseExpression, names: ImportTable) -> bool:
    """``torch.tensor(0.0)``, ``torch.zeros(1, device=d).float()``, or a dict whose
    ``"loss"`` is one."""
    if isinstance(expr, cst.Dict):
        return any(
            isinstance(e, cst.DictElement)
            and isinstance(e.key, cst.SimpleString)
            and e.key.evaluated_value == "loss"
            and is_constant_tensor(e.value, names)
            for e in expr.elements
        )
    while (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value in KEEPS_CONSTANT
    ):
        expr = expr.func.value
    return isinstance(expr, cst.Call) and names.qualified_name(expr.func) in CONSTANT_TENSORS
