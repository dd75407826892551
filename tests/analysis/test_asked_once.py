"""Work the core does once per module that its questions once repeated (issue 27's cold
run): a training step's batch view solved only where a way out could need it, the
single-process reading of a test asked once per test and scope, the screens' nodes
read by kind. Each both ways: the answers stay the same."""

from __future__ import annotations

import ast
import textwrap

import pytest

from ddplint.analysis.control_flow import Scope
from ddplint.analysis.divergence import Divergence
from ddplint.analysis.forms import nodes_of
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.single_process import SingleProcessPaths
from ddplint.analysis.step_returns import lossless_step_returns

_STEP = """
import torch
import pytorch_lightning as pl

class Model(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        loss = self.model(batch)
        {way_out}
        return loss
"""


def _batch_views(monkeypatch: pytest.MonkeyPatch) -> list[Scope]:
    """The scopes whose batch view is solved from now on."""
    asked: list[Scope] = []
    solve = ModuleAnalysis.batch_view

    def spy(self: ModuleAnalysis, scope: Scope, *args: object, **kwargs: object) -> Divergence:
        asked.append(scope)
        return solve(self, scope, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ModuleAnalysis, "batch_view", spy)
    return asked


@pytest.mark.parametrize(
    ("way_out", "reported", "solved"),
    [
        # The loss returned on every way: nothing to report, nothing solved.
        ("self.log('loss', loss)", [], []),
        # A way out without a loss: the step's batch view solved, the way out reported.
        ("if torch.isnan(loss):\n            return None", [9], ["training_step"]),
    ],
)
def test_a_step_is_solved_only_where_a_way_out_has_no_loss(
    monkeypatch: pytest.MonkeyPatch, way_out: str, reported: list[int], solved: list[str]
) -> None:
    asked = _batch_views(monkeypatch)
    source = _STEP.format(way_out=way_out)
    analysis = ModuleAnalysis(ast.parse(textwrap.dedent(source)))
    assert [step.at.lineno for step in lossless_step_returns(analysis)] == reported
    assert [getattr(scope, "name", None) for scope in asked] == solved


_SWITCHED = """
import torch.distributed as dist

class Trainer:
    def __init__(self):
        self.distributed = dist.get_world_size() > 1

    def step(self, x, rank):
        if self.distributed:
            x = x + rank
        if not self.distributed:
            return x
        return x * 2
"""


def test_each_test_is_read_once_per_scope_and_read_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[tuple[int, int]] = []
    read = SingleProcessPaths.asks_several

    def spy(
        self: SingleProcessPaths, test: ast.expr, scope: ast.AST | None, depth: int = 3
    ) -> bool | None:
        asked.append((id(test), id(scope)))
        return read(self, test, scope, depth)

    monkeypatch.setattr(SingleProcessPaths, "asks_several", spy)
    module = ast.parse(_SWITCHED)
    analysis = ModuleAnalysis(module)
    owner = module.body[1]
    assert isinstance(owner, ast.ClassDef)
    function = owner.body[1]
    assert isinstance(function, ast.FunctionDef)
    plain = analysis.function(function).divergence
    batch = analysis.batch_view(function, step_method=False, handed=frozenset({"x"}))
    tests = [statement.test for statement in function.body if isinstance(statement, ast.If)]
    # Two solves of ``step``: each of its tests read once (the switch's binding too).
    assert {(id(test), id(function)) for test in tests} <= set(asked)
    assert len(asked) == len(set(asked))
    fresh = SingleProcessPaths(analysis.nodes, analysis.names, analysis.graphs)
    for test in tests:
        expected = read(fresh, test, function)
        assert expected is not None
        assert plain.asks_several(test) is expected
        assert batch.asks_several(test) is expected


def test_nodes_of_gives_each_kind_in_walk_order() -> None:
    module = ast.parse(textwrap.dedent(_STEP.format(way_out="x = {k for k in batch}")))
    walked = list(ast.walk(module))
    for kinds in [(ast.Name,), (ast.Call, ast.Attribute), (ast.comprehension, ast.For)]:
        expected = [node for kind in kinds for node in walked if type(node) is kind]
        assert nodes_of(module, *kinds) == expected
        assert expected  # each kind asked about is there
