"""Shared by the CLI tests: a DDP101 hazard and a way to run ``ddplint check``."""

from __future__ import annotations

from click.testing import CliRunner

from ddplint.cli import cli

#: A forward pass with one host sync (DDP101, unsafe fix) on line 7, column 9.
HAZARD = """\
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        torch.cuda.synchronize()
        return x
"""
SYNC = "        torch.cuda.synchronize()\n"
#: Device work between two synchronisations: a sync right after another waits for
#: nothing new, and DDP101 reports only the first.
WORK = "        x = self.body(x)\n"


def check(*args: str) -> tuple[int, str, str]:
    """``ddplint check --no-cache ARGS`` in this process: exit code, stdout, stderr.
    DDP101 and DDP404 (opt-in since issue 23 and session 42; the tests' unsafe and safe fix)
    are selected on top of the defaults unless ARGS --select."""
    opt_in = [] if "--select" in args else ["--extend-select", "DDP101,DDP404"]
    result = CliRunner().invoke(
        cli, ["check", "--no-cache", *opt_in, *args], catch_exceptions=False
    )
    return result.exit_code, result.stdout, result.stderr
