"""The shared semantic layer: names through imports, collectives, rank predicates,
forward paths."""

from __future__ import annotations

import libcst as cst
import pytest

from ddplint.code.context import CodeContext
from ddplint.needles import COLLECTIVE_CALL_NEEDLES, COLLECTIVE_NEEDLES
from ddplint.settings import LintOptions
from ddplint.source import SourceFile

OPTIONS = LintOptions(selected=(), project_root=".")


def context(code: str) -> CodeContext:
    return CodeContext.parse(SourceFile.decode("t.py", code.encode()), OPTIONS)


def calls(ctx: CodeContext) -> list[cst.Call]:
    return ctx.index.nodes(cst.Call)


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("import torch.distributed as dist\ndist.barrier()", "torch.distributed.barrier"),
        ("from torch.distributed import barrier as b\nb()", "torch.distributed.barrier"),
        ("import torch\ntorch.distributed.barrier()", "torch.distributed.barrier"),
        ("import torch as th\nth.cuda.synchronize()", "torch.cuda.synchronize"),
        (
            "from torch import distributed\ndistributed.all_reduce(x)",
            "torch.distributed.all_reduce",
        ),
        ("import torch\ndist = torch.distributed\ndist.barrier()", "torch.distributed.barrier"),
        ("barrier()", None),
    ],
)
def test_qualified_names(code: str, expected: str | None) -> None:
    ctx = context(code)
    assert ctx.names.qualified_name(calls(ctx)[-1].func) == expected


@pytest.mark.parametrize(
    ("code", "api"),
    [
        ("import torch.distributed as dist\ndist.all_reduce(t)", "torch.distributed.all_reduce"),
        ("import deepspeed.comm as dc\ndc.barrier()", "torch.distributed.barrier"),
        ("self.trainer.strategy.barrier()", "strategy.barrier"),
        ("trainer.save_checkpoint('x.ckpt')", "trainer.save_checkpoint"),
        ("self.log('loss', v, sync_dist=True)", "self.log(sync_dist=True)"),
        ("self.log_dict(d, sync_dist=True)", "self.log_dict(sync_dist=True)"),
        ("accelerator.wait_for_everyone()", "accelerator.wait_for_everyone"),
        ("self.accelerator.gather_for_metrics(x)", "accelerator.gather_for_metrics"),
        ("fabric.barrier()", "fabric.barrier"),
        ("model_engine.save_checkpoint(d)", "engine.save_checkpoint"),
        ("self.all_gather(x)", "self.all_gather"),
    ],
)
def test_collectives_are_recognised(code: str, api: str) -> None:
    ctx = context(code)
    (collective,) = ctx.collectives.values()
    assert collective.api == api


@pytest.mark.parametrize(
    "code",
    [
        "import torch.distributed as dist\ndist.send(t, 1)",
        "import torch.distributed as dist\ndist.get_world_size()",
        "self.log('loss', v)",
        "self.log('loss', v, sync_dist=False)",
        "barrier()",
        "strategy_name.barrier()",
    ],
)
def test_non_collectives(code: str) -> None:
    assert context(code).collectives == {}


@pytest.mark.parametrize(
    "condition",
    [
        "dist.get_rank() == 0",
        "torch.distributed.get_rank() != 0",
        "self.trainer.is_global_zero",
        "not trainer.is_global_zero",
        "self.global_rank == 0",
        "accelerator.is_main_process",
        "int(os.environ['LOCAL_RANK']) == 0",
        "os.environ.get('RANK') == '0'",
        "is_global_rank_zero()",
        "is_main",
        "rank == 0 and epoch > 2",
        "args['local_rank'] == 0",
        "kwargs.get('rank') == 0",
        "env['LOCAL_RANK'] == '0'",
    ],
)
def test_rank_predicates(condition: str) -> None:
    code = (
        "import os\nimport torch\nimport torch.distributed as dist\n"
        "is_main = dist.get_rank() == 0\n"
        f"if {condition}:\n    pass\n"
    )
    ctx = context(code)
    test = ctx.index.nodes(cst.If)[0].test
    assert ctx.rank_predicates.is_rank_dependent(test)


@pytest.mark.parametrize(
    "condition",
    [
        "dist.get_world_size() > 1",
        "dist.is_initialized()",
        "world_size > 1",
        "epoch == 0",
        "ready",
        "sizes[dist.get_rank()] > 0",
        "dist.get_rank() is None",
        "check(rank=0)",
        "self.world_size > 1",
        "broadcast_flag",
    ],
)
def test_not_rank_predicates(condition: str) -> None:
    code = (
        "import torch.distributed as dist\nready = dist.is_available()\n"
        "broadcast_flag = dist.get_rank() == 0\ndist.broadcast_object_list(broadcast_flag)\n"
        f"if {condition}:\n    pass\n"
    )
    ctx = context(code)
    assert not ctx.rank_predicates.is_rank_dependent(ctx.index.nodes(cst.If)[0].test)


def test_rank_zero_only_decorator() -> None:
    ctx = context(
        "from lightning.pytorch.utilities import rank_zero_only\n"
        "@rank_zero_only\ndef save():\n    pass\n"
        "def other():\n    pass\n"
    )
    save, other = ctx.index.nodes(cst.FunctionDef)
    assert ctx.rank_predicates.is_rank_zero_only(save)
    assert not ctx.rank_predicates.is_rank_zero_only(other)


def test_forward_paths_follow_calls_and_bases() -> None:
    ctx = context(
        "from torch import nn\n"
        "def helper():\n    pass\n"
        "class Base(nn.Module):\n    pass\n"
        "class Net(Base):\n"
        "    def forward(self, x):\n        return self._inner(x)\n"
        "    def _inner(self, x):\n        return helper()\n"
        "    def unused(self):\n        pass\n"
        "class Plain:\n    def forward(self):\n        pass\n"
    )
    names = {f.name.value: f for f in ctx.index.nodes(cst.FunctionDef)}
    on_path = {f.name.value for f in ctx.forward_paths.functions}
    assert on_path == {"forward", "_inner", "helper"}
    assert ctx.forward_paths.functions[names["helper"]].describe() == (
        "`helper` (called from `Net.forward`)"
    )


def test_collective_needles_cover_the_catalogue() -> None:
    """A file holding a catalogued collective always contains a pre-filter needle: the
    qualified names need an import of ``torch.distributed`` or ``deepspeed``, and the
    framework forms name their receiver (or the method itself is a needle)."""
    from ddplint.code.collectives import catalogue, kinds

    needles = COLLECTIVE_NEEDLES
    qualified = [
        *(f"torch.distributed.{name}" for name in catalogue.TORCH_COLLECTIVES),
        *kinds.DEVICE_MESH_CREATORS,
        *catalogue.CHECKPOINT_FUNCTIONS,
        *catalogue.FSDP_COLLECTIVES,
    ]
    for name in qualified:
        assert name.startswith(("torch.distributed", "deepspeed")), name
    receivers = {"strategy", "fabric", "accelerator"}
    assert receivers <= set(needles)
    for kind, method in kinds._CHECKPOINT_METHODS:
        assert kind in receivers or method in needles or "save_checkpoint" in needles, kind
    assert {"all_gather", "sync_dist", "save_checkpoint"} <= set(needles)


def test_collective_call_needles_cover_the_catalogue() -> None:
    """Every spelling of a catalogued collective names its function or method somewhere
    in the file (an aliased import names it in the import), so one of these needles is
    always there."""
    from ddplint.code.collectives import catalogue, kinds

    names = [
        *catalogue.TORCH_COLLECTIVES,
        *(name.rsplit(".", 1)[-1] for name in kinds.DEVICE_MESH_CREATORS),
        *(name.rsplit(".", 1)[-1] + "(" for name in catalogue.CHECKPOINT_FUNCTIONS),
        *(name.rsplit(".", 1)[-1] for name in catalogue.FSDP_COLLECTIVES),
        *(f"{method}(" for _, method in kinds._CHECKPOINT_METHODS),
        *kinds._STRATEGY_METHODS,
        *kinds._ACCELERATE_METHODS,
        *kinds._LIGHTNING_MODULE_METHODS,
        "sync_dist",
    ]
    for name in names:
        assert any(needle in name for needle in COLLECTIVE_CALL_NEEDLES), name
