"""Fixture-driven rule tests (TorchFix / ruff style), one set per rule code.

``fixtures/rules/<CODE>/`` holds inputs; ``NAME.expected`` lists ``line:col CODE`` per
finding (files named ``good_*`` must have none); ``NAME.fixed.<ext>`` is the file after
every fix the rule offers; ``snapshot.txt`` is the rendered output a user sees.
Set ``DDPLINT_UPDATE_SNAPSHOTS=1`` to rewrite snapshots after reviewing a change.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fixture_harness import (
    FIXTURES,
    ROOT,
    apply_all_fixes,
    expected_lines,
    finding_lines,
    fixed_path,
    fixture_files,
    lint_fixture,
    rule_of,
    unified_diff,
)

from ddplint.engine import RunResult, RunStats, lint_source
from ddplint.report import ReportContext
from ddplint.report.text import render_full
from ddplint.rules import all_rules
from ddplint.settings import LintOptions

ALL_FIXTURES = fixture_files()


def _id(path: Path) -> str:
    return f"{rule_of(path)}/{path.name}"


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=_id)
def test_findings_match_expected(path: Path) -> None:
    outcome = lint_fixture(path)
    assert outcome.errors == []
    expected = expected_lines(path)
    if path.name.startswith("good_"):
        assert not path.with_suffix(".expected").exists(), "good_ fixtures expect nothing"
        assert finding_lines(outcome) == []
    else:
        assert expected, f"{path.name}: a hazardous fixture needs a non-empty .expected"
        assert finding_lines(outcome) == expected


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=_id)
def test_fix_output(path: Path) -> None:
    outcome = lint_fixture(path)
    target = fixed_path(path)
    offered = [f for f in outcome.findings if f.fix is not None]
    if not target.exists():
        assert not offered, f"{path.name} offers fixes: add {target.name}"
        return
    fixed = apply_all_fixes(path, outcome)
    assert fixed == target.read_text(encoding="utf-8")
    compile(fixed, target.name, "exec") if path.suffix == ".py" else None


def _snapshot(code: str) -> str:
    parts = []
    for path in fixture_files(code):
        outcome = lint_fixture(path)
        if not outcome.findings:
            continue
        result = RunResult(outcome.findings, [], [], RunStats())
        lines = (ROOT / outcome.findings[0].path).read_text(encoding="utf-8").splitlines(True)
        parts.append(render_full(result, ReportContext(read_lines=lambda _p, _l=lines: _l)))
        target = fixed_path(path)
        if target.exists():
            before = path.read_text(encoding="utf-8")
            parts.append(unified_diff(before, target.read_text(encoding="utf-8"), path.name))
    return "\n".join(parts)


@pytest.mark.parametrize("code", sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()))
def test_rendered_snapshot(code: str) -> None:
    snapshot = FIXTURES / code / "snapshot.txt"
    rendered = _snapshot(code)
    if os.environ.get("DDPLINT_UPDATE_SNAPSHOTS"):
        snapshot.write_text(rendered, encoding="utf-8")
    assert snapshot.exists(), f"missing {snapshot}; run with DDPLINT_UPDATE_SNAPSHOTS=1"
    assert rendered == snapshot.read_text(encoding="utf-8")


def _retired_for(code: str) -> str | None:
    return getattr(all_rules()[code], "retired_for", None)


@pytest.mark.parametrize("code", sorted(all_rules()))
def test_every_rule_has_fixtures_both_ways(code: str) -> None:
    files = fixture_files(code) if (FIXTURES / code).is_dir() else []
    assert any(p.name.startswith("good_") for p in files), f"{code}: no good_ fixture"
    if _retired_for(code) is None:
        assert any(not p.name.startswith("good_") for p in files), f"{code}: no hazardous fixture"


@pytest.mark.parametrize("code", [c for c in sorted(all_rules()) if _retired_for(c)])
def test_retired_rule_leaves_its_findings_to_its_successor(code: str) -> None:
    """A retired rule reports nothing on its successor's hazardous fixtures, where the
    successor does report: each root cause once."""
    successor = _retired_for(code)
    assert successor is not None
    hazards = [p for p in fixture_files(successor) if not p.name.startswith("good_")]
    assert hazards, f"{successor} has no hazardous fixture"
    for path in hazards:
        display = path.relative_to(ROOT).as_posix()
        both = LintOptions(selected=(code, successor), project_root=str(ROOT))
        found = {f.rule for f in lint_source(display, path.read_bytes(), both).findings}
        assert found == {successor}, path.name
