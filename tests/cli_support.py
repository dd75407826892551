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


def check(*args: str) -> tuple[int, str, str]:
    """``ddplint check --no-cache ARGS`` in this process: exit code, stdout, stderr."""
    result = CliRunner().invoke(cli, ["check", "--no-cache", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr
