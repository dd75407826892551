"""Rank reachability: guards, collectives reached through calls, and the balance checks
that keep correct code quiet."""

from __future__ import annotations

import libcst as cst
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddplint.code.context import CodeContext
from ddplint.code.ranks.rank_conditions import GLOBAL_ZERO, Atom, Not, Shared, evaluate
from ddplint.settings import LintOptions
from ddplint.source import SourceFile

OPTIONS = LintOptions(selected=(), project_root=".")
HEADER = (
    "import os\nimport torch.distributed as dist\n"
    "from lightning.pytorch.utilities import rank_zero_only\n"
)


def context(code: str) -> CodeContext:
    return CodeContext.parse(SourceFile.decode("t.py", (HEADER + code).encode()), OPTIONS)


def call_at(ctx: CodeContext, text: str) -> cst.Call:
    """The call whose source starts with ``text`` (the last one, for repeated calls)."""
    found = [c for c in ctx.index.nodes(cst.Call) if ctx.node_text(c).startswith(text)]
    assert found, text
    return found[-1]


@pytest.mark.parametrize(
    ("code", "kind", "condition"),
    [
        ("if dist.get_rank() == 0:\n    dist.barrier()\n", "branch", "dist.get_rank() == 0"),
        ("if rank == 0:\n    pass\nelse:\n    dist.barrier()\n", "else", "rank == 0"),
        ("if rank == 0:\n    pass\nelif x:\n    dist.barrier()\n", "else", "rank == 0"),
        ("y = dist.barrier() if rank == 0 else None\n", "branch", "rank == 0"),
        ("rank == 0 and dist.barrier()\n", "and", "rank == 0"),
        ("rank == 0 or dist.barrier()\n", "or", "rank == 0"),
        ("while rank == 0:\n    dist.barrier()\n", "branch", "rank == 0"),
        (
            "def f():\n    if rank != 0:\n        return\n    dist.barrier()\n",
            "early_exit",
            "rank != 0",
        ),
        (
            "def f(xs):\n    for x in xs:\n        if rank != 0:\n            continue\n"
            "        dist.barrier()\n",
            "early_exit",
            "rank != 0",
        ),
        ("@rank_zero_only\ndef f():\n    dist.barrier()\n", "decorator", None),
        ("def g():\n    pass\nrank_zero_only(g)()\ndist.barrier()\n", None, None),
    ],
)
def test_guard_kinds(code: str, kind: str | None, condition: str | None) -> None:
    ctx = context(code)
    guard = ctx.rank_reachability.guard_of(call_at(ctx, "dist.barrier"))
    if kind is None:
        assert guard is None
        return
    assert guard is not None and guard.kind == kind
    if condition is not None:
        assert guard.condition is not None and ctx.node_text(guard.condition) == condition


@pytest.mark.parametrize(
    "code",
    [
        # `continue` inside an inner loop does not leave the outer statement.
        "def f(xs):\n    for x in xs:\n        if rank != 0:\n            continue\n"
        "    dist.barrier()\n",
        # an error path: a rank that raises ends the run
        "def f():\n    if rank == 0:\n        raise ValueError()\n    dist.barrier()\n",
        "if world_size > 1:\n    dist.barrier()\n",
        "if dist.is_initialized():\n    dist.barrier()\n",
        "def f(world_size):\n    for rank in range(world_size):\n        if rank == 0:\n"
        "            dist.barrier()\n",
        "def f(rank=None):\n    if rank is None:\n        dist.barrier()\n",
        "def f(sizes):\n    r = dist.get_rank()\n    if sizes[r] > 0:\n        dist.barrier()\n",
    ],
)
def test_not_guarded(code: str) -> None:
    ctx = context(code)
    assert ctx.rank_reachability.guard_of(call_at(ctx, "dist.barrier")) is None


def test_wrapper_call_is_guarded() -> None:
    ctx = context("def g():\n    dist.barrier()\nrank_zero_only(g)()\n")
    wrapper = call_at(ctx, "rank_zero_only(g)()")
    guard = ctx.rank_reachability.guard_of(wrapper)
    assert guard is not None and guard.kind == "wrapper"
    assert [r.collective.api for r in ctx.rank_reachability.reached_by_call(wrapper)] == [
        "torch.distributed.barrier"
    ]


def test_collectives_reached_through_calls_and_cycles() -> None:
    ctx = context(
        "class Saver:\n"
        "    def _flush(self):\n        dist.barrier()\n        self._again()\n"
        "    def _again(self):\n        self._flush()\n"
        "    def _save(self):\n        helper()\n        self._flush()\n"
        "def helper():\n    dist.all_reduce(t)\n"
    )
    functions = {f.name.value: f for f in ctx.index.nodes(cst.FunctionDef)}
    reached = ctx.rank_reachability.collectives_reached(functions["_save"])
    assert [r.collective.api for r in reached] == [
        "torch.distributed.all_reduce",
        "torch.distributed.barrier",
    ]
    assert [f.name.value for f in reached[1].chain] == ["_flush"]
    assert ctx.rank_reachability.collectives_reached(functions["_again"])


@pytest.mark.parametrize(
    "code",
    [
        "if dist.get_rank() == 0:\n    dist.broadcast_object_list(o, src=0)\n"
        "else:\n    dist.broadcast_object_list(o, src=0)\n",
        "is_main = dist.get_rank() == 0\nif not is_main:\n    dist.barrier()\nload()\n"
        "if is_main:\n    dist.barrier()\n",
        "if local_rank not in [-1, 0]:\n    dist.barrier()\nload()\n"
        "if local_rank == 0:\n    dist.barrier()\n",
        "if trainer.is_global_zero and epoch > 2:\n    dist.barrier()\n"
        "if dist.get_rank() != 0 and epoch > 2:\n    dist.barrier()\n",
        "g = dist.new_group([0])\nif dist.get_rank() == 0:\n    dist.barrier(group=g)\n",
        "g = dist.new_group(ranks)\nif dist.get_rank() in ranks:\n    dist.barrier(group=g)\n",
        "def f():\n    if dist.get_rank() == 0:\n        print('x')\n        return\n"
        "    print('y')\n",
    ],
)
def test_balanced_code_is_not_divergent(code: str) -> None:
    ctx = context(code + "dist.all_reduce(last)\n")
    reachability = ctx.rank_reachability
    for call in ctx.collectives:
        assert reachability.divergent_guard(call) is None, ctx.node_text(call)


@pytest.mark.parametrize(
    ("code", "target"),
    [
        ("if dist.get_rank() == 0:\n    dist.barrier()\n", "dist.barrier"),
        (
            "if dist.get_rank() == 0:\n    dist.broadcast(t, 0)\nelse:\n    dist.all_reduce(t)\n",
            "dist.broadcast",
        ),
        (
            "g = dist.new_group([0, 1])\nif dist.get_rank() == 0:\n    dist.barrier(group=g)\n",
            "dist.barrier",
        ),
        # the inner `if` is balanced, the outer one is not
        (
            "if rank < 2:\n    if rank == 0:\n        dist.barrier()\n    else:\n"
            "        dist.barrier()\n",
            "dist.barrier",
        ),
        # the paired guard issues a different collective
        (
            "if not is_main:\n    dist.barrier()\nif is_main:\n    dist.all_reduce(t)\n",
            "dist.barrier",
        ),
    ],
)
def test_divergent(code: str, target: str) -> None:
    ctx = context("is_main = dist.get_rank() == 0\n" + code)
    assert ctx.rank_reachability.divergent_guard(call_at(ctx, target)) is not None


def test_broadcast_makes_a_flag_uniform() -> None:
    ctx = context(
        "def f(found):\n"
        "    flag = found if dist.get_rank() == 0 else False\n"
        "    flag = trainer.strategy.broadcast(flag)\n"
        "    if flag:\n        dist.barrier()\n"
        "    objs = [found if dist.get_rank() == 0 else None]\n"
        "    dist.broadcast_object_list(objs, src=0)\n"
        "    if objs:\n        dist.barrier()\n"
    )
    assert all(ctx.rank_reachability.guard_of(c) is None for c in ctx.collectives)


def test_conditions_share_atoms() -> None:
    ctx = context(
        "a = trainer.is_global_zero\nb = dist.get_rank() != 0\nc = is_global_rank_zero()\n"
        "d = int(os.environ['RANK']) > 0\ne = rank == 0 and epoch > 2\n"
    )
    conditions = ctx.rank_reachability.conditions
    values = [a.value for a in ctx.index.nodes(cst.Assign)]
    formulas = [conditions.formula(v) for v in values]
    assert formulas[:4] == [GLOBAL_ZERO, Not(GLOBAL_ZERO), GLOBAL_ZERO, Not(GLOBAL_ZERO)]
    mixed = formulas[4]
    assert evaluate(mixed, frozenset()) is False  # type: ignore[arg-type]
    assert evaluate(mixed, frozenset({GLOBAL_ZERO.key})) == Shared("epoch > 2")  # type: ignore[arg-type]
    assert isinstance(GLOBAL_ZERO, Atom)


def test_log_with_rank_zero_only_is_not_a_collective() -> None:
    ctx = context("self.log('a', v, sync_dist=True, rank_zero_only=True)\n")
    assert ctx.collectives == {}


def test_describe_names_the_guard() -> None:
    ctx = context(
        "def f():\n    if not trainer.is_global_zero:\n        return\n    dist.barrier()\n"
    )
    reachability = ctx.rank_reachability
    guard = reachability.guard_of(call_at(ctx, "dist.barrier"))
    assert guard is not None
    text = reachability.describe(guard)
    assert text == "only on ranks that do not `return` at line 6 under `not trainer.is_global_zero`"


# -- generated programs ------------------------------------------------------------

_LEAVES = ["dist.barrier()", "dist.all_reduce(t)", "work()", "return", "continue", "break"]
_TESTS = ["dist.get_rank() == 0", "is_main", "epoch > 2", "local_rank != 0"]


@st.composite
def _blocks(draw: st.DrawFn, depth: int = 0, mirrored: bool = False) -> list[str]:
    """Random statement lists; with ``mirrored``, every ``if`` has equal arms."""
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["leaf", "if", "for"] if depth < 3 else ["leaf"]))
        if kind == "leaf":
            lines.append(draw(st.sampled_from(_LEAVES)))
            continue
        inner = draw(_blocks(depth + 1, mirrored))
        if kind == "for":
            lines += ["for t in ts:", *("    " + line for line in inner)]
            continue
        other = inner if mirrored else draw(_blocks(depth + 1, mirrored))
        lines += [f"if {draw(st.sampled_from(_TESTS))}:", *("    " + line for line in inner)]
        lines += ["else:", *("    " + line for line in other)]
    return lines


def _program(lines: list[str]) -> str:
    body = "\n".join("        " + line for line in lines)
    return (
        f"is_main = dist.get_rank() == 0\ndef f(ts, epoch, local_rank):\n    for t in ts:\n{body}\n"
    )


@settings(max_examples=60, deadline=None)
@given(_blocks(mirrored=True))
def test_mirrored_arms_are_never_divergent(lines: list[str]) -> None:
    ctx = context(_program(lines))
    for call in ctx.collectives:
        assert ctx.rank_reachability.divergent_guard(call) is None


@settings(max_examples=60, deadline=None)
@given(_blocks())
def test_every_guarded_collective_is_described(lines: list[str]) -> None:
    ctx = context(_program(lines))
    reachability = ctx.rank_reachability
    for call in ctx.collectives:
        guard = reachability.divergent_guard(call)
        if guard is not None:
            assert guard in reachability.guards_of(call)
            assert reachability.describe(guard).startswith("only ")


def test_the_rank_read_only_from_the_launchers_variables_passes_the_prefilter() -> None:
    """A module that spells the rank only as the launcher's variable (``RANK``,
    ``LOCAL_RANK``) reaches the rank rules; one with no rank word does not."""
    from ddplint.rules import rule_class

    environment = b'import os\nimport torch.distributed as dist\nWHO = int(os.environ["RANK"])\n'
    environment += b"if WHO == 0:\n    dist.barrier()\n"
    nothing = b"import torch.distributed as dist\nif dist.is_initialized():\n    dist.barrier()\n"
    rule = rule_class("DDP201")
    assert rule.prefilter(environment)
    assert not rule.prefilter(nothing)
