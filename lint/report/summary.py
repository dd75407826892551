"""The human lines around a report: the closing summary, ``--statistics`` counts and
``--show-fixes``'s list of what was fixed. Words follow ruff's where ruff has them."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable

from ddplint.finding import Finding
from ddplint.fix import applicable
from ddplint.report.printable import printable
from ddplint.results import RunResult


def count(number: int, noun: str, plural: str | None = None) -> str:
    """``1 finding``, ``2 findings``."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


def run_summary(
    result: RunResult,
    *,
    fixed: int = 0,
    known: int = 0,
    unsafe: bool = False,
    checked: bool = True,
) -> str:
    """``Found 3 findings and 1 error. (1 fixable with --fix)``, or after fixing
    ``Found 3 findings (2 fixed, 1 remaining; 1 fixable with --fix --unsafe-fixes).``;
    ``All checks passed.`` only when there is neither a finding nor an error and some
    rule ran (``checked``)."""
    remaining = len(result.findings)
    errors = len(result.errors)
    if not remaining and not errors and not fixed:
        text = "All checks passed." if checked else "Nothing checked: no rule is selected."
    else:
        found = [count(fixed + remaining, "finding")] if remaining or fixed or not errors else []
        if errors:
            found.append(count(errors, "error"))
        notes = [f"{fixed} fixed, {remaining} remaining"] if fixed else []
        notes += _fixable(result.findings, unsafe)
        listed = f" ({'; '.join(notes)})" if notes else ""
        text = f"Found {' and '.join(found)}"
        text += f"{listed}." if fixed else f".{listed}"
    if result.stats.skipped:
        text += f" {count(result.stats.skipped, 'file')} skipped (see the notices)."
    if known:
        text += f" {count(known, 'finding')} in the baseline not shown."
    return text


def _fixable(findings: list[Finding], unsafe: bool) -> list[str]:
    """``2 fixable with --fix``, ``1 more fixable with --fix --unsafe-fixes``: the
    findings whose fixes the flags apply, and those an unsafe fix would."""
    now = sum(1 for f in findings if applicable(f, unsafe))
    hidden = sum(1 for f in findings if f.fix and not applicable(f, unsafe))
    parts = [f"{now} fixable with --fix"] if now else []
    if hidden:
        parts.append(f"{hidden} {'more ' if now else ''}fixable with --fix --unsafe-fixes")
    return parts


def _rule_counts(findings: Iterable[Finding]) -> list[tuple[tuple[str, str], int]]:
    counts = Counter((f.rule, f.name) for f in findings)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def statistics(result: RunResult, unsafe: bool) -> str:
    """One line per rule: count, code, ``[*]`` when some of them are fixable now, name."""
    fixable = {f.rule for f in result.findings if applicable(f, unsafe)}
    return "".join(
        f"{n:>5}  {code}  {'[*]' if code in fixable else '   '} {name}\n"
        for (code, name), n in _rule_counts(result.findings)
    )


def statistics_json(result: RunResult, unsafe: bool) -> str:
    """``--statistics --output-format json``: the same counts as a JSON array."""
    rows = [
        {
            "code": code,
            "name": name,
            "count": n,
            "fixable": any(applicable(f, unsafe) for f in result.findings if f.rule == code),
        }
        for (code, name), n in _rule_counts(result.findings)
    ]
    return json.dumps(rows, indent=2) + "\n"


def fixed_listing(fixed: dict[str, list[Finding]]) -> str:
    """``--show-fixes``: what was fixed, per file and rule (ruff's layout)."""
    total = sum(len(findings) for findings in fixed.values())
    if not total:
        return ""
    lines = [f"Fixed {count(total, 'finding')}:"]
    for path, findings in fixed.items():
        if not findings:
            continue
        lines.append(f"- {printable(path)}:")
        for (code, name), n in _rule_counts(findings):
            lines.append(f"    {n} \N{MULTIPLICATION SIGN} {code} ({name})")
    return "\n".join(lines) + "\n"
