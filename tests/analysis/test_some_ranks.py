"""Collectives only some ranks reach: rank-class partings (DDP201) and collectives in
an ``except`` handler that only the raising ranks run (DDP206)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.some_ranks import handler_collectives, rank_class_partings


def _analysis(source: str) -> ModuleAnalysis:
    return ModuleAnalysis(ast.parse(textwrap.dedent(source)))


HELPER = """
import torch
import torch.distributed as dist

def mean_if_tensor(value):
    if isinstance(value, torch.Tensor):
        dist.all_reduce(value)
    return value

def report(loss):
    if dist.get_rank() == 0:
        print(mean_if_tensor(ARGUMENT))
"""


@pytest.mark.parametrize(
    ("argument", "parts"),
    [("loss.detach()", True), ("float(loss)", False), ("loss.item()", False), ("0.5", False)],
)
def test_a_tensor_only_helper_handed_a_plain_value_issues_nothing(
    argument: str, parts: bool
) -> None:
    partings = rank_class_partings(_analysis(HELPER.replace("ARGUMENT", argument)))
    assert [p.missed.name for p in partings] == (["all_reduce"] if parts else [])


def test_a_rank_class_parting_names_the_collective_and_its_rank_test() -> None:
    source = """
    import torch.distributed as dist

    def prepare(path):
        if dist.get_rank() != 0:
            dist.barrier()
            return path
        return path
    """
    (parting,) = rank_class_partings(_analysis(source))
    assert parting.missed.name == "barrier" and parting.missed.line == 6
    assert isinstance(parting.test, ast.If) and parting.test.lineno == 5


HANDLER = """
import torch
import torch.distributed as dist

def step(model, batch, flag):
    model.train()
    try:
        loss = model(batch).sum()
        loss.backward()
        BODY
    except torch.cuda.OutOfMemoryError:
        dist.all_reduce(flag)
        ENDING
    return flag
"""


@pytest.mark.parametrize(
    ("body", "ending", "reported"),
    [
        ("pass", "pass", True),
        ("pass", "raise", False),  # a loud end: the launcher stops every rank
        ("pass", "raise RuntimeError('failed')", False),
        ("dist.all_reduce(flag)", "pass", False),  # both ways issue it: paired
        ("dist.barrier()", "pass", True),  # another kind on the other way
    ],
)
def test_a_handler_collective_is_reported_unless_loud_or_paired(
    body: str, ending: str, reported: bool
) -> None:
    source = HANDLER.replace("BODY", body).replace("ENDING", ending)
    found = handler_collectives(_analysis(source))
    assert [f.collective.name for f in found] == (["all_reduce"] if reported else [])


def test_a_try_on_shared_values_raises_on_every_rank_or_none() -> None:
    source = """
    import torch
    import torch.distributed as dist

    def load(path, flag):
        try:
            state = torch.load(path)
        except FileNotFoundError:
            dist.all_reduce(flag)
            state = None
        return state
    """
    assert handler_collectives(_analysis(source)) == []
