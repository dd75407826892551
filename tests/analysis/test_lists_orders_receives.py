"""Collective-bug forms of the peer benchmark's classes, each both ways: dtype
conversions on one arm and list lengths (``disagreeing_arguments``), scatter / gather
lists on the wrong ranks (``misplaced_lists``), rank 0 and the others in another order
(``where_ranks_part``), both branches receiving first (``crossed_receives``), and a
loop over the item a rank picks from a ragged list."""

from __future__ import annotations

import ast
import textwrap

import pytest

from ddplint.analysis.arguments import disagreeing_arguments, misplaced_lists, outside_groups
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.point_to_point import crossed_receives
from ddplint.analysis.questions import where_ranks_part

HEADER = """
import torch
import torch.distributed as dist
"""


def _analysis(source: str) -> ModuleAnalysis:
    return ModuleAnalysis(ast.parse(HEADER + textwrap.dedent(source)))


@pytest.mark.parametrize(
    ("arm", "other", "expected"),
    [
        ("t = t.double()", "pass", ["dtype"]),
        ("t = t.to(torch.int64)", "pass", ["dtype"]),
        ("t = t.half()", "t = t.float()", ["dtype"]),
        ("t = t.double()", "t = t.double()", []),  # both arms alike
        ("t = t.cpu()", "pass", []),  # placement, no dtype
        ("t = torch.zeros(4)", "pass", []),  # made afresh against an unknown value
    ],
)
def test_a_conversion_on_one_arm_differs_in_dtype(arm: str, other: str, expected: list) -> None:
    source = f"""
    def f(t):
        if dist.get_rank() == 0:
            {arm}
        else:
            {other}
        dist.all_reduce(t)
    """
    assert [d.what for d in disagreeing_arguments(_analysis(source))] == expected


@pytest.mark.parametrize(
    ("made", "expected"),
    [
        ("torch.ones(4).half() if rank == 0 else torch.ones(4)", ["dtype"]),
        ("torch.ones(4) if rank == 0 else torch.ones(8)", ["shape"]),
        ("torch.ones(4).half() if rank == 0 else torch.zeros(4).half()", []),
        ("torch.ones(4) if rank == 0 else torch.zeros(4)", []),
    ],
)
def test_tensors_made_apart_by_a_conditional_expression(made: str, expected: list) -> None:
    source = f"""
    def f():
        rank = dist.get_rank()
        t = {made}
        dist.all_reduce(t)
    """
    assert [d.what for d in disagreeing_arguments(_analysis(source))] == expected


@pytest.mark.parametrize(
    ("length", "expected"),
    [("world + rank", ["tensor_list"]), ("world", [])],
)
def test_an_output_list_of_a_rank_dependent_length(length: str, expected: list) -> None:
    source = f"""
    def f(t):
        rank, world = dist.get_rank(), dist.get_world_size()
        outputs = [torch.zeros(4) for _ in range({length})]
        dist.all_gather(outputs, t)
    """
    assert [d.keyword for d in disagreeing_arguments(_analysis(source))] == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("dist.scatter(out, src=0)", [(True, "scatter_list", False)]),
        ("dist.scatter(out, [], src=0)", [(True, "scatter_list", False)]),
        ("dist.gather(t, [torch.zeros(2), torch.zeros(2)], dst=0)", [(False, "gather_list", True)]),
        ("dist.gather(t, [torch.zeros(2), torch.zeros(2)], dst=1)", [(True, "gather_list", True)]),
        ("dist.gather(t, pieces if dist.get_rank() == 0 else None, dst=0)", []),
        ("dist.gather(t, pieces, group_dst=0, group=g)", []),
        ("dist.scatter(out, pieces, src=root)", []),  # a root the walk cannot read
        ("dist.scatter(out, pieces, src=0)", []),  # a parameter: maybe None off the root
    ],
)
def test_root_lists_on_every_rank(body: str, expected: list) -> None:
    source = f"""
    def f(t, out, pieces, g, root):
        {body}
    """
    found = misplaced_lists(_analysis(source))
    assert [(m.zero, m.keyword, m.given) for m in found] == expected


@pytest.mark.parametrize(
    ("zero", "other", "expected"),
    [
        ("dist.scatter(out, src=0)", "dist.scatter(out, pieces, src=0)", [True]),
        ("dist.scatter(out, pieces, src=0)", "dist.scatter(out, src=0)", []),
    ],
)
def test_root_lists_on_rank_test_arms(zero: str, other: str, expected: list) -> None:
    source = f"""
    def f(out, pieces):
        if dist.get_rank() == 0:
            {zero}
        else:
            {other}
    """
    assert [m.zero for m in misplaced_lists(_analysis(source))] == expected


@pytest.mark.parametrize(
    ("middle", "expected"),
    [
        ("dist.broadcast(b, src=0)", [("all_reduce", "broadcast")]),
        ("dist.all_reduce(a)", []),  # the same collective: the ifs pair up
    ],
)
def test_complementary_rank_tests_in_another_order(middle: str, expected: list) -> None:
    source = f"""
    def f(a, b):
        rank = dist.get_rank()
        if rank == 0:
            dist.all_reduce(a)
        {middle}
        if rank != 0:
            dist.all_reduce(a)
    """
    partings = where_ranks_part(_analysis(source))
    orders = [
        (p.order[0].name, p.order[1].name) for p in partings if p.order is not None and p.classes
    ]
    assert orders == expected
    if expected:
        assert len(partings) == 1  # one finding per root cause


@pytest.mark.parametrize(
    ("zero", "other", "expected"),
    [
        ("dist.recv(t, src=1)", "dist.recv(t, src=0)", 1),
        ("dist.send(t, dst=1)", "dist.recv(t, src=0)", 0),
        ("request = dist.irecv(t, src=1)", "dist.recv(t, src=0)", 0),
        ("x = 1", "dist.recv(t, src=0)", 0),  # the first arm has no point to point
    ],
)
def test_both_branches_receive_first(zero: str, other: str, expected: int) -> None:
    source = f"""
    def f(t):
        if dist.get_rank() == 0:
            {zero}
            dist.send(t, dst=1)
        else:
            {other}
            dist.send(t, dst=0)
    """
    assert len(crossed_receives(_analysis(source))) == expected


def test_a_uniform_test_with_receives_on_both_branches_is_no_deadlock() -> None:
    source = """
    def f(t, first):
        if first:
            dist.recv(t, src=1)
        else:
            dist.recv(t, src=0)
    """
    assert crossed_receives(_analysis(source)) == []


@pytest.mark.parametrize(
    ("work", "expected"),
    [("[[1.0, 2.0], [3.0]]", [True]), ("torch.ones(3, 2)", [])],
)
def test_a_loop_over_the_item_a_rank_picks(work: str, expected: list) -> None:
    source = f"""
    def f():
        rank = dist.get_rank()
        work = {work}
        for value in work[rank]:
            dist.all_reduce(torch.tensor([value]))
    """
    assert [p.loop for p in where_ranks_part(_analysis(source))] == expected


@pytest.mark.parametrize(
    ("test", "expected"),
    [
        ("rank == 2", [(2, False)]),  # outside the group
        ("rank == 0", [(1, True)]),  # one member skips it
        ("rank < 2", []),
        ("rank in (0, 1)", []),
        ("rank % 2 == 0 and rank < 2", [(1, True)]),
        ("rank == other", []),  # reads more than the rank
    ],
)
def test_a_group_of_literal_members_under_rank_tests(test: str, expected: list) -> None:
    source = f"""
    def f(t, other):
        pair = dist.new_group([0, 1])
        rank = dist.get_rank()
        if {test}:
            dist.all_reduce(t, group=pair)
    """
    found = outside_groups(_analysis(source))
    assert [(o.rank, o.member) for o in found] == expected
