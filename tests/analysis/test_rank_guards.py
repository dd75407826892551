"""Where code runs on some ranks only (``rank_guards``), the Lightning trainer known by
what made it (``trainers``), and the batch view (``batches``)."""

from __future__ import annotations

import ast
import textwrap

from ddplint.analysis.batches import batch_seeds, training_loops
from ddplint.analysis.divergence import Source
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.rank_guards import (
    RankGuard,
    admits_global_zero,
    guard_of,
    own_reads,
)
from ddplint.analysis.synced_logs import synced_logs_on_some_ranks
from ddplint.analysis.trainer_questions import log_dirs_on_some_ranks, should_stop_on_some_ranks
from ddplint.analysis.trainers import LightningTrainers


def _analysis(source: str) -> ModuleAnalysis:
    return ModuleAnalysis(ast.parse(textwrap.dedent(source)))


def _guards_of_prints(source: str) -> dict[int, RankGuard | None]:
    """Line of each ``print(...)`` call -> its guard (the rank only)."""
    analysis = _analysis(source)
    calls = [
        call
        for call in analysis.nodes.of_type(ast.Call)
        if isinstance(call.func, ast.Name) and call.func.id == "print"
    ]
    return {
        call.lineno: guard_of(analysis, scope, node, call)
        for call, scope, node in own_reads(analysis, list(calls))
    }


GUARDS = """
import torch.distributed as dist
from lightning.pytorch.utilities import rank_zero_only

def branches(step):
    if dist.get_rank() == 0:
        print("a")
    else:
        print("b")
    if step % 10 == 0:
        print("c")

def early(x):
    if dist.get_rank() != 0:
        return
    print("d")

def loud(x):
    if dist.get_rank() != 0:
        raise RuntimeError("rank 0 only")
    print("e")

def inside():
    dist.get_rank() == 0 and print("f")
    x = print("g") if dist.get_rank() > 0 else None

@rank_zero_only
def decorated():
    print("h")
"""


def test_tests_exits_expressions_and_decorators_guard() -> None:
    found = _guards_of_prints(GUARDS)
    assert found[7] is not None and found[7].runs_when is True
    assert found[9] is not None and found[9].runs_when is False
    assert found[11] is None  # every rank answers the step alike
    assert found[16] is not None and found[16].runs_when is False  # after the early return
    assert found[21] is None  # the other ranks end the job loudly
    assert found[24] is not None and found[24].runs_when is True
    assert found[25] is not None and found[25].runs_when is True
    decorated = found[29]
    assert decorated is not None and decorated.runs_when is None
    assert decorated.function == "decorated" and decorated.taint.source is Source.RANK


TRAINERS = """
import lightning.pytorch as pl
from lightning.pytorch import Callback, LightningModule

class Model(LightningModule):
    def hook(self):
        return self.trainer.log_dir

class Saver(Callback):
    def on_fit_start(self, trainer, module):
        held = trainer
        return held.log_dir, module.trainer.log_dir, module.log_dir

class Plain:
    def hook(self, trainer):
        return self.trainer.log_dir, trainer.log_dir

def script(given: pl.Trainer):
    made = pl.Trainer()
    return made.log_dir, given.log_dir
"""


def test_trainers_are_known_by_what_made_them() -> None:
    analysis = _analysis(TRAINERS)
    trainers = LightningTrainers(analysis)
    reads = [a for a in analysis.nodes.of_type(ast.Attribute) if a.attr == "log_dir"]
    held = {
        ast.unparse(read.value)
        for read, scope, _ in own_reads(analysis, list(reads))
        if isinstance(read, ast.Attribute) and trainers.holds(read.value, scope)
    }
    assert held == {"self.trainer", "held", "module.trainer", "made", "given"}


def test_log_dir_read_under_a_rank_test_only() -> None:
    found = log_dirs_on_some_ranks(
        _analysis(
            """
            from lightning.pytorch import Callback

            class Saver(Callback):
                def on_fit_start(self, trainer, module):
                    every = trainer.log_dir
                    if trainer.is_global_zero:
                        print(every, trainer.log_dir)
                    if trainer.current_epoch == 0:
                        print(trainer.log_dir)
            """
        )
    )
    assert [getattr(f.target, "lineno", 0) for f in found] == [8]


SEEDS = """
import lightning.pytorch as pl

class Model(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        return batch

    def on_train_batch_end(self, outputs, batch, batch_idx):
        return outputs

def loop(model, loader, opt):
    for epoch in range(3):
        for step, batch in enumerate(loader):
            model(batch).backward()
            opt.step()
"""


def test_batch_seeds_are_step_parameters_and_training_loop_items() -> None:
    analysis = _analysis(SEEDS)
    functions = {f.name: f for f in analysis.nodes.functions()}
    assert batch_seeds(functions["training_step"], True).parameters == {"batch"}
    assert batch_seeds(functions["on_train_batch_end"], True).parameters == {"outputs", "batch"}
    assert batch_seeds(functions["training_step"], False).parameters == frozenset()
    loops = batch_seeds(functions["loop"], False).loops
    assert [[ast.unparse(t) for t in targets] for targets in loops.values()] == [["batch"]]


def test_the_batch_view_alone_sees_this_ranks_batch() -> None:
    analysis = _analysis(
        """
        import torch
        import lightning.pytorch as pl

        class Model(pl.LightningModule):
            def training_step(self, batch, batch_idx):
                loss = self.compute_loss(batch)
                if torch.isnan(loss):
                    self.trainer.should_stop = True
                if batch_idx > 10:
                    self.trainer.should_stop = True
                return loss
        """
    )
    step = next(f for f in analysis.nodes.functions() if f.name == "training_step")
    facts = analysis.function(step)
    tests = [n for n in facts.graph.nodes if isinstance(n.statement, ast.If)]
    assert [facts.divergence.test_taint(t) for t in tests] == [None, None]
    view = analysis.batch_view(step)
    taints = [view.test_taint(t) for t in tests]
    assert taints[0] is not None and taints[0].source is Source.BATCH
    assert taints[1] is None  # the batch's index is the same on every rank
    assert [getattr(f.target, "lineno", 0) for f in should_stop_on_some_ranks(analysis)] == [9]


def test_a_strategy_decision_agrees() -> None:
    analysis = _analysis(
        """
        import torch
        import lightning.pytorch as pl

        class Model(pl.LightningModule):
            def training_step(self, batch, batch_idx):
                stop = self.trainer.strategy.reduce_boolean_decision(bool(torch.isnan(batch)))
                if stop:
                    self.trainer.should_stop = True
                self.trainer.should_stop = self.trainer.strategy.broadcast(batch.sum() > 0)
        """
    )
    assert should_stop_on_some_ranks(analysis) == []


GLOBAL_ZERO = """
import os
import torch.distributed as dist
from lightning.pytorch.utilities import rank_zero_only

def tests(trainer, args):
    if dist.get_rank() == 0:
        print("global zero")
    if trainer.is_global_zero:
        print("global zero too")
    if dist.get_rank() != 0:
        print("the other ranks")
    if args.local_rank == 0:
        print("one per node")
    if int(os.environ["LOCAL_RANK"]) == 0:
        print("one per node, read from the launcher")
    first = dist.get_rank() == 0
    if first:
        print("global zero, through a name")

@rank_zero_only
def decorated():
    print("global zero, decorated")
"""


def test_admits_global_zero_both_ways() -> None:
    analysis = _analysis(GLOBAL_ZERO)
    guards = _guards_of_prints(GLOBAL_ZERO)
    admitted = {
        line: admits_global_zero(analysis, guard)
        for line, guard in guards.items()
        if guard is not None
    }
    assert admitted == {8: True, 10: True, 12: False, 14: False, 16: False, 19: True, 23: True}


CALLERS = """
import lightning.pytorch as pl

class Model(pl.LightningModule):
    def validation_step(self, batch, batch_idx):
        if self.global_rank == 0:
            self._log_wer(batch)
        self._log_wer(batch)
        if self.current_epoch > 3:
            self._log_wer(batch)
        if self.global_rank == 0:
            self._log_cer(batch)
        else:
            self._log_cer(batch)

    def _log_wer(self, batch):
        self.log("wer", batch, sync_dist=True)

    def _log_cer(self, batch):
        self.log("cer", batch, sync_dist=True)
"""


def test_synced_logs_reached_through_a_local_call_on_some_ranks() -> None:
    """A call of a method that logs with ``sync_dist`` under a rank test is reported at
    the call; called on every rank, under a uniform test, or on both arms, it is not."""
    found = synced_logs_on_some_ranks(_analysis(CALLERS))
    assert [(log.call.lineno, log.log is not None and log.log.lineno) for log in found] == [(7, 17)]


HELPER_LOOPS = """
def step(model, batch):
    model(batch).backward()

def deeper(model, batch):
    step(model, batch)

def train(model, loader):
    for batch in loader:
        deeper(model, batch)

def evaluate(model, loader):
    for batch in loader:
        model(batch)
"""


def test_training_loops_through_local_helpers() -> None:
    analysis = _analysis(HELPER_LOOPS)
    assert set(analysis.backward_functions) == {"step", "deeper", "train"}
    functions = {f.name: f for f in analysis.nodes.functions()}
    helpers = frozenset(analysis.backward_functions)
    assert len(training_loops(functions["train"], helpers)) == 1
    assert training_loops(functions["train"]) == []
    assert training_loops(functions["evaluate"], helpers) == []
