"""The divergence analysis (values that differ between ranks) and the exits built on it."""

from __future__ import annotations

import libcst as cst
import pytest

from ddplint.code.context import CodeContext
from ddplint.code.values.divergence import Source
from ddplint.settings import LintOptions
from ddplint.source import SourceFile

OPTIONS = LintOptions(selected=(), project_root=".")
PRELUDE = "import os, time\nimport torch\nimport torch.distributed as dist\n"


def context(code: str) -> CodeContext:
    return CodeContext.parse(SourceFile.decode("t.py", (PRELUDE + code).encode()), OPTIONS)


def last_if_source(code: str) -> Source | None:
    ctx = context(code)
    found = ctx.divergence.source_of(ctx.index.nodes(cst.If)[-1].test)
    return found.source if found is not None else None


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # what the function hands to a gathering collective is this rank's own
        (
            "def f(stats):\n    if not stats:\n        return {}\n"
            "    dist.all_gather_object([None] * 2, stats)\n",
            Source.CONTRIBUTED,
        ),
        # ... also through a conversion bound first, and on self
        (
            "class S:\n    def f(self):\n        if len(self.queue) == 0:\n            return 0\n"
            "        t = torch.tensor(len(self.queue))\n        dist.all_reduce(t)\n",
            Source.CONTRIBUTED,
        ),
        ("def f(start):\n    if time.time() - start > 5:\n        return\n", Source.PROBE),
        ("def f(p):\n    if os.path.exists(p):\n        return\n", Source.FILE_CHECK),
        (
            "def f(rank, x):\n    stop = False\n    if rank == 0:\n        stop = x > 1\n"
            "    if stop:\n        return\n",
            Source.DECIDED,
        ),
        ("def f():\n    if dist.get_rank() == 0:\n        return\n", Source.RANK),
    ],
)
def test_divergent_sources(body: str, expected: Source) -> None:
    assert last_if_source(body) is expected


@pytest.mark.parametrize(
    "body",
    [
        # a collective's result is common to every rank
        "def f(stats):\n    out = [None] * 2\n    dist.all_gather_object(out, stats)\n"
        "    if not any(out):\n        return {}\n",
        # in place: the name is common after the all_reduce
        "def f(t):\n    dist.all_reduce(t)\n    if t.item() > 0:\n        return\n",
        # a tensor collective requires the operand's shape to match on every rank
        "def f(grad):\n    if grad.numel() == 0:\n        return\n    dist.all_reduce(grad)\n",
        # configuration and the world size are the same everywhere
        "def f(cfg, x):\n    if cfg.enabled and dist.get_world_size() > 1:\n        return\n"
        "    dist.all_reduce(x)\n",
        # what only shapes the contribution (a config value in an expression) is not it
        "def f(cfg, x):\n    if cfg.scale > 1:\n        return\n"
        "    dist.all_reduce(x * cfg.scale)\n",
        # the flag set on rank 0 is broadcast before the test
        "def f(rank, x):\n    stop = False\n    if rank == 0:\n        stop = x > 1\n"
        "    flag = torch.tensor(stop)\n    dist.broadcast(flag, 0)\n    if flag.item():\n"
        "        return\n",
        # ... or reassigned on every rank from the broadcast list
        "def f(rank, x):\n    stop = False\n    if rank == 0:\n        stop = x > 1\n"
        "    objs = [stop]\n    dist.broadcast_object_list(objs, src=0)\n    stop = objs[0]\n"
        "    if stop:\n        return\n",
        # a value the analysis cannot place stays uniform
        "def f(items):\n    if not items:\n        return\n",
    ],
)
def test_uniform_values(body: str) -> None:
    assert last_if_source(body) is None


def test_self_flag_set_under_a_rank_guard_in_another_method() -> None:
    code = (
        "class T:\n"
        "    def check(self, loss):\n"
        "        if self.rank == 0 and loss > 1:\n            self.stop = True\n"
        "    def run(self, loader):\n"
        "        for b in loader:\n"
        "            if self.stop:\n                break\n"
        "            dist.barrier()\n"
    )
    assert last_if_source(code) is Source.DECIDED
    shared = code.replace(
        "    def run", "    def share(self):\n        dist.broadcast(self.stop, 0)\n    def run"
    )
    assert last_if_source(shared) is None


def test_divergent_exits_point_at_the_exit_and_what_it_skips() -> None:
    ctx = context(
        "def f(stats):\n    if not stats:\n        return {}\n"
        "    dist.all_gather_object([None] * 2, stats)\n"
    )
    (found,) = ctx.divergent_exits.find({Source.CONTRIBUTED})
    assert isinstance(found.statement, cst.Return)
    assert found.skipped.label == "torch.distributed.all_gather_object"
    assert found.divergent.key == "stats"
    assert ctx.divergent_exits.find({Source.PROBE}) == []


def test_an_augmented_assignment_does_not_make_its_operand_a_contribution() -> None:
    code = (
        "class G:\n    def f(self, grad):\n        self.buf += grad\n"
        "        if self.step % self.n == 0:\n            self.buf /= self.n\n"
        "            dist.all_reduce(self.buf)\n"
    )
    assert last_if_source(code) is None


def test_a_probe_counts_one_binding_away_only() -> None:
    near = "def f(start):\n    t = time.time()\n    if t - start > 5:\n        return\n"
    assert last_if_source(near) is Source.PROBE
    far = (
        "def f():\n    dirs = [d.name for d in os.scandir('.')]\n    last = dirs[-1]\n"
        "    step = int(last)\n    if step > 5:\n        return\n"
    )
    assert last_if_source(far) is None


def test_a_value_placed_on_this_rank_s_device_is_not_the_rank() -> None:
    code = (
        "def f(rank, path):\n    device = f'cuda:{rank}'\n"
        "    ckpt = torch.load(path, map_location=device)\n    step = ckpt['step']\n"
        "    if step == 0:\n        return\n"
    )
    assert last_if_source(code) is None


@pytest.mark.parametrize(
    "body",
    [
        # the size of a tensor-collective contribution matches on every rank
        "def f(params):\n    grads = [p.grad for p in params]\n    if not grads:\n        return\n"
        "    dist.all_reduce(torch.cat(grads))\n",
        "def f(val):\n    if val[0].numel() == 2:\n        dist.all_reduce(val[0])\n",
        # another attribute of the object whose attribute is reduced is not the contribution
        "def f(entry):\n    if entry.needs_avg:\n        dist.all_reduce(entry.values)\n",
    ],
)
def test_sizes_and_sibling_attributes_of_contributions_are_uniform(body: str) -> None:
    assert last_if_source(body) is None


def test_an_object_updated_on_some_ranks_only_decides_on_some_ranks() -> None:
    code = (
        "def fit(rank, loader, evaluate):\n    stopper = EarlyStopping(patience=3)\n"
        "    for epoch in range(10):\n        dist.barrier()\n"
        "        if rank == 0:\n            stopper(evaluate())\n"
        "        if stopper.early_stop:\n            break\n"
    )
    assert last_if_source(code) is Source.DECIDED
    everywhere = code.replace("        if rank == 0:\n            stopper(", "        stopper(")
    assert last_if_source(everywhere) is None


def test_a_one_element_display_carries_its_element() -> None:
    code = (
        "class S:\n    def f(self):\n        if len(self.queue) == 0:\n            return 0\n"
        "        t = torch.tensor([len(self.queue)], device='cuda')\n        dist.all_reduce(t)\n"
    )
    assert last_if_source(code) is Source.CONTRIBUTED
