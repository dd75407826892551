"""Shared by the robustness tests: a hazardous module, and the CLI run in-process."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from click.testing import CliRunner

from ddplint.cli import cli

#: ``ddplint check`` in a process of its own, uncached, with DDP101 (the sample hazard,
#: opt-in since issue 23) selected on top of the defaults.
CHECK_COMMAND = [
    sys.executable,
    "-m",
    "ddplint",
    "check",
    "--extend-select",
    "DDP101",
    "--no-cache",
]

#: A module with one DDP101 finding at 7:9 (``torch.cuda.synchronize()``, 24 columns).
HAZARD = """\
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        torch.cuda.synchronize()
        return x
"""


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.out)
        return data

    def findings_by_path(self) -> dict[str, list[tuple[int, int]]]:
        found: dict[str, list[tuple[int, int]]] = {}
        for finding in self.json()["findings"]:
            found.setdefault(finding["path"], []).append((finding["line"], finding["column"]))
        return found

    def errors_by_path(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for error in self.json()["errors"]:
            found.setdefault(error["path"], []).append(error["message"])
        return found


def run_cli(*args: str) -> Run:
    """``ddplint ARGS`` in this process; an exception escaping the CLI fails the test.
    A ``check`` without --select of its own selects DDP101 (the sample hazard, opt-in
    since issue 23) on top of the defaults."""
    if args[:1] == ("check",) and "--select" not in args:
        args = ("check", "--extend-select", "DDP101", *args[1:])
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return Run(result.exit_code, result.stdout, result.stderr)


#: Seconds after which a run counts as hung: a guard against a run that never ends,
#: long enough for any machine load. No test asserts how fast something is (bench/ does).
HANG_GUARD = 600


@contextmanager
def deadline(seconds: int = HANG_GUARD) -> Iterator[None]:
    """Fail instead of hanging: SIGALRM interrupts a blocking call (an open() of a FIFO)."""

    def expired(signum: int, frame: object) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


#: A test run started with SIGINT ignored (a background job of a script) hands that on
#: to ddplint, which then rightly keeps ignoring Ctrl-C: tests that interrupt a run with
#: SIGINT cannot run there.
sigint_ignored = pytest.mark.skipif(
    signal.getsignal(signal.SIGINT) is signal.SIG_IGN,
    reason="SIGINT is ignored in this test run (started as a background job?)",
)
