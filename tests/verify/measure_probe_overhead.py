"""Measure the line probes' cost on a small CPU training loop (and on a pure-Python
loop, their worst case): the same loop without probes, then with the line that holds a
finding probed. Usage: python tests/verify/measure_probe_overhead.py [STEPS] [--with-continue]"""

from __future__ import annotations

import os
import sys
import time

import torch
from torch import nn

from ddplint.verify.probes import LineProbe


def train(steps: int) -> float:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    total = 0.0
    for _ in range(steps):
        loss = nn.functional.mse_loss(model(torch.randn(16, 32)), torch.randn(16, 1))
        if torch.isnan(loss):  # the probed line (a DDP204-style guard)
            continue
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total


def python_heavy(steps: int) -> int:
    def step(value: int) -> int:
        return value * 2 % 7

    total = 0
    for value in range(steps * 200):
        if value < 0:  # the probed line
            continue
        total += step(value)
    return total


def best_of(function, steps: int, targets: dict | None, repeats: int = 5) -> float:  # type: ignore[no-untyped-def]
    """The fastest of ``repeats`` runs, each with a fresh probe (nothing seen yet)."""
    times = []
    for _ in range(repeats):
        probe = None if targets is None else LineProbe(targets, lambda record: None)
        if probe is not None:
            probe.install()
        start = time.perf_counter()
        function(steps)
        times.append(time.perf_counter() - start)
        if probe is not None:
            probe.stop()
    return min(times)


def main() -> None:
    numbers = [a for a in sys.argv[1:] if a.isdigit()]
    steps = int(numbers[0]) if numbers else 300
    torch.set_num_threads(1)
    here = os.path.realpath(__file__)
    with open(here, encoding="utf-8") as handle:
        source = handle.read().splitlines()
    guard = [n for n, line in enumerate(source, 1) if "# the probed line" in line]
    if "--with-continue" in sys.argv:  # probe the never-taken `continue` too (worst case)
        guard += [n + 1 for n in guard]
    targets = {here: frozenset(guard)}
    for name, function in (("training loop", train), ("pure-Python loop", python_heavy)):
        best_of(function, steps // 10, None, 1)  # warm up
        plain = best_of(function, steps, None)
        probed = best_of(function, steps, targets)
        overhead = 100 * (probed - plain) / plain
        print(f"{name} ({steps} steps): {plain:.3f}s plain, {probed:.3f}s probed, {overhead:+.1f}%")


if __name__ == "__main__":
    main()
