"""Every rule documents itself with ruff's headings, in that order."""

from __future__ import annotations

import pytest

from rules import all_rules

HEADINGS = (
    "## What it does",
    "## Why is this bad?",
    "## Example",
    "## Use instead",
    "## Fix safety",
    "## References",
)


@pytest.mark.parametrize("code", sorted(all_rules()))
def test_documentation_has_the_headings_in_order(code: str) -> None:
    text = all_rules()[code].documentation()
    positions = [text.find(heading) for heading in HEADINGS]
    assert -1 not in positions, f"{code} lacks {HEADINGS[positions.index(-1)]}"
    assert positions == sorted(positions)
