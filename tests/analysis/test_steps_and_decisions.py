"""The core's questions for optimizer steps on some ranks (``steps_on_some_ranks``) and
for partings on a flag some ranks set (``decided_flag``): what steps is known by what
made it, never by its name; pairing and agreement are correct by construction."""

from __future__ import annotations

import ast
import textwrap

import pytest

from ddplint.analysis.decisions import decided_by_some_ranks, decided_flag
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.questions import where_ranks_part
from ddplint.analysis.steps import steps_on_some_ranks

HEADER = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
"""


def _analysis(source: str) -> ModuleAnalysis:
    return ModuleAnalysis(ast.parse(HEADER + textwrap.dedent(source)))


def _step_lines(source: str) -> list[int]:
    header = HEADER.count("\n")
    return [p.step.lineno - header for p in steps_on_some_ranks(_analysis(source))]


MADE = """
def train(model, loader, trainer_opt):
    {make}
    for batch in loader:
        model(batch).backward()
        if dist.get_rank() == 0:
            {stepped}.step()
"""


@pytest.mark.parametrize(
    ("make", "stepped", "found"),
    [
        ("opt = torch.optim.SGD(model.parameters(), lr=0.1)", "opt", True),
        ("sched = torch.optim.lr_scheduler.StepLR(trainer_opt, 1)", "sched", True),
        ("scaler = torch.amp.GradScaler()", "scaler", True),
        ("engine, o, _, _ = deepspeed.initialize(model=model)", "engine", True),
        # Named like an optimizer, made by nothing known: not a step.
        ("optimizer = make_thing()", "optimizer", False),
        ("pass", "trainer_opt", False),
        # Named like nothing, made by an optimizer library: a step.
        ("thing = torch.optim.Adam(model.parameters())", "thing", True),
    ],
)
def test_what_steps_is_known_by_what_made_it(make: str, stepped: str, found: bool) -> None:
    source = "import deepspeed\n" + MADE.format(make=make, stepped=stepped)
    assert bool(_step_lines(source)) is found


def test_annotated_parameter_steps() -> None:
    source = """
    def update(opt: torch.optim.Optimizer, rank):
        if dist.get_rank() == 0:
            opt.step()
    """
    assert _step_lines(source) == [4]


@pytest.mark.parametrize(
    "guard",
    [
        "step % 10 == 0",  # periodic, the same on every rank
        "global_step < max_steps",  # a uniform counter against its budget
        "dist.get_world_size() > 1",  # the group's own size
        "flag.item() > 0",  # all-reduced just before the test
    ],
)
def test_uniform_tests_do_not_part(guard: str) -> None:
    source = f"""
    def train(net, loader, max_steps):
        model = DDP(net)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        global_step = 0
        for step, batch in enumerate(loader):
            loss = model(batch)
            loss.backward()
            flag = torch.isfinite(loss).float()
            dist.all_reduce(flag)
            if {guard}:
                opt.step()
            global_step += 1
    """
    assert _step_lines(source) == []


def test_same_step_on_both_arms_is_paired() -> None:
    paired = """
    def train(net, loader):
        model = DDP(net)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for batch in loader:
            model(batch).backward()
            if dist.get_rank() == 0:
                print("main")
                opt.step()
            else:
                opt.step()
    """
    assert _step_lines(paired) == []
    one_arm = paired.replace("            else:\n                opt.step()\n", "")
    assert _step_lines(one_arm) == [9]


def test_step_after_an_exit_on_model_output() -> None:
    source = """
    def train(net, loader):
        model = DDP(net)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for batch in loader:
            loss = model(batch)
            loss.backward()
            if loss.item() > 100:
                continue
            opt.step()
    """
    parting, *others = steps_on_some_ranks(_analysis(source))
    assert not others
    assert isinstance(parting.cause, ast.If) and parting.on_data


def test_a_test_where_ranks_part_in_collectives_is_left_to_that_question() -> None:
    source = """
    def train(net, loader):
        model = DDP(net)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for batch in loader:
            if dist.get_rank() == 0:
                model(batch).backward()
                opt.step()
    """
    assert _step_lines(source) == []
    assert where_ranks_part(_analysis(source))


FLAG = """
def fit(net, loader, evaluate):
    model = DDP(net)
    stop = torch.zeros(1)
    for epoch in range(10):
        for batch in loader:
            model(batch).backward()
        if dist.get_rank() == 0:
            stop = evaluate(model)
        {share}
        if stop:
            break
"""


def test_the_flag_some_ranks_set_is_named() -> None:
    analysis = _analysis(FLAG.format(share="pass"))
    (parting,) = where_ranks_part(analysis)
    assert decided_by_some_ranks(parting)
    found = decided_flag(analysis, parting)
    assert found is not None and found[0] == "stop"


def test_a_broadcast_flag_decides_alike() -> None:
    analysis = _analysis(FLAG.format(share="dist.broadcast(stop, src=0)"))
    assert where_ranks_part(analysis) == []


def test_a_rank_test_is_not_a_decided_flag() -> None:
    source = """
    def fit(net, loader):
        model = DDP(net)
        for batch in loader:
            if dist.get_rank() == 0:
                break
            model(batch).backward()
    """
    (parting,) = where_ranks_part(_analysis(source))
    assert not decided_by_some_ranks(parting)


@pytest.mark.parametrize(
    "exit_",
    [
        "assert torch.allclose(y, y2)",
        "if not torch.isfinite(y).all():\n            raise ValueError",
    ],
)
def test_a_loud_exit_on_model_output_parts_no_rank(exit_: str) -> None:
    source = f"""
    def check(net, ref, x):
        model = DDP(net)
        opt = torch.optim.Adam(model.parameters())
        y = model(x)
        y2 = ref(x)
        y.sum().backward()
        {exit_}
        opt.step()
    """
    assert _step_lines(source) == []
