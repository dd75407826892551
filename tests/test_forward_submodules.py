"""The LibCST forward-submodule questions DDP502 asks: held and frozen submodules, the
class a wrapped model is built from."""

from __future__ import annotations

import libcst as cst
from test_whole_forwards import PRELUDE, STRAIGHT

from ddplint.code.context import CodeContext
from ddplint.code.steps.forward_submodules import built_class, parameterised_submodules
from ddplint.settings import LintOptions
from ddplint.source import SourceFile


def _context(code: str) -> CodeContext:
    source = SourceFile.decode("m.py", (PRELUDE + code).encode())
    return CodeContext.parse(source, LintOptions(selected=(), project_root="."))


def test_frozen_submodules_hold_no_trained_parameters() -> None:
    ctx = _context(
        STRAIGHT.replace(
            "self.head = nn.Linear(width, 2)",
            "self.head = nn.Linear(width, 2)\n        self.head.requires_grad_(False)",
        )
    )
    net = next(c for c in ctx.index.nodes(cst.ClassDef) if c.name.value == "Net")
    assert parameterised_submodules(ctx.index, net) == {"body"}


def test_built_class_follows_a_rebound_model() -> None:
    ctx = _context(
        "def main(DDP):\n    model = Net(4).cuda()\n    model = DDP(model)\n    return model\n"
    )
    wrapped = next(
        call.args[0].value
        for call in ctx.index.nodes(cst.Call)
        if isinstance(call.func, cst.Name) and call.func.value == "DDP"
    )
    assert built_class(ctx.index, wrapped) == "Net"
