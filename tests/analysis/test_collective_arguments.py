"""The core's question of collective arguments every rank must pass alike
(``arguments.disagreeing_arguments``), on its own and through pairing."""

from __future__ import annotations

import ast
import textwrap

import pytest

from ddplint.analysis.arguments import disagreeing_arguments
from ddplint.analysis.functions import ModuleAnalysis

HEADER = """
import torch
import torch.distributed as dist
from torch.distributed import ReduceOp
"""


def _found(source: str) -> list[tuple[int, str, str]]:
    """(line in the body, keyword, what) of each disagreement."""
    text = HEADER + textwrap.dedent(source)
    offset = len(HEADER.splitlines())
    found = disagreeing_arguments(ModuleAnalysis(ast.parse(text)))
    return sorted((d.collective.line - offset, d.keyword, d.what) for d in found)


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ("dist.broadcast(t, src=rank)", ("src", "value")),
        ("dist.broadcast(t, rank)", ("src", "value")),
        ("dist.scatter(t, None, rank % 2)", ("src", "value")),
        ("dist.broadcast(t, 0, group_src=rank)", ("group_src", "value")),
        ("dist.all_reduce(t, op=ReduceOp.MAX if rank else ReduceOp.SUM)", ("op", "value")),
        ("dist.all_reduce(torch.zeros(rank))", ("tensor", "shape")),
        ("dist.reduce_scatter_tensor(out, torch.zeros(rank))", ("input", "shape")),
        ("dist.all_to_all_single(out, torch.zeros(rank))", ("input", "shape")),
        # each rank makes only its own group: groups are named by the order of the calls
        ("dist.new_group(list(range(rank // 2 * 2, rank // 2 * 2 + 2)))", ("ranks", "members")),
        ("dist.new_group(ranks=[rank, rank + 1])", ("ranks", "members")),
        (
            "dist.new_subgroups_by_enumeration([[rank, rank ^ 1]])",
            ("ranks_per_subgroup_list", "members"),
        ),
        ("dist.new_group([rank, 0], use_local_synchronization=False)", ("ranks", "members")),
    ],
)
def test_an_argument_that_reads_the_rank_disagrees(call: str, expected: tuple[str, str]) -> None:
    source = f"""
    def f(t, out):
        rank = dist.get_rank()
        {call}
    """
    assert [(keyword, what) for _, keyword, what in _found(source)] == [expected]


@pytest.mark.parametrize(
    "call",
    [
        "dist.broadcast(t, src=0)",
        "dist.broadcast(t, src=dist.get_world_size() - 1)",
        "dist.broadcast(t, src=rank, group=tp_group)",  # the group follows the rank
        "dist.all_to_all_single(out, torch.zeros(rank), [1, 2], [2, 1])",  # split sizes
        "dist.all_reduce(torch.tensor([rank]))",  # numbers differ, the shape does not
        "dist.send(t, dst=rank + 1)",  # point to point: the peer is per rank
        "dist.all_gather_object(out, list(range(rank)))",  # objects of any size
        "dist.new_group(list(range(0, dist.get_world_size(), 2)))",  # the same on every rank
        "dist.new_group([rank])",  # a group of one: no peer whose set-up could cross
        "dist.new_group([rank, rank ^ 1], use_local_synchronization=True)",  # named by members
    ],
)
def test_an_argument_every_rank_passes_alike_agrees(call: str) -> None:
    source = f"""
    def f(t, out, tp_group):
        rank = dist.get_rank()
        {call}
    """
    assert _found(source) == []


def test_a_root_agreed_by_a_collective_agrees() -> None:
    source = """
    def f(t):
        best = torch.tensor(dist.get_rank())
        dist.all_reduce(best, op=ReduceOp.MAX)
        dist.broadcast(t, src=int(best.item()))
    """
    assert _found(source) == []


@pytest.mark.parametrize(
    ("imports", "gathered", "expected"),
    [
        # a library's gather returns what every rank gathered: the same everywhere
        ("from composer.utils import dist as cdist", "cdist.all_gather_object(mine)", []),
        ("from accelerate.utils import gather_object", "gather_object(mine)", []),
        # an unknown function of this rank's members carries them
        ("from mylib import exchange", "exchange(mine)", [("ranks_per_subgroup_list", "members")]),
    ],
)
def test_members_gathered_by_a_library_agree(
    imports: str, gathered: str, expected: list[tuple[str, str]]
) -> None:
    source = f"""
    {imports}

    def f():
        rank = dist.get_rank()
        mine = tuple(range(rank // 4 * 4, rank // 4 * 4 + 4))
        layout = list(set({gathered}))
        return dist.new_subgroups_by_enumeration(layout)
    """
    assert [(keyword, what) for _, keyword, what in _found(source)] == expected


def test_two_ways_with_other_roots_disagree_at_the_first() -> None:
    source = """
    def f(t):
        if dist.get_rank() == 0:
            dist.reduce(t, dst=0)
        else:
            dist.reduce(t, dst=1)
    """
    assert _found(source) == [(4, "dst", "value")]
    assert _found(source.replace("dst=1", "0")) == []


def test_complementary_tests_with_other_ops_disagree() -> None:
    source = """
    def f(t, main):
        rank = dist.get_rank()
        if rank == 0:
            dist.all_reduce(t, op=ReduceOp.MAX)
        dist.barrier()
        if rank != 0:
            dist.all_reduce(t)
    """
    assert _found(source) == []  # another order: DDP219's question, not this one
    moved = source.replace("        dist.barrier()\n", "")
    assert _found(moved) == [(5, "op", "value")]


@pytest.mark.parametrize(
    ("groups", "expected"),
    [(("group=ga", ""), [(4, "group", "value")]), (("group=ga", "group=gb"), [])],
)
def test_the_default_group_on_one_way_and_a_named_one_on_the_other_disagree(
    groups: tuple[str, str], expected: list[tuple[int, str, str]]
) -> None:
    mine, theirs = groups
    source = f"""
    def f(t, ga, gb):
        if dist.get_rank() < 4:
            dist.all_reduce(t, {mine})
        else:
            dist.all_reduce(t, {theirs})
    """
    assert _found(source) == expected
