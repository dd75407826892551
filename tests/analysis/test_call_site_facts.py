"""What a call tells its callee: constant arguments and defaults settle the callee's
tests, compound ones included, so a collective behind ``not evaluate`` counts only
where the call leaves it reachable."""

from __future__ import annotations

import ast
import textwrap

import pytest

from ddplint.analysis.functions import ModuleAnalysis, truth_under


@pytest.mark.parametrize(
    ("test", "facts", "truth"),
    [
        ("not evaluate", {("evaluate", True)}, False),
        ("rank > 0 and not evaluate", {("evaluate", True)}, False),
        ("rank > 0 and not evaluate", {("evaluate", False)}, None),
        ("rank > 0 or self.force", {("self.force", True)}, True),
        ("a and b", {("a", True), ("b", True)}, True),
        ("a or b", {("a", False), ("b", False)}, False),
        ("a or b", {("a", False)}, None),
        # A literal the parameter holds settles comparisons with literals.
        ("rank not in [-1, 0]", {("rank := -1", True)}, False),
        ("rank not in [-1, 0]", {("rank := 3", True)}, True),
        ("rank == 0", {("rank := -1", True)}, False),
        ("rank != -1", {("rank := -1", True)}, False),
        ("rank > 0", {("rank := 2", True)}, True),
        ("mode in ('train', 'val')", {("mode := 'test'", True)}, False),
        ("rank > 0", {("rank := 'a'", True)}, None),
        ("rank in [-1, other]", {("rank := -1", True)}, None),
        ("rank == 0", {("world := 0", True)}, None),
    ],
)
def test_a_test_is_settled_by_the_parts_facts_know(
    test: str, facts: set[tuple[str, bool]], truth: bool | None
) -> None:
    assert truth_under(ast.parse(test, mode="eval").body, frozenset(facts)) is truth


LOADER = """
import torch.distributed as dist

def load(args, evaluate=False):
    if args.rank > 0 and not evaluate:
        dist.barrier()
    return args.data

def caller(args):
    {call}
"""


@pytest.mark.parametrize(
    ("call", "reaches"),
    [
        ("load(args, evaluate=True)", False),
        ("load(args, True)", False),
        ("load(args)", True),  # the default leaves the barrier reachable
        ("load(args, evaluate=False)", True),
        ("load(*args)", True),  # where the arguments go cannot be seen
    ],
)
def test_a_call_settles_its_callees_tests(call: str, reaches: bool) -> None:
    tree = ast.parse(textwrap.dedent(LOADER.format(call=call)))
    analysis = ModuleAnalysis(tree)
    caller = next(
        n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "caller"
    )
    facts = analysis.function(caller)
    reached = [effect for effects in facts.effects.values() for effect, _ in effects]
    assert bool(reached) is reaches


ZERO_FIRST = """
import torch.distributed as dist

def zero_first(local_rank):
    if local_rank not in [-1, 0]:
        dist.barrier()
    yield
    if local_rank == 0:
        dist.barrier()

def load(path, rank=-1):
    with zero_first(rank):
        return path

def caller(rank):
    {call}
"""


@pytest.mark.parametrize(
    ("call", "reaches"),
    [
        ("zero_first(-1)", False),
        ("zero_first(0)", True),
        ("zero_first(2)", True),
        ("zero_first(rank)", True),
        ("load('p', rank=-1)", False),
        ("load('p')", False),  # the default, handed on to zero_first
        ("load('p', 0)", True),
        ("load('p', rank)", True),
    ],
)
def test_a_literal_handed_on_settles_comparisons_in_the_callee(call: str, reaches: bool) -> None:
    tree = ast.parse(textwrap.dedent(ZERO_FIRST.format(call=call)))
    caller = next(
        n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "caller"
    )
    facts = ModuleAnalysis(tree).function(caller)
    reached = [effect for effects in facts.effects.values() for effect, _ in effects]
    assert bool(reached) is reaches
