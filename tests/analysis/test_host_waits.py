"""The per-step wait questions of the analysis core: an earlier host read that drained
the queue, and a call that runs only while a cache of the object is empty."""

from __future__ import annotations

import ast
import textwrap

from ddplint.analysis.host_waits import HostWaits


def _waits_and_calls(source: str) -> tuple[HostWaits, dict[int, list[ast.Call]]]:
    module = ast.parse(textwrap.dedent(source))
    by_line: dict[int, list[ast.Call]] = {}
    for node in ast.walk(module):
        if isinstance(node, ast.Call):
            by_line.setdefault(node.lineno, []).append(node)
    return HostWaits(module), by_line


def _read_on(by_line: dict[int, list[ast.Call]], line: int) -> ast.Call:
    reads = [
        c
        for c in by_line[line]
        if isinstance(c.func, ast.Attribute) and c.func.attr in ("item", "cpu")
    ]
    assert len(reads) == 1
    return reads[0]


def test_read_after_a_read_with_only_host_work_between_is_drained() -> None:
    waits, calls = _waits_and_calls(
        """
        def step(model, x, meter, writer, rank, n):
            loss = model(x)
            meter.update(loss.item(), x.size(0))
            if rank == 0:
                writer.add_scalar("loss", loss.item(), n)
        """
    )
    assert not waits.queue_drained(_read_on(calls, 4))
    assert waits.queue_drained(_read_on(calls, 6))


def test_read_after_new_device_work_is_not_drained() -> None:
    waits, calls = _waits_and_calls(
        """
        def step(model, x, meter):
            loss = model(x)
            meter.update(loss.item(), 1)
            aux = model.head(x)
            meter.update(aux.item(), 1)
            total = loss * 2
            meter.update(total.cpu(), 1)
        """
    )
    assert not waits.queue_drained(_read_on(calls, 6))
    assert not waits.queue_drained(_read_on(calls, 8))


def test_read_on_one_branch_only_does_not_drain_the_join() -> None:
    waits, calls = _waits_and_calls(
        """
        def step(loss, flag, meter):
            if flag:
                meter.update(loss.item(), 1)
            meter.update(loss.cpu(), 1)
        """
    )
    assert not waits.queue_drained(_read_on(calls, 5))


def test_elif_test_after_the_if_test_read_is_drained() -> None:
    waits, calls = _waits_and_calls(
        """
        def forward(value):
            if value.item() > 1.0:
                print("high")
            elif value.item() < 0.0:
                print("low")
        """
    )
    assert waits.queue_drained(_read_on(calls, 5))


def test_cache_fill_runs_once() -> None:
    waits, calls = _waits_and_calls(
        """
        class Loss:
            def forward(self, x, key, mask=None):
                if self.scale is None:
                    self.scale = x.max().item()
                cached = self._table.get(key)
                if cached is None:
                    cached = x.sum().item()
                    self._table[key] = cached
                if key not in self._seen:
                    self._seen[key] = x.cpu()
                if mask is None:
                    mask = x.cpu()
                return x
        """
    )
    assert waits.filled_once(_read_on(calls, 5))
    assert waits.filled_once(_read_on(calls, 8))
    assert waits.filled_once(_read_on(calls, 11))
    assert not waits.filled_once(_read_on(calls, 13))


def test_reads_on_every_way_drain_the_join_and_a_loop_carries_work_round() -> None:
    waits, calls = _waits_and_calls(
        """
        def step(model, x, meter, writer, flag, loader):
            loss = model(x)
            if flag:
                meter.update(loss.item())
            else:
                meter.update(loss.cpu())
            writer.add(loss.item())
            for batch in loader:
                writer.add(loss.item())
                loss = model(batch)
        """
    )
    assert waits.queue_drained(_read_on(calls, 8))
    # around the loop the model has queued work again: not drained on every path
    assert not waits.queue_drained(_read_on(calls, 10))


def test_a_handler_may_start_before_the_wait_and_a_synchronisation_is_not_counted() -> None:
    waits, calls = _waits_and_calls(
        """
        import torch

        def step(model, x, meter):
            loss = model(x)
            meter.update(loss.item())
            try:
                y = model(x).cpu()
            except RuntimeError:
                meter.update(loss.item())
            z = model(y)
            torch.cuda.synchronize()
            meter.update(z.item())
        """
    )
    assert not waits.queue_drained(_read_on(calls, 10))
    # DDP101 leaves a synchronize() followed by a read to the read: one report per stall
    assert not waits.queue_drained(_read_on(calls, 13))
