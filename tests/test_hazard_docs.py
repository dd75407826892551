"""docs/hazards.md is generated from the rules' documentation and must match it: a rule
added or edited without regenerating the catalogue fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

from ddplint import hazard_docs
from ddplint.rules import all_rules

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = ROOT / "docs" / "hazards.md"


def test_committed_catalogue_matches_the_rules() -> None:
    assert CATALOGUE.read_text(encoding="utf-8") == hazard_docs.render(), (
        "docs/hazards.md is out of date: run `python -m ddplint.hazard_docs`"
    )


@pytest.mark.parametrize("code", sorted(all_rules()))
def test_every_rule_has_an_entry_and_cites_no_missing_document(code: str) -> None:
    rule = all_rules()[code]
    assert f'<a id="{code.lower()}"></a>\n\n## {code} {rule.name}\n' in hazard_docs.render()
    assert "HAZARDS.md" not in rule.documentation(), "cite docs/hazards.md#ddpNNN instead"


def test_citations_between_entries_resolve() -> None:
    assert hazard_docs.dangling_citations() == []
    assert "[DDP404](#ddp404): the same error in Python code" in hazard_docs.render()


def test_check_mode_reports_a_stale_file(tmp_path: Path) -> None:
    stale = tmp_path / "hazards.md"
    stale.write_text(hazard_docs.render().replace("DDP201", "DDP2O1", 1), encoding="utf-8")
    assert hazard_docs.main(["--check", str(stale)]) == 1
    assert hazard_docs.main([str(stale)]) == 0
    assert hazard_docs.main(["--check", str(stale)]) == 0
    assert stale.read_text(encoding="utf-8") == hazard_docs.render()
