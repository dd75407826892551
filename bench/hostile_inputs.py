"""Time ``ddplint check`` on hostile inputs: YAML alias and interpolation bombs, deep
nesting, long merge and interpolation chains, many fixable findings, a generated table.

Usage::

    python bench/hostile_inputs.py [--repeat 3]

The tests check that these inputs give the right findings or errors and never blow up
(memory limits, hang guards); how fast they are is measured here, since a pass/fail
limit on seconds fails on a loaded machine. Each case prints its median wall time (the
whole command), the same less the start-up of a run on a one-line file, and the budget
the tests once asserted (start-up included for the cases they ran as a command, not for
those they linted in process), as a reference for regressions. Not a test: numbers
depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRAINING = (
    "trainer:\n  devices: 2\nmodel:\n  train_ds:\n    num_workers: 0\n"
    "    persistent_workers: true\n"
)


def alias_bomb(levels: int) -> str:
    """Each anchor holds nine aliases of the one before (9**levels leaves)."""
    lines = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + f"\n{TRAINING}  bomb: *l{levels - 1}\n"


def doubling_interpolations(levels: int) -> str:
    """Each value interpolates the one before twice (2**levels lookups if resolved)."""
    lines = ["s0: " + "x" * 64] + [f"s{i}: ${{s{i - 1}}}${{s{i - 1}}}" for i in range(1, levels)]
    return "\n".join(lines) + f"\n{TRAINING}  name: ${{s{levels - 1}}}\n"


def interpolation_chain(length: int) -> str:
    links = "".join(f"v{i}: ${{v{i + 1}}}\n" for i in range(length))
    return links + f"v{length}: 0\n" + TRAINING.replace("num_workers: 0", "num_workers: ${v0}")


def merge_chain(length: int) -> str:
    """Level i merges level i-1: quadratic merged keys from linear lines."""
    levels = "".join(f"l{i}: &l{i}\n  <<: *l{i - 1}\n  k{i}: {i}\n" for i in range(1, length))
    tail = f"model:\n  train_ds:\n    <<: *l{length - 1}\n    persistent_workers: true\n"
    return "trainer:\n  devices: 2\nl0: &l0\n  k0: 0\n" + levels + tail


def fixable_sections(count: int) -> str:
    body = "".join(
        f"  ds{i}:\n    num_workers: 0\n    persistent_workers: true\n" for i in range(count)
    )
    return "trainer: {devices: 2}\nmodel:\n" + body


@dataclass(frozen=True)
class Case:
    name: str
    file: str
    text: Callable[[], str]
    #: Seconds the tests once asserted (wall clock, on the 2-core machine).
    old_budget: float
    fix: bool = False


STARTUP = Case("start-up (a one-line file)", "conf.yaml", lambda: "a: 1\n", 0)
CASES = (
    Case("alias bomb, 9**10 leaves", "conf.yaml", lambda: alias_bomb(10), 10),
    Case("interpolations doubling 40 times", "conf.yaml", lambda: doubling_interpolations(40), 10),
    Case("interpolation chain of 3,000", "conf.yaml", lambda: interpolation_chain(3000), 5),
    Case("flow nesting 20,000 deep", "conf.yaml", lambda: TRAINING + "  x: " + "[" * 20000, 1),
    Case(
        "block nesting 1,500 deep",
        "conf.yaml",
        lambda: TRAINING + "  deep:\n" + "".join(" " * i + "-\n" for i in range(3, 1500)),
        5,
    ),
    Case("merge-key chain of 3,000", "chain.yaml", lambda: merge_chain(3000), 30),
    Case("300 fixable findings", "conf.yaml", lambda: fixable_sections(300), 8),
    Case("400 documents", "conf.yaml", lambda: (TRAINING + "---\n") * 400, 8),
    Case("--fix of 80 findings", "conf.yaml", lambda: fixable_sections(80), 20, fix=True),
    Case(
        "table literal of 690,000 items",
        "table.py",
        lambda: (
            "import torch.distributed as dist\nTABLE = ["
            + ", ".join(["1"] * 690_000)
            + "]\ndist.barrier()\n"
        ),
        20,
    ),
)


def time_case(case: Case, repeat: int) -> list[float]:
    """Wall seconds of ``ddplint check`` on the case's file, ``repeat`` times (the file
    written afresh each time, so ``--fix`` always has work)."""
    seconds = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / case.file
        command = [sys.executable, "-m", "ddplint", "check", "--no-cache", "-q", case.file]
        if case.fix:
            command.insert(4, "--fix")
        for _ in range(repeat):
            path.write_text(case.text())
            started = time.perf_counter()
            subprocess.run(command, cwd=folder, capture_output=True, check=False)
            seconds.append(time.perf_counter() - started)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    width = max(len(case.name) for case in (STARTUP, *CASES))
    startup = statistics.median(time_case(STARTUP, repeat))
    print(f"{'case':<{width}}  median s  less start-up s  old budget s")
    print(f"{STARTUP.name:<{width}}  {startup:8.2f}")
    for case in CASES:
        median = statistics.median(time_case(case, repeat))
        columns = f"{median:8.2f}  {median - startup:15.2f}  {case.old_budget:12.0f}"
        print(f"{case.name:<{width}}  {columns}")


if __name__ == "__main__":
    main()
