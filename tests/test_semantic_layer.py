"""The LibCST catalogue: names through imports, collectives and their needles (the
rank and step questions are the analysis core's: ``tests/analysis``)."""

from __future__ import annotations

import libcst as cst
import pytest

from ddplint.code.collectives.catalogue import Collective, classify_call
from ddplint.code.collectives.receivers import Receivers
from ddplint.code.context import CodeContext
from ddplint.needles import COLLECTIVE_CALL_NEEDLES, COLLECTIVE_NEEDLES
from ddplint.settings import LintOptions
from ddplint.source import SourceFile

OPTIONS = LintOptions(selected=(), project_root=".")


def context(code: str) -> CodeContext:
    return CodeContext.parse(SourceFile.decode("t.py", code.encode()), OPTIONS)


def collectives(ctx: CodeContext) -> list[Collective]:
    """The catalogued collectives of the snippet's calls."""
    receivers = Receivers(ctx.index, ctx.names)
    found = (classify_call(call, ctx.names, receivers) for call in ctx.index.nodes(cst.Call))
    return [collective for collective in found if collective is not None]


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
    assert ctx.names.qualified_name(ctx.index.nodes(cst.Call)[-1].func) == expected


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
    (collective,) = collectives(ctx)
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
    assert collectives(context(code)) == []


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
