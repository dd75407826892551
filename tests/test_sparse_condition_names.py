"""The one name list left deciding how often a branch runs (``steps/sparse_conditions``
``_SPARSE_NAME``, docs/name-heuristics.md): a flag named for logging, debugging or
plotting makes its branch occasional; the same branch under a flag named otherwise runs
every step. Both ways, so mutating the list breaks a test."""

from __future__ import annotations

import pytest

from ddplint.engine import lint_source
from ddplint.settings import LintOptions

STEP = """import lightning.pytorch as pl


class LitModel(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        loss = self.loss_fn(self(batch["x"]), batch["y"])
        if self.{flag}:
            self.seen.append(loss.item())
        return loss
"""


def _read_lines(flag: str) -> list[int]:
    raw = STEP.format(flag=flag).encode()
    options = LintOptions(selected=("DDP102",), project_root=".")
    return [f.line for f in lint_source("m.py", raw, options).findings]


@pytest.mark.parametrize("flag", ["should_log", "debug", "plot_now", "verbose"])
def test_a_flag_named_for_logging_makes_its_branch_occasional(flag: str) -> None:
    assert _read_lines(flag) == []


@pytest.mark.parametrize("flag", ["use_amp", "keep_history", "track"])
def test_a_flag_named_otherwise_runs_every_step(flag: str) -> None:
    assert _read_lines(flag) == [8]
