"""How a way out of the process counts (an error status or an exception stops every
rank under torchrun; status 0 leaves the peers waiting), asserts the rank classes
cannot answer, and main-process-first barriers under separate complementary tests."""

from __future__ import annotations

import ast
import textwrap

import pytest

from ddplint.analysis.control_flow import ends_loudly
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.pairing import rank_classes_agree
from ddplint.analysis.questions import Parting, where_ranks_part

HEADER = """
import os
import sys
import torch
import torch.distributed as dist
"""


def _statement(source: str) -> ast.stmt:
    return ast.parse(source).body[0]


@pytest.mark.parametrize(
    ("statement", "loud"),
    [
        ("sys.exit(1)", True),
        ("sys.exit(-1)", True),
        ("sys.exit(True)", True),
        ("sys.exit('the loss is NaN')", True),
        ("sys.exit(f'the loss is {loss}')", True),
        ("sys.exit('loss %s' % loss)", True),
        ("sys.exit('loss {}'.format(loss))", True),
        ("sys.exit(2 if strict else 1)", True),
        ("exit(2)", True),
        ("quit(1)", True),
        ("os._exit(1)", True),
        ("os.abort()", True),
        ("raise SystemExit(1)", True),
        ("raise SystemExit('stopping')", True),
        ("raise RuntimeError('bad loss')", True),
        ("raise", True),
        ("assert ok, 'message'", True),
        ("sys.exit()", False),
        ("sys.exit(0)", False),
        ("sys.exit(None)", False),
        ("sys.exit(False)", False),
        ("sys.exit(main())", False),
        ("sys.exit(code)", False),
        ("sys.exit(0 if ok else 1)", False),
        ("exit()", False),
        ("os._exit(0)", False),
        ("raise SystemExit", False),
        ("raise SystemExit(0)", False),
        ("raise SystemExit()", False),
    ],
)
def test_an_error_status_ends_loudly_and_status_zero_quietly(statement: str, loud: bool) -> None:
    assert ends_loudly(_statement(statement)) is loud


def _partings(source: str) -> list[Parting]:
    return where_ranks_part(ModuleAnalysis(ast.parse(HEADER + textwrap.dedent(source))))


EXIT = """
def train(model, loader):
    for batch in loader:
        loss = model(batch).mean()
        if not torch.isfinite(loss):
            {leave}
        dist.all_reduce(loss)
"""


@pytest.mark.parametrize(
    ("leave", "parts"),
    [
        ("sys.exit(1)", False),
        ("sys.exit('non-finite loss')", False),
        ("os._exit(3)", False),
        ("raise SystemExit(1)", False),
        ("sys.exit(0)", True),
        ("sys.exit()", True),
        ("os._exit(0)", True),
        ("raise SystemExit", True),
        ("return", True),
    ],
)
def test_only_a_quiet_exit_parts_the_ranks(leave: str, parts: bool) -> None:
    partings = _partings(EXIT.format(leave=leave))
    assert bool(partings) is parts
    if parts:
        cause = partings[0].cause
        assert isinstance(cause, ast.stmt)
        assert ast.unparse(cause) == leave  # reported at the exit, not at the test


def _classes_agree(source: str) -> bool | None:
    analysis = ModuleAnalysis(ast.parse(HEADER + textwrap.dedent(source)))
    (scope,) = [s for s in analysis.scopes_with_collectives() if isinstance(s, ast.FunctionDef)]
    return rank_classes_agree(analysis.function(scope))


STAGGERED = """
def prepare(path):
    local_rank = int(os.environ["LOCAL_RANK"])
    if {enter}:
        dist.barrier()
    {between}
    data = open(path).read()
    if {leave}:
        dist.barrier()
    return data
"""


@pytest.mark.parametrize(
    ("enter", "leave", "agree"),
    [
        ("local_rank not in (-1, 0)", "local_rank == 0", True),
        ("local_rank > 0", "local_rank == 0", True),
        ("local_rank >= 1", "local_rank < 1", True),
        ("0 < local_rank", "0 == local_rank", True),
        ("local_rank != 0", "local_rank <= 0", True),
        ("local_rank >= 2", "local_rank == 0", False),  # rank 1 issues no barrier
        ("local_rank > 0", "local_rank > 0", False),  # the others issue two
    ],
)
def test_complementary_tests_pair_by_rank_class(enter: str, leave: str, agree: bool) -> None:
    source = STAGGERED.format(enter=enter, leave=leave, between="pass")
    assert _classes_agree(source) is agree


@pytest.mark.parametrize(
    ("between", "agree"),
    [
        ("assert local_rank < int(os.environ['WORLD_SIZE']), 'a rank outside the world'", True),
        ("assert local_rank % 2 == 0 or path, 'pairs of ranks'", True),
        ("if local_rank == 1:\n        dist.barrier()", False),
    ],
)
def test_an_assert_the_classes_cannot_answer_is_taken_as_passing(between: str, agree: bool) -> None:
    source = STAGGERED.format(enter="local_rank != 0", leave="local_rank == 0", between=between)
    assert _classes_agree(source) is agree


@pytest.mark.parametrize(
    ("name", "bound", "agree"),
    [
        ("leader", "dist.get_rank() == 0", True),
        ("follower", "dist.get_rank() == 0", True),  # the name does not decide
        ("is_leader", "dist.get_rank() % 2 == 0", False),  # ranks 2, 4... release too
        # The way on which the job is not distributed runs one process.
        ("main", "dist.get_rank() == 0 if dist.is_initialized() else True", True),
        ("main", "(dist.get_rank() if dist.is_initialized() else 0) == 0", True),
    ],
)
def test_a_name_bound_to_a_rank_test_is_that_test(name: str, bound: str, agree: bool) -> None:
    source = f"""
    def prepare(path):
        {name} = {bound}
        if not {name}:
            dist.barrier()
        data = open(path).read()
        if {name}:
            dist.barrier()
        return data
    """
    assert _classes_agree(source) is agree


def test_a_shared_test_taken_apart_is_not_compared() -> None:
    # One way goes round the loop at `continue`, the other broadcasts: a test on shared
    # values both classes take alike, though its parts leave no fact by name.
    source = """
    def train(model, loader, total, tick):
        rank = dist.get_rank()
        if rank != 0:
            dist.barrier()
        model.load()
        if rank == 0:
            dist.barrier()
        seen = 0
        for batch in loader:
            dist.all_reduce(batch)
            seen += 1
            done = seen >= total
            if (not done) and (seen % tick != 0):
                continue
            dist.broadcast(batch, src=0)
    """
    assert _classes_agree(source) is True
    assert _partings(source) == []
