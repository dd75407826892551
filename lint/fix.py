"""Apply fixes to text: edits sorted by position, overlapping fixes resolved in a
fixed order (first in the file wins; the rest wait for the next pass), identical
edits from several findings applied once."""

from __future__ import annotations

from collections.abc import Iterable

from lint.finding import Applicability, Edit, Finding
from lint.source import SourceFile


def applicable(finding: Finding, unsafe: bool) -> bool:
    if finding.fix is None:
        return False
    return unsafe or finding.fix.applicability is Applicability.SAFE


def choose_fixes(findings: Iterable[Finding], unsafe: bool) -> tuple[list[Finding], list[Edit]]:
    """The findings whose fixes can be applied together, and their edits in file order."""
    chosen: list[Finding] = []
    taken: list[tuple[tuple[int, int], tuple[int, int]]] = []
    edits: set[Edit] = set()
    ordered = sorted(
        (f for f in findings if applicable(f, unsafe)),
        key=_fix_order,
    )
    for finding in ordered:
        assert finding.fix is not None
        spans = [((e.line, e.column), (e.end_line, e.end_column)) for e in finding.fix.edits]
        new = [
            (span, e) for span, e in zip(spans, finding.fix.edits, strict=True) if e not in edits
        ]
        if any(_overlaps(span, other) for span, _ in new for other in taken):
            continue
        chosen.append(finding)
        for span, edit in new:
            taken.append(span)
            edits.add(edit)
    return chosen, sorted(edits)


def _fix_order(finding: Finding) -> tuple[tuple[int, int], str]:
    edits = finding.fix.edits if finding.fix else ()
    first = min(((e.line, e.column) for e in edits), default=(0, 0))
    return first, finding.rule


def _overlaps(
    a: tuple[tuple[int, int], tuple[int, int]], b: tuple[tuple[int, int], tuple[int, int]]
) -> bool:
    (a_start, a_end), (b_start, b_end) = a, b
    if a_start == a_end or b_start == b_end:  # insertions clash only inside a replaced span
        return a_start < b_end and b_start < a_end and a_start != b_start
    return a_start < b_end and b_start < a_end


def apply_edits(source: SourceFile, edits: Iterable[Edit]) -> str:
    """The source text with non-overlapping ``edits`` applied."""
    text = source.text
    pieces: list[str] = []
    cursor = 0
    for edit in sorted(edits):
        start = source.offset(edit.line, edit.column)
        end = source.offset(edit.end_line, edit.end_column)
        pieces.append(text[cursor:start])
        pieces.append(edit.content)
        cursor = max(cursor, end)
    pieces.append(text[cursor:])
    return "".join(pieces)
