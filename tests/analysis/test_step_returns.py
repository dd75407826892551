"""The core's lossless step returns (DDP205's question): the ways out of a
``training_step`` that hand back no loss, the guards and handlers they run under, which
classes are module classes, manual optimisation, and the batch seeded as this rank's."""

from __future__ import annotations

import ast
import textwrap

import pytest

from ddplint.analysis.divergence import Source
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.module_classes import ClassKinds
from ddplint.analysis.names import Names
from ddplint.analysis.object_kinds import LIGHTNING_MODULE, OBJECT
from ddplint.analysis.step_returns import (
    LossKind,
    lossless_returns,
    lossless_step_returns,
    manual_optimization,
)


def _analysis(source: str) -> ModuleAnalysis:
    return ModuleAnalysis(ast.parse(textwrap.dedent(source)))


def _reported(source: str) -> list[tuple[int, str]]:
    """(line, the guard's test or the handler) of each lossless way out reported."""
    found = []
    for step in lossless_step_returns(_analysis(source)):
        if step.guard is not None:
            found.append((step.at.lineno, ast.unparse(step.guard.test)))
        else:
            found.append((step.at.lineno, "handler"))
    return found


def test_lossless_returns_with_guards_handlers_and_falling_off() -> None:
    tree = ast.parse(
        "import torch\n"
        "def training_step(self, batch, i):\n"
        "    if batch is None:\n"
        "        return torch.zeros(1).to(self.device)\n"
        "    try:\n"
        "        loss = self(batch)\n"
        "    except RuntimeError:\n"
        "        return\n"
        "    with ctx():\n"
        "        if loss > 0:\n"
        "            return {'loss': loss}\n"
        "        elif i:\n"
        "            return {'loss': torch.tensor(0.0)}\n"
    )
    function = tree.body[1]
    assert isinstance(function, ast.FunctionDef)
    summary = [
        (
            p.kind,
            p.falls_off,
            p.handler is not None,
            [(ast.unparse(g.test), g.negated) for g in p.guards],
        )
        for p in lossless_returns(function, Names(tree))
    ]
    assert summary == [
        (LossKind.CONSTANT, False, False, [("batch is None", False)]),
        (LossKind.NONE, False, True, []),
        (LossKind.CONSTANT, False, False, [("i", False), ("loss > 0", True)]),
        (LossKind.NONE, True, False, [("i", True), ("loss > 0", True)]),
    ]


def test_a_finally_that_returns_leaves_no_way_to_fall_off() -> None:
    tree = ast.parse(
        "def training_step(self, batch, i):\n"
        "    try:\n"
        "        log(batch)\n"
        "    finally:\n"
        "        return self(batch)\n"
    )
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    assert lossless_returns(function, Names(tree)) == []


LIGHTNING = """
import lightning.pytorch as pl
import torch
import torch.distributed as dist
"""


def test_a_test_on_the_batch_or_what_the_model_made_of_it_is_reported() -> None:
    assert _reported(
        LIGHTNING
        + """
class M(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        if batch is None:
            return None
        out = self.model(**batch)
        if not torch.isfinite(out.loss):
            return torch.tensor(0.0)
        return out.loss
"""
    ) == [(9, "batch is None"), (12, "not torch.isfinite(out.loss)")]


def test_a_test_every_rank_answers_alike_is_not_reported() -> None:
    assert (
        _reported(
            LIGHTNING
            + """
class M(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        if batch_idx < self.hparams.warmup:
            return None
        loss = self.model(batch)
        if not loss.requires_grad:
            return None
        bad = torch.isnan(loss).float()
        dist.all_reduce(bad)
        if bad.item():
            return None
        return loss
"""
        )
        == []
    )


def test_the_rank_decides_a_return_too() -> None:
    found = lossless_step_returns(
        _analysis(
            LIGHTNING
            + """
class M(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        if self.global_rank == 0:
            return None
        return self.model(batch)
"""
        )
    )
    assert [(s.at.lineno, s.taint.source if s.taint else None) for s in found] == [(9, Source.RANK)]


def test_a_handler_reports_falling_off_at_the_exception_caught() -> None:
    assert _reported(
        LIGHTNING
        + """
class M(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        try:
            return self.model(batch)
        except torch.cuda.OutOfMemoryError:
            torch.cuda.empty_cache()
"""
    ) == [(10, "handler")]


@pytest.mark.parametrize(
    "body",
    [
        "    automatic_optimization = False\n",
        "    def __init__(self):\n        self.automatic_optimization = False\n",
        "    @property\n    def automatic_optimization(self):\n        return False\n",
    ],
)
def test_manual_optimisation_on_the_class_or_a_base_of_the_module(body: str) -> None:
    analysis = _analysis(
        LIGHTNING
        + "class Base(pl.LightningModule):\n"
        + body
        + "class M(Base):\n"
        + "    def training_step(self, batch, batch_idx):\n"
        + "        if batch is None:\n"
        + "            return None\n"
        + "        return self.model(batch)\n"
    )
    classes = {c.name: c for c in analysis.nodes.of_type(ast.ClassDef)}
    (step,) = [f for f in analysis.nodes.functions() if f.name == "training_step"]
    assert manual_optimization(analysis, step, classes["M"])
    assert lossless_step_returns(analysis) == []


def test_manual_optimisation_by_the_steps_own_calls_and_not_otherwise() -> None:
    analysis = _analysis(
        LIGHTNING
        + """
class Manual(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        self.manual_backward(self.model(batch))

class Auto(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        return self.model(batch)
"""
    )
    classes = {c.name: c for c in analysis.nodes.of_type(ast.ClassDef)}
    steps = {analysis.nodes.scope_of[f].name: f for f in analysis.nodes.functions()}
    assert manual_optimization(analysis, steps["Manual"], classes["Manual"])
    assert not manual_optimization(analysis, steps["Auto"], classes["Auto"])


def test_class_kinds_by_bases_not_by_names() -> None:
    tree = ast.parse(
        "import abc\n"
        "import lightning.pytorch as pl\n"
        "from nemo.collections.asr.models import ASRModel\n"
        "from elsewhere import BaseModel\n"
        "class Mixin(abc.ABC): pass\n"
        "class Local(Mixin, pl.LightningModule): pass\n"
        "class Speech(ASRModel): pass\n"
        "class FromLocal(Local): pass\n"
        "class Unknown(BaseModel): pass\n"
        "class Plain(object): pass\n"
    )
    analysis = ModuleAnalysis(tree)
    kinds = ClassKinds(analysis.nodes, analysis.names)
    by_name = {c.name: kinds.kind(c) for c in analysis.nodes.of_type(ast.ClassDef)}
    assert by_name == {
        "Mixin": OBJECT,
        "Local": LIGHTNING_MODULE,
        "Speech": LIGHTNING_MODULE,
        "FromLocal": LIGHTNING_MODULE,
        "Unknown": None,  # a base named like a model is no evidence
        "Plain": OBJECT,
    }


def test_a_step_of_a_class_that_is_no_module_is_not_asked() -> None:
    assert (
        _reported(
            """
from elsewhere import BaseModel

class Unknown(BaseModel):
    def training_step(self, batch, batch_idx):
        if batch is None:
            return None
        return batch

class NotAModule:
    def training_step(self, batch, batch_idx):
        if batch is None:
            return None
        return batch
"""
        )
        == []
    )
