"""Code after a ``return``, ``raise``, ``break`` or ``continue`` in its block never runs:
no finding is reported there; the code after the block that holds the jump still runs."""

from __future__ import annotations

import pytest

from ddplint.engine import lint_source
from ddplint.settings import LintOptions

OPTIONS = LintOptions(selected=("DDP404",), project_root=".")
HEAD = "from torch.utils.data import DataLoader\n\n\ndef build(ds, pipeline):\n"
LOADER = "loader = DataLoader(ds, persistent_workers=True)"


def lines(text: str) -> list[int]:
    outcome = lint_source("m.py", text.encode(), OPTIONS)
    return [f.line for f in outcome.findings if f.rule == "DDP404"]


@pytest.mark.parametrize(
    "jump",
    ["raise NotImplementedError('no pipeline')", "return None"],
)
def test_code_after_a_jump_in_its_block_is_silent(jump: str) -> None:
    text = HEAD + f"    if pipeline:\n        {jump}\n        {LOADER}\n    return ds\n"
    assert lines(text) == []


def test_the_same_code_before_the_jump_is_reported() -> None:
    text = HEAD + f"    if pipeline:\n        {LOADER}\n        raise NotImplementedError\n"
    assert lines(text) == [6]


def test_code_after_the_block_holding_the_jump_is_reported() -> None:
    text = HEAD + f"    if pipeline:\n        raise NotImplementedError\n    {LOADER}\n"
    assert lines(text) == [7]


def test_a_jump_in_a_loop_leaves_only_its_own_block() -> None:
    text = (
        HEAD
        + "    for part in ds:\n        if part:\n            continue\n"
        + f"        {LOADER}\n"
    )
    assert lines(text) == [8]
    after_break = HEAD + f"    for part in ds:\n        break\n        {LOADER}\n"
    assert lines(after_break) == []
