"""A file's suppression comments applied to its findings: what they leave, unknown
codes, bare ``# noqa`` on reported lines, and the suppression rules (DDP900)."""

from __future__ import annotations

from ddplint.engine.selection import suppression_rules
from ddplint.finding import Finding
from ddplint.results import FileOutcome
from ddplint.rules.catalogue import CATALOGUE
from ddplint.settings import LintOptions
from ddplint.suppress import Suppressions


def apply_suppressions(
    outcome: FileOutcome,
    path: str,
    text: str,
    kind: str,
    findings: list[Finding],
    options: LintOptions,
) -> None:
    """The findings the file's suppression comments leave, and what the comments tell:
    unknown codes (warnings), bare ``# noqa`` on a reported line, and the selected
    suppression rules' findings (DDP900), themselves open to suppression."""
    suppressions = Suppressions.for_text(text, kind)
    review = suppressions.review(findings)
    known = tuple(CATALOGUE)
    for directive, code in suppressions.unknown_codes(frozenset(known)):
        outcome.warnings.append(
            f"{directive.line}:{code.column}: unknown rule code `{code.text}` in "
            f"`# {directive.text_kind}` (`ddplint rules` lists the codes)"
        )
    kept = review.kept
    if not outcome.errors:
        selected = frozenset(options.selected)
        for rule in suppression_rules(options.selected):
            found = rule.check_suppressions(path, suppressions, review, selected, known)
            kept += [f for f in found if not suppressions.suppresses(f)]
    outcome.bare_noqa = review.bare_noqa
    outcome.findings = sorted(set(kept), key=lambda f: f.sort_key)
