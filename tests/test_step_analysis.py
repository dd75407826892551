"""The step-analysis layer: guards, call reach, rank-local data, training steps,
set iteration, optimizer steps."""

from __future__ import annotations

import libcst as cst
import pytest

from ddplint.code.collectives.call_reach import StepEvent
from ddplint.code.context import CodeContext
from ddplint.code.steps.optimizer_steps import is_optimizer_step
from ddplint.code.syntax.conditions import guarding_conditions
from ddplint.needles import COLLECTIVE_NEEDLES
from ddplint.settings import LintOptions
from ddplint.source import SourceFile

OPTIONS = LintOptions(selected=(), project_root=".")


def context(code: str) -> CodeContext:
    return CodeContext.parse(SourceFile.decode("t.py", code.encode()), OPTIONS)


def call_named(ctx: CodeContext, text: str) -> cst.Call:
    return next(c for c in ctx.index.nodes(cst.Call) if ctx.module.code_for_node(c) == text)


def test_guards_innermost_first_with_else_negated() -> None:
    ctx = context(
        "def f(a, b, c):\n"
        "    if a:\n"
        "        while b:\n"
        "            pass\n"
        "    elif c:\n"
        "        x = g() if a else h()\n"
    )
    guards = guarding_conditions(ctx.index, call_named(ctx, "h()"))
    assert [(ctx.module.code_for_node(g.test), g.negated) for g in guards] == [
        ("a", True),
        ("c", False),
        ("a", True),
    ]
    assert guarding_conditions(ctx.index, ctx.index.nodes(cst.If)[0].test) == []


def test_guards_stop_at_the_enclosing_def() -> None:
    ctx = context("if a:\n    def f():\n        g()\n")
    assert guarding_conditions(ctx.index, call_named(ctx, "g()")) == []


def test_call_reach_follows_methods_and_functions_and_cuts_recursion() -> None:
    ctx = context(
        "import torch.distributed as dist\n"
        "def sync(t):\n    sync(t)\n    dist.all_reduce(t)\n"
        "class Base:\n    def _reduce(self, t):\n        return sync(t)\n"
        "class Trainer(Base):\n"
        "    def step(self, loss):\n        self.scaler.scale(loss).backward()\n"
        "    def fit(self, t):\n        self._reduce(t)\n        self.step(t)\n"
    )
    reached = ctx.call_reach.reached(call_named(ctx, "self._reduce(t)"))
    assert reached is not None and reached.label == "torch.distributed.all_reduce"
    assert reached.chain == ("self._reduce", "sync")
    backward = ctx.call_reach.reached(call_named(ctx, "self.step(t)"))
    assert backward is not None and backward.kind is StepEvent.BACKWARD
    assert backward.label == "self.scaler.scale(...).backward()"
    assert ctx.call_reach.reached(call_named(ctx, "self.step(t)"), {StepEvent.COLLECTIVE}) is None


def _dependent(code: str, test_index: int = -1) -> bool:
    ctx = context(code)
    return ctx.data_dependence.is_data_dependent(ctx.index.nodes(cst.If)[test_index].test)


LOOP = (
    "import torch\nimport torch.distributed as dist\n"
    "def train(model, loader, opt, start):\n"
    "    for step, batch in enumerate(loader):\n"
    "        out = model(batch)\n"
    "        loss = out.loss\n"
    "        value = loss.item()\n"
    "        {body}\n"
    "        loss.backward()\n"
)


@pytest.mark.parametrize(
    "body",
    [
        "if torch.isnan(loss): pass",
        "if value > 10: pass",
        "if batch is None: pass",
        "if out.logits.sum() == 0: pass",
        "if len(batch) == 0: pass",
        "if (bad := torch.isinf(loss)): pass",
    ],
)
def test_rank_local_conditions(body: str) -> None:
    assert _dependent(LOOP.format(body=body))


@pytest.mark.parametrize(
    "body",
    [
        "if step < start: pass",
        "if isinstance(batch, dict) and 'labels' in batch: pass",
        "if out.aux_loss is not None: pass",
        "flag = torch.isnan(loss).float(); dist.all_reduce(flag)\n        if flag.item(): pass",
        "bad = accelerator.gather(loss)\n        if bad.isnan().any(): pass",
    ],
)
def test_rank_shared_conditions(body: str) -> None:
    assert not _dependent(LOOP.format(body=body))


def test_seeds_skip_counters_literals_and_non_training_loops() -> None:
    code = (
        "def f(model, loader, settings):\n"
        "    for epoch in range(3):\n"
        "        for amp in [True, False]:\n"
        "            if epoch or amp: pass\n"
        "            model(1).backward()\n"
        "    for batch in loader:\n"
        "        if batch: pass\n"
    )
    assert not _dependent(code, 0)
    assert not _dependent(code, 1)


def test_training_step_batch_parameter_and_manual_optimization() -> None:
    ctx = context(
        "import lightning.pytorch as pl\n"
        "class Base(pl.LightningModule):\n"
        "    automatic_optimization = False\n"
        "class Manual(Base):\n"
        "    def training_step(self, batch, batch_idx):\n"
        "        if batch_idx == 0 or batch is None: pass\n"
        "class Auto(pl.LightningModule):\n"
        "    def training_step(self, batch, batch_idx):\n"
        "        if batch_idx == 0: pass\n"
        "class ByCall(pl.LightningModule):\n"
        "    def training_step(self, batch, batch_idx):\n"
        "        self.manual_backward(batch)\n"
    )
    steps = ctx.training_steps
    manual, auto, by_call = (
        f for f in ctx.index.nodes(cst.FunctionDef) if f.name.value == "training_step"
    )
    assert all(steps.is_training_step(f) for f in (manual, auto, by_call))
    assert steps.uses_manual_optimization(manual)
    assert steps.uses_manual_optimization(by_call)
    assert not steps.uses_manual_optimization(auto)
    first, second = ctx.index.nodes(cst.If)
    assert ctx.data_dependence.is_data_dependent(first.test)
    assert not ctx.data_dependence.is_data_dependent(second.test)


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("optimizer.step()", True),
        ("self.optimizer.step()", True),
        ("self.optimizers().step()", True),
        ("opt.step()", True),
        ("lr_scheduler.step()", True),
        ("scaler.step(optimizer)", True),
        ("model_engine.step()", True),
        ("env.step(action)", False),
        ("self.step()", False),
        ("trainer.step()", False),
        ("optimizer.zero_grad()", False),
    ],
)
def test_optimizer_steps(code: str, expected: bool) -> None:
    ctx = context(code)
    outermost = ctx.index.nodes(cst.Call)[0]
    assert is_optimizer_step(outermost, ctx.object_types) is expected


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        # Known by allocation under names that say nothing (or say otherwise).
        ("import torch\nupdater = torch.optim.AdamW(ps)\nupdater.step()", True),
        (
            "import torch\ndef make(ps):\n    return torch.optim.SGD(ps)\nu = make(ps)\nu.step()",
            True,
        ),
        ("from transformers import get_scheduler\nwarm = get_scheduler('x', o)\nwarm.step()", True),
        ("from torch.cuda.amp import GradScaler\nguard = GradScaler()\nguard.step(o)", True),
        (
            "import deepspeed\nnet, o, _, _ = deepspeed.initialize(model=m)\nnet.step()",
            True,
        ),
        (
            "from accelerate import Accelerator\nimport torch\nacc = Accelerator()\n"
            "w = torch.optim.Adam(ps)\nm, w2 = acc.prepare(model, w)\nw2.step()",
            True,
        ),
        (
            "import torch\nclass T:\n    def __init__(self, ps):\n"
            "        self.u = torch.optim.Adam(ps)\n    def go(self):\n        self.u.step()",
            True,
        ),
        # Look-alikes: named like a stepper, allocated as something else.
        (
            "from diffusers import DDPMScheduler\nnoise_scheduler = DDPMScheduler()\n"
            "noise_scheduler.step(out, t, x)",
            False,
        ),
        (
            "from diffusers import DDIMScheduler\nsched = DDIMScheduler.from_pretrained(p)\n"
            "sched.step(out, t, x)",
            False,
        ),
        ("from torch import nn\nopt_head = nn.Linear(2, 2)\nopt_head.step()", False),
        # Unknown allocation: the name still decides.
        ("optimizer = build(cfg)\noptimizer.step()", True),
        ("env = build(cfg)\nenv.step(a)", False),
    ],
)
def test_optimizer_steps_by_allocation(code: str, expected: bool) -> None:
    ctx = context(code)
    step = next(
        c for c in ctx.index.nodes(cst.Call) if ctx.module.code_for_node(c.func).endswith(".step")
    )
    assert is_optimizer_step(step, ctx.object_types) is expected


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("from torch import nn\nclass A(nn.Module):\n    pass", True),
        ("import lightning as L\nclass A(L.LightningModule):\n    pass", True),
        ("from transformers import PreTrainedModel\nclass A(PreTrainedModel):\n    pass", True),
        ("from torch import nn\nclass B(nn.Module):\n    pass\nclass A(B):\n    pass", True),
        # Named like a module, of known bases that make none.
        ("import abc\nclass DataModel(abc.ABC):\n    pass\nclass A(DataModel):\n    pass", False),
        ("import torch\nclass A(torch.optim.Optimizer):\n    pass", False),
        # An imported base of unknown kind: its name still decides.
        ("from lib import ASRModel\nclass A(ASRModel):\n    pass", True),
        ("from lib import Helper\nclass A(Helper):\n    pass", False),
    ],
)
def test_module_classes_by_kind(code: str, expected: bool) -> None:
    ctx = context(code)
    cls = next(c for c in ctx.index.nodes(cst.ClassDef) if c.name.value == "A")
    assert ctx.forward_paths.is_module_class(cls) is expected


@pytest.mark.parametrize(
    "code",
    [
        "import torch.distributed as dist\ndist.barrier()",
        "from torch import distributed\ndistributed.all_reduce(t)",
        "import deepspeed.comm as dc\ndc.broadcast(t, 0)",
        "self.trainer.strategy.barrier()",
        "trainer.save_checkpoint('x')",
        "self.log('x', v, sync_dist=True)",
        "self.all_gather(x)",
        "accelerator.wait_for_everyone()",
        "fabric.barrier()",
        "engine.save_checkpoint(d)",
        (
            "from torch.distributed.device_mesh import init_device_mesh\n"
            "init_device_mesh('cuda', (2,))"
        ),
    ],
)
def test_collective_needles_cover_the_catalogue(code: str) -> None:
    assert context(code).collectives
    assert any(needle in code for needle in COLLECTIVE_NEEDLES)
