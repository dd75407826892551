"""Every rule documents itself with ruff's headings, and its name and code are unique."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ddplint.rules import all_rules

HEADINGS = (
    "## What it does",
    "## Why is this bad?",
    "## Example",
    "## Use instead",
    "## Fix safety",
    "## References",
)


@pytest.mark.parametrize("code", sorted(all_rules()))
def test_documentation_has_every_heading_in_order(code: str) -> None:
    text = all_rules()[code].documentation()
    positions = [text.find(heading) for heading in HEADINGS]
    assert -1 not in positions, f"{code} lacks {HEADINGS[positions.index(-1)]}"
    assert positions == sorted(positions)


@pytest.mark.parametrize("code", sorted(all_rules()))
def test_metadata(code: str) -> None:
    rule = all_rules()[code]
    assert rule.code == code and re.fullmatch(r"DDP\d{3}", code)
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name)
    assert rule.summary and not rule.summary.endswith(".")
    names = [r.name for r in all_rules().values()]
    assert names.count(rule.name) == 1


def test_readme_counts_the_rules_as_the_registry_does() -> None:
    """The README's opening count of rules, and of those on by default, is the
    registry's: a rule added, retired, promoted or demoted changes it."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    found = re.search(r"^(\d+) rules, (\d+) on by default", readme, re.MULTILINE)
    assert found is not None, "README.md no longer says how many rules there are"
    rules = all_rules()
    on = sum(1 for rule in rules.values() if rule.default_enabled)
    assert (int(found[1]), int(found[2])) == (len(rules), on)
