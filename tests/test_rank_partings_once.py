"""One finding per root cause between DDP201 and DDP219: a parting decided by the rank
itself is DDP201's, every other parting DDP219's, and selected together they never
report one place twice (issue 22, item 8)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixture_harness import ROOT, fixture_files, lint_fixture

from ddplint.engine import lint_source
from ddplint.settings import LintOptions

HAZARDS = [
    path
    for code in ("DDP201", "DDP219")
    for path in fixture_files(code)
    if not path.name.startswith("good_")
]


def _places(path: Path, selected: tuple[str, ...]) -> list[tuple[int, int, str]]:
    options = LintOptions(selected=selected, project_root=str(ROOT))
    outcome = lint_source(path.relative_to(ROOT).as_posix(), path.read_bytes(), options)
    return [(f.line, f.column, f.rule) for f in outcome.findings]


@pytest.mark.parametrize("path", HAZARDS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_each_parting_reported_once(path: Path) -> None:
    both = _places(path, ("DDP201", "DDP219"))
    alone = _places(path, ("DDP201",)) + _places(path, ("DDP219",))
    assert sorted(both) == sorted(alone)  # neither rule drops a finding beside the other
    lines = [line for line, _, _ in both]
    assert len(lines) == len(set(lines)), f"two findings on one line: {sorted(both)}"


def test_rank_test_parting_sits_at_the_test_and_names_the_collective() -> None:
    path = ROOT / "fixtures/rules/DDP201/bad_exit_not_settled.py"
    outcome = lint_fixture(path)
    (finding,) = outcome.findings
    source = path.read_text(encoding="utf-8").splitlines()
    assert source[finding.line - 1].strip().startswith("return")
    named = [source[place.line - 1].strip() for place in finding.related]
    assert any("dist.broadcast" in text for text in named), named
