"""The cheap screen of what may make the host wait for the device
(``analysis.wait_screen``) and the calls that may (``analysis.call_waits``), both ways."""

from __future__ import annotations

import ast
import textwrap

import pytest

from ddplint.analysis.call_waits import CallWaits
from ddplint.analysis.control_flow import own_nodes
from ddplint.analysis.module_nodes import ModuleNodes
from ddplint.analysis.names import Names
from ddplint.analysis.object_flow import ModuleCode
from ddplint.analysis.project import NoProject
from ddplint.analysis.wait_screen import group_nodes, may_wait

_HEADER = "import torch\nimport horovod.torch as hvd\nimport torch.distributed as dist\n"


def _screened(body: str) -> bool:
    module = ast.parse(
        _HEADER + "def f(x, y, m, n):\n" + textwrap.indent(textwrap.dedent(body), "    ")
    )
    names = Names(module)
    function = module.body[-1]
    return may_wait(group_nodes(own_nodes(function)), names.resolve)


@pytest.mark.parametrize(
    "body",
    [
        "return x.sum().item()",
        "return x[y != -1]",
        "keep = m > 0.5\nreturn x[keep]",
        "return x[~torch.isnan(y)]",
        "return torch.nonzero(m)",
        "return m.argwhere()",
        "return torch.where(m)",
        "if m.sum() > 0:\n    x = x + 1\nreturn x",
        "total = m.sum() + n.sum()\nif total == 0:\n    return None\nreturn x / total",
        "if not torch.isfinite(x).all():\n    return None\nreturn x",
        "return int(m.sum())",
        "return x * torch.tensor([0.5], device=x.device)",
        "return x * torch.eye(4).cuda()",
        "eye = torch.eye(n)\nreturn x @ eye.to(x.device)",
        "return torch.from_numpy(n).to(x.device)",
        "return hvd.allgather(x)",
        "torch.cuda.synchronize()\nreturn x",
        "dist.barrier()\nreturn x",
        "return x.cpu().numpy()",
        "return [v.tolist() for v in x]",
        "out = self.encoder(x)\nreturn out[out > 0].mean()",
        "out = self.encoder(x)\nif out.sum() > 0:\n    return out * 2\nreturn out",
    ],
)
def test_a_spelling_that_may_wait_is_screened_in(body: str) -> None:
    assert _screened(body)


@pytest.mark.parametrize(
    "body",
    [
        "return (x - y).pow(2).mean()",
        "return x[:, 0] + y[n]",
        "return torch.zeros(4, device=x.device) + x",
        "return x.to(y.device)",
        "return torch.eye(4).cuda(non_blocking=True) @ x",
        "if n > 0:\n    x = x * n\nreturn x",
        "total = len(m) + 1\nif total == 0:\n    return None\nreturn x / total",
        "return torch.where(m, x, y)",
        "return dist.all_reduce(x)",
        "return x.size(0) * len(y)",
        "n = int(m.sum())\nreturn self.decoder(x[:n])",
        "keep = x[y != -1]\nout = helper(keep)\nreturn out.mean()",
        "if n % 100 == 0:\n    print(x.item())\nreturn x",
        "if n > 3 and n % 10 == 0:\n    keep = x[x > 0]\nreturn x",
    ],
)
def test_kernels_host_values_and_early_waits_are_screened_out(body: str) -> None:
    # a wait followed by more of the work (a submodule, a helper) leaves it queued
    assert not _screened(body)


def _call_waits(source: str) -> tuple[CallWaits, dict[int, tuple[ast.Call, ast.AST]]]:
    module = ast.parse(textwrap.dedent(source))
    names = Names(module)
    code = ModuleCode(ModuleNodes(module), names)
    by_line = {call.lineno: (call, scope) for call, scope in code.calls}
    return CallWaits(code, names, NoProject()), by_line


def test_a_call_of_a_function_or_an_instance_whose_forward_may_wait() -> None:
    waits, calls = _call_waits(
        """
        import torch
        import horovod.torch as hvd
        from torch.nn.parallel import DistributedDataParallel as DDP

        def pick(x):
            return x[x > 0]

        def helper(x):
            return pick(x) * 2

        def plain(x):
            return x * 2

        class Counting(torch.nn.Module):
            def forward(self, x):
                return x.sum().item()

        class Plain(torch.nn.Module):
            def forward(self, x):
                return x * 2

        def train(x, other):
            model = DDP(Counting().cuda())
            quiet = Plain().cuda()
            a = helper(x)
            b = plain(x)
            c = model(x)
            d = quiet(x)
            e = other(x)
            f = hvd.allgather(x)
            g = hvd.allreduce_async(x)
        """
    )
    assert waits(*calls[26])  # helper -> pick: a mask index, two calls down
    assert not waits(*calls[27])
    assert waits(*calls[28])  # an instance of Counting, moved and wrapped
    assert not waits(*calls[29])
    assert not waits(*calls[30])  # a parameter: unknown, not said to wait
    assert waits(*calls[31])  # Horovod's allgather blocks until the result exists
    assert not waits(*calls[32])  # its asynchronous form does not
