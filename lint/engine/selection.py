"""Which rules and fact collectors a file gets, asked of the rule catalogue: a rule's
module is imported only for a file that passes its pre-filter and its screen."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from ddplint.rule import CodeRule, ConfigRule, SuppressionRule
from ddplint.rules import rule_class
from ddplint.rules.catalogue import CATALOGUE, RuleEntry
from ddplint.settings import LintOptions

if TYPE_CHECKING:
    from ddplint.code.fact_collectors import FactCollector


@cache
def _rule(code: str) -> Any:
    """An instance of rule ``code`` (its module imported now, when first needed)."""
    return rule_class(code)()


def passing_rules(
    selected: tuple[str, ...], kind: str, path: str, raw: bytes, informed: bool
) -> list[RuleEntry]:
    """The catalogue entries of the selected rules of this kind that read ``path`` and
    whose pre-filter the bytes pass (``informed``: the project's facts stand for the
    words they can; see ``RuleEntry.prefilter``); no rule module is imported."""
    entries = (CATALOGUE.get(code) for code in selected)
    return [
        entry
        for entry in entries
        if entry is not None
        and entry.kind == kind
        and entry.reads(path)
        and entry.prefilter(raw, informed)
    ]


def rule_instances(entries: Sequence[RuleEntry]) -> list[CodeRule | ConfigRule]:
    """The rules of these entries (a rule's module imported now, when first needed)."""
    return [_rule(entry.code) for entry in entries]


def suppression_rules(selected: tuple[str, ...]) -> list[SuppressionRule]:
    kinds = ((code, CATALOGUE.get(code)) for code in selected)
    return [_rule(code) for code, entry in kinds if entry and entry.kind == "suppression"]


def fact_collectors(kinds: Sequence[str], raw: bytes) -> list[FactCollector]:
    if not kinds:
        return []
    from ddplint.code.fact_collectors import COLLECTORS

    wanted = (COLLECTORS[k] for k in kinds if k in COLLECTORS)
    return [c for c in wanted if any(n.encode() in raw for n in c.needles)]


def facts_wanted(options: LintOptions, config_raws: list[bytes]) -> tuple[str, ...]:
    """Code-fact kinds some selected config rule could use on these YAML files (read
    from the rule catalogue: no rule module is imported)."""
    kinds: set[str] = set()
    for code in options.selected:
        rule = CATALOGUE.get(code)
        if rule is not None and rule.kind == "config" and rule.code_facts:
            needles = [n.encode() for n in rule.needles or ("",)]
            if any(n in raw for raw in config_raws for n in needles):
                kinds.update(rule.code_facts)
    return tuple(sorted(kinds))
