"""The core's frequency question: a call that runs only now and then (on an error, on
the rare way of a periodic or sampled test, while exporting, in a single-process run)
and its look-alikes that run on every pass."""

from __future__ import annotations

import ast
import textwrap

from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.host_waits import HostWaits
from ddplint.analysis.project import NoProject, Reached
from ddplint.analysis.step_frequency import Occasion, StepFrequency
from ddplint.analysis.step_paths import host_waits_of


def _occasions(
    source: str, project: NoProject | None = None, *, across_calls: bool = False
) -> dict[int, Occasion | None]:
    """The answer for the call marked ``mark()`` on each line (by line); with
    ``across_calls``, the module's own functions resolved (a flag a call hands in, a
    flag a called function sets)."""
    module = ast.parse(textwrap.dedent(source))
    if across_calls:
        analysis = ModuleAnalysis(module)
        waits, callee_of = host_waits_of(analysis), analysis.callee_of
    else:
        waits, callee_of = HostWaits(module), None
    frequency = StepFrequency(waits, project or NoProject(), callee_of=callee_of)
    return {
        node.lineno: frequency.occasional(node)
        for node in ast.walk(module)
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "mark"
    }


def test_a_handler_runs_on_an_error_and_a_finally_every_pass() -> None:
    found = _occasions(
        """
        def train(loader):
            for x in loader:
                try:
                    step(x)
                except RuntimeError:
                    mark()
                finally:
                    mark()
        """
    )
    assert found == {7: Occasion.ERROR, 9: None}


def test_counters_moved_or_scaled_and_named_tests() -> None:
    found = _occasions(
        """
        def train(loader, accum, every, epoch):
            for i, x in enumerate(loader):
                i_accum = i // accum
                count = i_accum + 1
                step = epoch * len(loader) + i_accum
                last = count == len(loader)
                width = x.size(0) + 1
                wide = width == 8
                if i_accum % every == 0 or count == len(loader):
                    mark()
                if step % every == 0 or last:
                    mark()
                if i_accum % every == 0 or width == 8:
                    mark()
                if i_accum % every == 0 or wide:
                    mark()
                if count > 1 and last:
                    mark()
                if i in [5, 6, 7]:
                    mark()
                if i not in (0, 1):
                    mark()
                if x.size(0) in [5, 6]:
                    mark()

        def report(step, every, last):
            if step % every == 0 or last:
                mark()
        """
    )
    assert found == {
        11: Occasion.PERIODIC,
        13: Occasion.PERIODIC,
        15: None,  # ``width`` moves a shape, not a counter
        17: None,
        19: Occasion.PERIODIC,
        21: Occasion.PERIODIC,
        23: None,  # most passes
        25: None,  # a shape, not a counter
        29: None,  # here ``last`` is a parameter, not the test bound in ``train``
    }


def test_periodic_tests_by_their_way() -> None:
    found = _occasions(
        """
        import random

        def train(loader, every):
            n = 0
            for step, x in enumerate(loader):
                n += 1
                if (step + 1) % every == 0:
                    mark()
                if step % every:
                    mark()
                else:
                    mark()
                if n != 1:
                    mark()
                else:
                    mark()
                if random.random() < 0.01:
                    mark()
                if x.size(0) == 1:
                    mark()
                if "%d" % step == "0":
                    mark()
                if step % every == 0 or step == len(loader) - 1:
                    mark()
                if step % every == 0 or x.size(0) == 1:
                    mark()
        """
    )
    assert found == {
        9: Occasion.PERIODIC,
        11: None,
        13: Occasion.PERIODIC,
        15: None,
        17: Occasion.PERIODIC,
        19: Occasion.PERIODIC,
        21: None,  # not a counter: a shape
        23: None,  # string formatting, not a modulo
        25: Occasion.PERIODIC,
        27: None,  # one way of the ``or`` holds on any pass
    }


def test_a_counter_among_the_values_of_a_collection() -> None:
    found = _occasions(
        """
        def train(loader, eval_steps, warmup):
            for step, x in enumerate(loader):
                if step in eval_steps:
                    mark()
                if step in range(warmup):
                    mark()
                if step not in eval_steps:
                    mark()
        """
    )
    assert found == {5: Occasion.PERIODIC, 7: None, 9: None}


def test_module_code_is_asked_too() -> None:
    found = _occasions(
        """
        for it in range(1000):
            if it % 10 == 0:
                mark()
            mark()
        """
    )
    assert found == {4: Occasion.PERIODIC, 5: None}


def test_export_and_tracing_tests() -> None:
    found = _occasions(
        """
        import torch

        def forward(x):
            if torch.onnx.is_in_onnx_export():
                mark()
            else:
                mark()
            if not torch.jit.is_scripting():
                mark()
            if torch.jit.is_tracing() or torch.jit.is_scripting():
                mark()
        """
    )
    assert found == {6: Occasion.EXPORT, 8: None, 10: None, 12: Occasion.EXPORT}


def test_the_switch_is_read_from_what_its_arm_does() -> None:
    found = _occasions(
        """
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel

        def setup(model, args):
            if args.ddp:
                model = DistributedDataParallel(model)
            return model

        def train(loss, args, flag):
            if not args.ddp:
                mark()
            if args.ddp:
                mark()
            else:
                mark()
            if flag:
                mark()
        """
    )
    assert found == {12: Occasion.SINGLE_PROCESS, 14: None, 16: Occasion.SINGLE_PROCESS, 18: None}


def test_a_rank_test_or_one_whose_both_ways_reduce_is_no_switch() -> None:
    found = _occasions(
        """
        import torch.distributed as dist

        def train(loss, main, is_main):
            if main:
                dist.broadcast(loss, 0)
            else:
                dist.broadcast(loss, 0)
            if not main:
                mark()
            if not is_main:
                dist.barrier()  # waiting for rank 0: no distributed work of its own
            if is_main:
                mark()
        """
    )
    assert found == {10: None, 14: None}


class _ReducesInPlace(NoProject):
    def reached(self, name: str, owner: str | None) -> Reached | None:
        return Reached("all_reduce", f"{name} -> all_reduce") if name == "utils.reduce" else None


def test_a_project_function_that_reduces_marks_the_switch() -> None:
    source = """
        import utils

        def train(loss, args):
            if args.distributed:
                loss = utils.reduce(loss)
                mark()
            else:
                mark()
        """
    assert _occasions(source) == {7: None, 9: None}
    assert _occasions(source, _ReducesInPlace()) == {7: None, 9: Occasion.SINGLE_PROCESS}


def test_the_accumulation_boundary_runs_every_optimizer_step() -> None:
    found = _occasions(
        """
        def train(loader, optimizer, accumulate, every):
            for i, x in enumerate(loader):
                if (i + 1) % accumulate == 0:
                    optimizer.step()
                    mark()
                if i % accumulate:
                    continue
                mark()
                if i % every == 0:
                    mark()
            for j, x in enumerate(loader):
                if j % accumulate:
                    continue
                optimizer.step()
                mark()
        """
    )
    assert found == {6: None, 9: Occasion.PERIODIC, 11: Occasion.PERIODIC, 16: None}


def test_the_single_process_paths_tests_mark_single_process_runs_too() -> None:
    # The frequency question asks the single-process paths: a test of the process count
    # (or a flag bound to one) is read as the rank questions read it.
    found = _occasions(
        """
        import torch.distributed as dist

        def train(loss):
            if not dist.is_initialized():
                mark()
            several = dist.is_available() and dist.is_initialized()
            if several:
                mark()
            if dist.get_world_size(group=None) > 1:
                mark()
            else:
                mark()
        """
    )
    assert found == {6: Occasion.SINGLE_PROCESS, 9: None, 11: None, 13: None}


def _across_calls(source: str) -> dict[int, Occasion | None]:
    return _occasions(source, across_calls=True)


def test_a_flag_every_call_hands_in_decides_like_its_test() -> None:
    found = _across_calls(
        """
        def evaluate(model, should_zero, should_val):
            if not should_zero and not should_val:
                return
            mark()

        def log_last(model, is_last=False):
            if is_last:
                mark()

        def report(model, verbose):
            if not verbose:
                return
            mark()

        def sample(model, gumbel=None):
            if gumbel is None:
                gumbel = model.gumbel
            if gumbel:
                mark()

        def train(model, loader, args):
            for step, x in enumerate(loader):
                should_val = args.val_steps and (step + 1) % args.val_steps == 0
                evaluate(model, should_zero=False, should_val=should_val)
                log_last(model, (step + 1) == len(loader))
                log_last(model)
                report(model, step > 3)
                sample(model)
                sample(model, gumbel=False)
        """
    )
    # a parameter the function binds again is no longer what the calls hand in
    assert found == {5: Occasion.PERIODIC, 9: Occasion.PERIODIC, 14: None, 20: None}


def test_a_flag_handed_to_a_method() -> None:
    found = _across_calls(
        """
        class Loop:
            def validate(self, model, should_val):
                if should_val:
                    mark()

            def log(self, model, verbose):
                if verbose:
                    mark()

            def run(self, model, loader):
                for step, x in enumerate(loader):
                    self.validate(model, step % 500 == 0)
                    self.log(model, verbose=x.size(0) > 2)
        """
    )
    assert found == {5: Occasion.PERIODIC, 9: None}


def test_a_predicate_that_returns_a_periodic_test() -> None:
    found = _across_calls(
        """
        class Loop:
            def should_evaluate(self):
                return self.every > 0 and self.step % self.every == 0

            def should_log(self):
                if self.quiet:
                    return False
                return self.step % 10 == 0

            def is_big(self, x):
                return x.size(0) > 8

            def run(self, model, loader):
                for x in loader:
                    if self.should_evaluate():
                        mark()
                    if self.should_log():
                        mark()
                    if self.is_big(x):
                        mark()
        """
    )
    assert found == {17: Occasion.PERIODIC, 19: Occasion.PERIODIC, 21: None}


def test_a_predicate_that_returns_true_only_on_a_periodic_way() -> None:
    found = _across_calls(
        """
        class Logger:
            def check_frequency(self, idx):
                if (idx % self.every == 0 or idx in self.log_steps) and idx > 0:
                    self.log_steps.pop(0)
                    return True
                return False

            def check_shape(self, x):
                if x.size(0) > 8:
                    return True
                return False

            def check_listed(self, idx):
                if idx in self.allowed or idx > 0:
                    return True
                return False

            def check_warmup(self, idx):
                if idx % self.every == 0 or idx in range(self.warmup):
                    return True
                return False

            def on_batch_end(self, x, idx):
                if self.check_frequency(idx) and self.enabled:
                    mark()
                if self.check_shape(x):
                    mark()
                if self.check_listed(idx):
                    mark()
                if self.check_warmup(idx):
                    mark()
        """
    )
    # membership counts as a counter's only beside the same value taken modulo, and not
    # in a stretch of values
    assert found == {26: Occasion.PERIODIC, 28: None, 30: None, 32: None}


def test_a_flag_one_call_hands_in_always_decides_nothing() -> None:
    found = _across_calls(
        """
        def evaluate(model, should_val):
            if not should_val:
                return
            mark()

        def train(model, loader):
            for step, x in enumerate(loader):
                evaluate(model, step % 100 == 0)
                evaluate(model, True)
        """
    )
    assert found == {5: None}


def test_elapsed_time_tests() -> None:
    found = _occasions(
        """
        import time
        from datetime import datetime

        def train(loader, t0, interval, last, budget):
            for x in loader:
                if time.time() - t0 > interval:
                    mark()
                now = time.monotonic()
                if interval <= now - last:
                    mark()
                if (datetime.now() - last).total_seconds() / 60 > interval:
                    mark()
                if time.perf_counter() - t0 < budget:
                    mark()
                else:
                    mark()
                if x.size(0) - t0 > interval:
                    mark()
                due = time.time() - t0 > interval if interval else False
                if due:
                    mark()
                if due or x.size(0) > 2:
                    mark()
        """
    )
    assert found == {
        8: Occasion.PERIODIC,
        11: Occasion.PERIODIC,
        13: Occasion.PERIODIC,
        15: None,
        17: Occasion.PERIODIC,
        19: None,
        22: Occasion.PERIODIC,
        24: None,
    }


def test_flags_kept_in_fields() -> None:
    found = _occasions(
        """
        class Loop:
            def step(self, batch, step):
                self.log_now = step % 50 == 0
                self.big = batch.size(0) > 8
                self.report()

            def report(self):
                if self.log_now:
                    mark()
                if self.big:
                    mark()
        """
    )
    assert found == {10: Occasion.PERIODIC, 12: None}


def test_once_only_flags_the_guarded_code_sets() -> None:
    found = _across_calls(
        """
        DONE = False

        class Model:
            def __init__(self):
                self.ready = False
                self.armed = False
                self.reset_each = False

            def prepare(self):
                mark()
                self.ready = True

            def training_step(self, batch, cond):
                if not self.ready:
                    mark(self.prepare())
                if not self.armed:
                    mark()
                if not self.reset_each:
                    mark()
                    self.reset_each = True
                if not hasattr(self, "table"):
                    mark()
                    self.table = {}
                if not hasattr(self, "other"):
                    mark()
                if self.ready:
                    mark()
                self.later(cond)

            def later(self, cond):
                if not self.armed:
                    mark()
                    if cond:
                        self.armed = True

            def on_epoch_start(self):
                self.reset_each = False

        def train(loader):
            global DONE
            for x in loader:
                if DONE:
                    continue
                mark()
                DONE = True
        """
    )
    assert found == {
        11: None,  # the method's own code: its call is what runs once
        16: Occasion.ONCE,  # the called method sets the flag at its end
        18: None,  # nothing sets it
        20: None,  # another method sets it back
        23: Occasion.ONCE,
        26: None,  # the field is never made
        28: None,  # the flag's other way
        33: None,  # set under a further test only
        45: Occasion.ONCE,  # a global flag, the early ``continue``
    }


def test_thresholds_the_guarded_code_moves_on() -> None:
    found = _occasions(
        """
        import time

        def train(loader, every, interval):
            next_eval, saved, best, last = every, 1, 0.0, time.time()
            for step, x in enumerate(loader):
                if step >= next_eval:
                    mark()
                    next_eval += every
                if time.time() // interval >= saved:
                    mark()
                    saved = saved + 1
                if x.size(0) - last > interval:
                    mark()
                    last = x.size(0)
                if x.size(0) > best:
                    mark()
                    best = x.size(0)
                if step >= every:
                    mark()
                if step > next_log:
                    mark()
                    next_log = step + every
        """
    )
    assert found == {
        8: Occasion.PERIODIC,
        11: Occasion.PERIODIC,
        14: Occasion.PERIODIC,
        17: None,  # a new best moves the mark to the value compared: not a schedule
        20: None,  # a threshold nothing moves: every pass after it
        22: Occasion.PERIODIC,
    }
