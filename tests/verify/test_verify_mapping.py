"""Mapping runtime problems to static findings: the real DDP101 rule on a real file,
and constructed findings for each way a finding explains a problem."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ddplint.engine import lint_paths
from ddplint.finding import Finding, Severity
from ddplint.rules import all_rules
from ddplint.settings import LintOptions, load_settings, select_rules
from ddplint.verify.compare import RuntimeProblem
from ddplint.verify.frames import Frame
from ddplint.verify.mapping import map_findings
from ddplint.verify.scope import Execution

TRAIN = """\
import torch
import torch.distributed as dist
from torch import nn


class Encoder(nn.Module):
    def forward(self, x):
        torch.cuda.synchronize()
        return x * 2


def train(model, loader, optimizer, rank):
    for step, x in enumerate(loader):
        loss = model(x).sum()
        if torch.isnan(loss):
            continue
        loss.backward()
        if rank == 0:
            dist.barrier()
        if step > 10:
            break
        optimizer.step()


def rank_zero_only(function):
    return function


@rank_zero_only
def save(model):
    dist.barrier()
    return None


def evaluate(metric, rank):
    if rank != 0:
        return 0
    dist.all_reduce(metric)
"""


def line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(TRAIN)
    return tmp_path


def finding_at(path: Path, needle: str, rule: str = "DDP999") -> Finding:
    line = line_of(TRAIN, needle)
    column = TRAIN.splitlines()[line - 1].index(needle.strip()) + 1
    return Finding(rule, "test", Severity.ERROR, path.name, line, column, line, 80, "constructed")


def problem(path: Path, *needles: str) -> RuntimeProblem:
    frames = tuple(Frame(str(path), line_of(TRAIN, n), "train") for n in needles)
    return RuntimeProblem("divergence", "test problem", frames[0] if frames else None, frames)


def ran(path: Path, *needles: str, ranks: tuple[int, ...] = (1,)) -> Execution:
    """What line probes on every line of ``path`` would see: ``needles`` ran on ``ranks``."""
    lines = {(str(path), line_of(TRAIN, n)): {r: 1.0 for r in ranks} for n in needles}
    return Execution(lines, frozenset({str(path)}), complete=True)


def test_real_ddp101_finding_is_confirmed_by_a_hang_at_its_line(project: Path) -> None:
    settings = replace(load_settings(None, project), extend_select=("DDP101",))  # opt-in
    options = LintOptions(select_rules(settings, all_rules()), str(project))
    static = lint_paths(["train.py"], settings, options, use_cache=False)
    ddp101 = [f for f in static.findings if f.rule == "DDP101"]
    assert len(ddp101) == 1 and ddp101[0].line == line_of(TRAIN, "torch.cuda.synchronize()")
    script = project / "train.py"
    hang = problem(script, "torch.cuda.synchronize()", "loss = model(x).sum()")
    mapping = map_findings(ddp101, [hang], str(project))
    assert [c.finding.rule for c in mapping.confirmed] == ["DDP101"]
    assert mapping.confirmed[0].reason == "the flagged line is on the call path"
    assert mapping.new == () and mapping.not_reproduced == ()

    elsewhere = problem(script, "dist.barrier()", "loss.backward()")
    mapping = map_findings(ddp101, [elsewhere], str(project))
    assert mapping.confirmed == ()
    assert [f.rule for f in mapping.not_reproduced] == ["DDP101"]
    assert mapping.new == (elsewhere,)


def test_guard_statement_encloses_the_collective(project: Path) -> None:
    script = project / "train.py"
    guard = finding_at(script, "if rank == 0:")
    mapping = map_findings([guard], [problem(script, "dist.barrier()")], str(project))
    assert len(mapping.confirmed) == 1
    assert mapping.confirmed[0].reason == "the flagged statement encloses the call path"


def test_early_exit_confirms_only_the_code_it_skips_once_it_ran(project: Path) -> None:
    script = project / "train.py"
    exit_ran = ran(script, "if torch.isnan(loss):", "continue")
    for needle in ("continue", "if torch.isnan(loss):"):
        skip = finding_at(script, needle)
        after = map_findings([skip], [problem(script, "loss.backward()")], str(project), exit_ran)
        assert [c.reason for c in after.confirmed] == [
            "the flagged early exit ran on rank 1 and skips the call path"
        ]
        before = map_findings(
            [skip], [problem(script, "loss = model(x).sum()")], str(project), exit_ran
        )
        assert before.confirmed == () and len(before.new) == 1
        assert before.ran_not_cause == (skip,)


def test_an_early_exit_that_never_ran_confirms_nothing(project: Path) -> None:
    """The NaN guard was tested on every step, but the `continue` never ran: the hang
    after it is not its doing."""
    script = project / "train.py"
    tested = ran(script, "if torch.isnan(loss):", ranks=(0, 1))
    hang = [problem(script, "loss.backward()")]
    guard, skip = finding_at(script, "if torch.isnan(loss):"), finding_at(script, "continue")
    mapping = map_findings([guard, skip], hang, str(project), tested)
    assert mapping.confirmed == ()
    assert mapping.ran_not_cause == (guard,) and mapping.not_reached == (skip,)
    assert mapping.new == tuple(hang)
    # without probes nothing is known either way
    unknown = map_findings([guard, skip], hang, str(project))
    assert unknown.not_reproduced == (guard, skip) and unknown.not_reached == ()


def test_a_line_that_ran_on_one_side_of_the_split_only_confirms(project: Path) -> None:
    """A rank-0-only `log(sync_dist=True)` whose all-reduce a framework issues later,
    from its own frames: the flagged line ran on rank 0 and never on rank 1."""
    script = project / "train.py"
    flagged = finding_at(script, "dist.all_reduce(metric)")
    elsewhere = Frame(str(project / "fit.py"), 3, "fit")
    split = RuntimeProblem(
        "divergence", "x", elsewhere, (elsewhere,), ((0,), (1,)), ((0, 5.0), (1, 4.0))
    )
    before = ran(script, "dist.all_reduce(metric)", ranks=(0,))
    [confirmed] = map_findings([flagged], [split], str(project), before).confirmed
    assert confirmed.reason.startswith("line ") and "ran on rank 0 and never on rank 1" in (
        confirmed.reason
    )
    both = ran(script, "dist.all_reduce(metric)", ranks=(0, 1))
    assert map_findings([flagged], [split], str(project), both).confirmed == ()
    late = Execution(
        {(str(script), flagged.line): {0: 6.0}}, frozenset({str(script)}), complete=True
    )
    assert map_findings([flagged], [split], str(project), late).confirmed == ()


def test_break_skips_the_whole_loop_and_return_the_rest_of_the_function(project: Path) -> None:
    script = project / "train.py"
    stop = finding_at(script, "break")
    exits = ran(script, "break", "return 0")
    mapping = map_findings([stop], [problem(script, "loss = model(x).sum()")], str(project), exits)
    assert len(mapping.confirmed) == 1
    outside = map_findings([stop], [problem(script, "return function")], str(project), exits)
    assert outside.confirmed == ()
    early = finding_at(script, "return 0")
    later = map_findings([early], [problem(script, "dist.all_reduce(metric)")], str(project), exits)
    assert [c.reason for c in later.confirmed] == [
        "the flagged early exit ran on rank 1 and skips the call path"
    ]
    other_function = map_findings(
        [early], [problem(script, "loss.backward()")], str(project), exits
    )
    assert other_function.confirmed == ()


def test_flagged_decorator_covers_the_function_body(project: Path) -> None:
    script = project / "train.py"
    decorated = finding_at(script, "@rank_zero_only")
    in_body = Frame(str(script), line_of(TRAIN, "return None") - 1, "save")
    hang = RuntimeProblem("hang", "hang", in_body, (in_body,))
    assert len(map_findings([decorated], [hang], str(project)).confirmed) == 1


def test_other_files_never_confirm(project: Path, tmp_path: Path) -> None:
    (project / "other.py").write_text(TRAIN)
    guard = finding_at(project / "other.py", "if rank == 0:")
    guard = Finding(**{**guard.__dict__, "path": "other.py"})
    mapping = map_findings([guard], [problem(project / "train.py", "dist.barrier()")], str(project))
    assert mapping.confirmed == () and len(mapping.not_reproduced) == 1
