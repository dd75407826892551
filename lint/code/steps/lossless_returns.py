"""The paths on which a step function returns no loss tied to the model.

Three kinds: an explicit ``return`` / ``return None``; falling off the end (past a final
``if`` without ``else`` or whose branch does not return, through ``with`` bodies,
``try`` bodies and handlers); and a freshly built constant tensor
(``torch.tensor(0.0)``, ``torch.zeros(1).to(device)``, ``{"loss": torch.tensor(0.)}``),
which has no graph back to the parameters. Each path carries its guards (innermost
first) and, when it runs in an exception handler, that handler.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

import libcst as cst

from ddplint.code.syntax.conditions import Guard, guarding_conditions
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import ImportTable

#: Tensor constructors whose result has no autograd history.
CONSTANT_TENSORS = frozenset(
    {
        "torch.tensor",
        "torch.as_tensor",
        "torch.scalar_tensor",
        "torch.zeros",
        "torch.ones",
        "torch.full",
        "torch.empty",
        "torch.zeros_like",
        "torch.ones_like",
        "torch.full_like",
        "torch.empty_like",
    }
)
# Methods that keep a tensor constant: moving, casting, asking for grad.
_KEEPS_CONSTANT = frozenset(
    {"to", "cuda", "cpu", "float", "half", "bfloat16", "double", "requires_grad_", "detach"}
)


class LossKind(str, Enum):
    NONE = "None"
    CONSTANT = "a constant tensor"


@dataclass(frozen=True)
class LosslessReturn:
    """A way out of a step without a loss tied to the model: ``node`` is the ``return``
    statement, or for falling off the end the last statement passed."""

    node: cst.CSTNode
    kind: LossKind
    guards: tuple[Guard, ...]
    handler: cst.ExceptHandler | None
    falls_off: bool


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
        and expr.func.attr.value in _KEEPS_CONSTANT
    ):
        expr = expr.func.value
    return isinstance(expr, cst.Call) and names.qualified_name(expr.func) in CONSTANT_TENSORS


def lossless_returns(
    index: ModuleIndex, names: ImportTable, function: cst.FunctionDef
) -> list[LosslessReturn]:
    """Every path of ``function`` that returns None or a constant tensor."""
    found = []
    for node in index.walk_within(function.body):
        if not isinstance(node, cst.Return):
            continue
        if is_none_return(node):
            kind = LossKind.NONE
        elif node.value is not None and is_constant_tensor(node.value, names):
            kind = LossKind.CONSTANT
        else:
            continue
        guards = tuple(guarding_conditions(index, node))
        handler = index.enclosing(node, cst.ExceptHandler, cst.FunctionDef)
        in_handler = handler if isinstance(handler, cst.ExceptHandler) else None
        found.append(LosslessReturn(node, kind, guards, in_handler, False))
    found.extend(_fall_off(_statements(function.body), (), None))
    return found


def _statements(block: cst.BaseSuite | cst.CSTNode) -> Sequence[cst.CSTNode]:
    if isinstance(block, cst.IndentedBlock):
        return block.body
    if isinstance(block, cst.SimpleStatementSuite):
        return (block,)
    return ()


def _ends_function(statement: cst.CSTNode) -> bool:
    """A line whose last small statement is ``return`` or ``raise``."""
    if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        return bool(statement.body) and isinstance(statement.body[-1], (cst.Return, cst.Raise))
    return False


def _fall_off(
    statements: Sequence[cst.CSTNode],
    guards: tuple[Guard, ...],
    handler: cst.ExceptHandler | None,
) -> list[LosslessReturn]:
    """Paths that reach the end of ``statements`` without returning."""
    if not statements:
        return []
    last = statements[-1]
    if _ends_function(last):
        return []
    if isinstance(last, cst.If):
        taken = _fall_off(_statements(last.body), (Guard(last.test, last, False), *guards), handler)
        otherwise = (Guard(last.test, last, True), *guards)
        if last.orelse is None:
            return [*taken, LosslessReturn(last, LossKind.NONE, otherwise, handler, True)]
        branch = last.orelse
        rest = [branch] if isinstance(branch, cst.If) else _statements(branch.body)
        return [*taken, *_fall_off(rest, otherwise, handler)]
    if isinstance(last, cst.With):
        return _fall_off(_statements(last.body), guards, handler)
    if isinstance(last, cst.Try):
        final = last.finalbody
        if final is not None and not _fall_off(_statements(final.body), (), None):
            return []
        main = last.orelse.body if last.orelse is not None else last.body
        found = _fall_off(_statements(main), guards, handler)
        for caught in last.handlers:
            found.extend(_fall_off(_statements(caught.body), guards, caught))
        return found
    return [LosslessReturn(last, LossKind.NONE, guards, handler, True)]
