"""The analysis core's step path (``analysis/step_paths``): which calls run on every
training step, and why; each form both ways."""

from __future__ import annotations

import ast
import textwrap

from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.step_paths import StepPaths


def paths_of(code: str) -> tuple[StepPaths, dict[str, ast.Call]]:
    """The step paths of ``code`` and its calls by their text (``mark()`` ...)."""
    module = ast.parse(textwrap.dedent(code))
    calls = {ast.unparse(c): c for c in ast.walk(module) if isinstance(c, ast.Call)}
    return StepPaths(ModuleAnalysis(module)), calls


def reason(code: str, call: str, *, evaluation: bool = False) -> str | None:
    paths, calls = paths_of(code)
    found = paths.reason(calls[call], evaluation=evaluation)
    return found.describe() if found is not None else None


def test_step_methods_by_bases_not_by_names() -> None:
    code = """
        from torch import nn
        from transformers import TrainerCallback

        class Encoder(nn.Module):
            def forward(self, x):
                self.helper(x)

            def helper(self, x):
                mark_forward()

        class Hook(TrainerCallback):
            def on_step_end(self, args, state, control):
                mark_hook()

        class LoggingCallback:
            def on_step_end(self, args, state, control):
                mark_named()

        class Runner:
            def forward(self, x):
                mark_runner()
    """
    assert reason(code, "mark_forward()") == "`Encoder.helper` (called from `Encoder.forward`)"
    assert reason(code, "mark_hook()") == "`Hook.on_step_end`"
    assert reason(code, "mark_named()") is None
    assert reason(code, "mark_runner()") is None


def test_evaluation_steps_only_when_asked() -> None:
    code = """
        import lightning.pytorch as pl

        class Model(pl.LightningModule):
            def validation_step(self, batch, batch_idx):
                mark()
    """
    assert reason(code, "mark()") is None
    assert reason(code, "mark()", evaluation=True) == "`Model.validation_step`"


def test_training_loop_body_and_its_exceptions() -> None:
    code = """
        import torch

        def train(model, loader, val_loader, optimizer):
            for step, batch in enumerate(loader):
                model(batch).sum().backward()
                optimizer.step()
                every()
                sampled() if step % 100 == 0 else None
                with torch.no_grad():
                    for val in val_loader:
                        evaluating()
            after()

        def smoke(model, batch):
            for _ in range(3):
                model(batch).sum().backward()
                short()
    """
    assert reason(code, "every()") == "a training loop that calls backward()"
    assert reason(code, "sampled()") is None
    assert reason(code, "evaluating()") is None
    assert reason(code, "after()") is None
    assert reason(code, "short()") is None


def test_options_off_by_default_and_on_by_default() -> None:
    code = """
        def train(model, loader, optimizer, careful=False, debug_sync=True):
            for batch in loader:
                model(batch).sum().backward()
                optimizer.step()
                if careful:
                    opt_in()
                if debug_sync:
                    on_by_default()
    """
    assert reason(code, "opt_in()") is None
    assert reason(code, "on_by_default()") == "a training loop that calls backward()"


def test_a_loop_over_epochs_is_not_a_step_loop() -> None:
    code = """
        def train_one_epoch(model, loader, optimizer):
            for batch in loader:
                model(batch).sum().backward()
                optimizer.step()

        def train_step(model, batch, optimizer):
            model(batch).sum().backward()
            optimizer.step()

        def fit(model, files, optimizer):
            for path in files:
                train_one_epoch(model, path, optimizer)
                per_file()

        def run(model, loader, optimizer):
            for batch in loader:
                train_step(model, batch, optimizer)
                per_step()
    """
    assert reason(code, "per_file()") is None
    assert reason(code, "per_step()") == "a training loop that calls backward()"
    assert reason(code, "train_step(model, batch, optimizer)") is not None


def test_a_comprehension_runs_where_its_statement_runs() -> None:
    code = """
        def train(model, loader, optimizer, log_every, logger):
            for step, batch in enumerate(loader):
                losses = model(batch)
                sum(losses).backward()
                optimizer.step()
                if step % log_every == 0:
                    logger.info([sampled(x) for x in losses])
                logger.info([every(x) for x in losses])
    """
    assert reason(code, "sampled(x)") is None
    assert reason(code, "every(x)") == "a training loop that calls backward()"


def test_evaluation_mode_of_a_module_only() -> None:
    code = """
        from torch import nn

        class Head(nn.Module):
            def forward(self, x):
                if not self.training:
                    evaluating()
                if self.training:
                    training()
                if x.shape[0] > 2000 and not self.training:
                    large_evaluation()
                return x

        class Plain:
            def forward(self, x):
                if not self.training:
                    not_a_module()
    """
    paths, calls = paths_of(code)
    assert paths.reason(calls["evaluating()"]) is None
    assert paths.reason(calls["training()"]) is not None
    assert paths.reason(calls["large_evaluation()"]) is None
    assert paths.frequency.occasional(calls["not_a_module()"]) is None


def test_a_step_loop_with_inner_backward_loops() -> None:
    code = """
        def train(model, loader, optimizer, attack):
            for batch in loader:
                for _ in range(attack.steps):
                    attack.loss(model, batch).backward()
                model(batch).sum().backward()
                optimizer.step()
                per_step()

        def fit(model, loaders, optimizer):
            for loader in loaders:
                for batch in loader:
                    model(batch).sum().backward()
                    optimizer.step()
                per_epoch()
    """
    assert reason(code, "per_step()") == "a training loop that calls backward()"
    assert reason(code, "per_epoch()") is None


def test_switches_the_code_starts_off() -> None:
    code = """
        SYNCHRONIZE = False
        CHECK = True

        def configure(sync):
            global SYNCHRONIZE
            SYNCHRONIZE = sync

        class Engine:
            def __init__(self):
                self.profiling = False
                self.checking = True

            def train(self, model, loader, optimizer):
                for batch in loader:
                    model(batch).sum().backward()
                    optimizer.step()
                    if SYNCHRONIZE:
                        set_at_run_time()
                    if self.profiling:
                        field_off()
                    if CHECK:
                        started_on()
                    if self.checking:
                        field_on()
    """
    assert reason(code, "set_at_run_time()") is not None
    assert reason(code, "field_off()") is None
    assert reason(code, "started_on()") is not None
    assert reason(code, "field_on()") is not None


def test_a_way_that_leaves_the_training_loop_runs_once_per_run_of_it() -> None:
    code = """
        def evaluate(model, loader):
            return [model(batch).item() for batch in loader]

        def report(model):
            every_step_helper()

        def train(model, loader, optimizer, total):
            for epoch in range(10):
                for step, batch in enumerate(loader):
                    model(batch).sum().backward()
                    optimizer.step()
                    if step >= total:
                        evaluate(model, loader)
                        last()
                        return
                    if step == epoch:
                        per_epoch()
                        break
                    if step > 100:
                        report(model)
                        late()
                        continue
                    try:
                        retried()
                    except RuntimeError:
                        return
                    if step > 10:
                        nested = [x for x in range(3)]
                        for item in nested:
                            if item:
                                inner()
                                break
    """
    functions = {f.name for f in paths_of(code)[0].functions()}
    assert "evaluate" not in functions  # called only on the way out
    assert "report" in functions
    assert reason(code, "last()") is None
    assert reason(code, "per_epoch()") is None  # once per run of the step loop
    assert reason(code, "late()") == "a training loop that calls backward()"
    assert reason(code, "retried()") == "a training loop that calls backward()"
    assert reason(code, "inner()") == "a training loop that calls backward()"


def test_a_local_flag_the_guarded_code_turns_off_runs_once_per_run_of_the_loop() -> None:
    code = """
        def train(model, loader, optimizer):
            show_one = True
            per_step = True
            for batch in loader:
                if show_one:
                    shown()
                    show_one = False
                model(batch).sum().backward()
                optimizer.step()
                per_step = True
                for part in batch:
                    if per_step:
                        first_part()
                        per_step = False
    """
    assert reason(code, "shown()") is None
    assert reason(code, "first_part()") == "a training loop that calls backward()"
