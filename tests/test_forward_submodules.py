"""The forward-submodule questions: frozen submodules, and whole forwards (DDP250)."""

from __future__ import annotations

import libcst as cst

from ddplint.code.context import CodeContext
from ddplint.code.steps.forward_submodules import (
    WholeForwards,
    built_class,
    parameterised_submodules,
)
from ddplint.settings import LintOptions
from ddplint.source import SourceFile

PRELUDE = "import torch\nfrom torch import nn\n"


def _context(code: str) -> CodeContext:
    source = SourceFile.decode("m.py", (PRELUDE + code).encode())
    return CodeContext.parse(source, LintOptions(selected=(), project_root="."))


def _whole(code: str, name: str = "Net") -> bool:
    ctx = _context(code)
    return WholeForwards(ctx.index, ctx.names).uses_everything(name)


STRAIGHT = """
class Net(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.width = width
        self.body = nn.Linear(width, width)
        self.head = nn.Linear(width, 2)

    def forward(self, x):
        return self.head(self.body(x))
"""


def test_straight_forward_is_whole() -> None:
    assert _whole(STRAIGHT)


def test_branch_loop_or_graph_cut_is_no_proof() -> None:
    branching = STRAIGHT.replace(
        "return self.head(self.body(x))",
        "if x.sum() > 0:\n            x = self.body(x)\n        return self.head(x)",
    )
    detached = STRAIGHT.replace("self.body(x))", "self.body(x).detach())")
    assert not _whole(branching)
    assert not _whole(detached)


def test_submodule_not_in_sight_is_no_proof() -> None:
    handed = STRAIGHT.replace("nn.Linear(width, width)", "make_body(width)")
    argument = STRAIGHT.replace("width: int", "width").replace(
        "self.width = width", "self.width = width\n        self.extra = width"
    )
    assert not _whole(handed)
    assert not _whole(argument)


def test_submodule_never_touched_is_no_proof() -> None:
    assert not _whole(STRAIGHT.replace("self.head(self.body(x))", "self.body(x)"))


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
