"""The core's frequency question: a call that runs only now and then (on an error, on
the rare way of a periodic or sampled test, while exporting, in a single-process run)
and its look-alikes that run on every pass."""

from __future__ import annotations

import ast
import textwrap

from ddplint.analysis.host_waits import HostWaits
from ddplint.analysis.project import NoProject, Reached
from ddplint.analysis.step_frequency import Occasion, StepFrequency


def _occasions(source: str, project: NoProject | None = None) -> dict[int, Occasion | None]:
    """The answer for the call marked ``mark()`` on each line (by line)."""
    module = ast.parse(textwrap.dedent(source))
    waits = HostWaits(module)
    frequency = StepFrequency(waits, project or NoProject())
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
