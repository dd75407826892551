"""Reports list findings in one order whatever order the rules yielded them in: by
place and rule, then (two findings of one rule at one place: a read and the read of
what it returned) by where they end and by message."""

from __future__ import annotations

import itertools

from ddplint.finding import Finding, Severity


def _finding(end_column: int, message: str, line: int = 3) -> Finding:
    return Finding(
        "DDP102", "host-read", Severity.WARNING, "t.py", line, 5, line, end_column, message
    )


def test_findings_at_one_place_sort_the_same_from_any_order() -> None:
    findings = [
        _finding(20, "`loss.to('cpu')` reads"),
        _finding(40, "`loss.to('cpu').numpy()` reads"),
        _finding(20, "`loss.cpu()` reads"),
        _finding(10, "earlier line", line=2),
    ]
    orders = {
        tuple(sorted(set(permutation), key=lambda f: f.sort_key))
        for permutation in itertools.permutations(findings)
    }
    assert len(orders) == 1
    (order,) = orders
    assert [(f.line, f.end_column, f.message) for f in order] == [
        (2, 10, "earlier line"),
        (3, 20, "`loss.cpu()` reads"),
        (3, 20, "`loss.to('cpu')` reads"),
        (3, 40, "`loss.to('cpu').numpy()` reads"),
    ]
