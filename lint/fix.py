"""Apply fixes to text: edits sorted by position, overlapping fixes resolved in a
fixed order (first in the file wins; the rest wait for the next pass), identical
edits from several findings applied once, and a check that the result still parses."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import replace

from ddplint.deep_stack import call_with_deep_stack
from ddplint.finding import Applicability, Edit, Finding
from ddplint.source import SourceFile, split_lines

_LINE_END = re.compile(r"\r\n|\r|\n")


def applicable(finding: Finding, unsafe: bool) -> bool:
    if finding.fix is None:
        return False
    return unsafe or finding.fix.applicability is Applicability.SAFE


def choose_fixes(findings: Iterable[Finding], unsafe: bool) -> tuple[list[Finding], list[Edit]]:
    """The findings whose fixes can be applied together, and their edits in file order.

    Fixes are taken in file order (first edit position, then rule code, then the edits
    themselves, so the choice never depends on the order rules ran in); a fix that
    overlaps one already taken waits for the next pass. An edit several fixes share
    (an import they all need) is applied once.
    """
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


def edits_of(findings: Iterable[Finding]) -> list[Edit]:
    """The distinct edits of the findings' fixes, in file order."""
    return sorted({e for f in findings if f.fix is not None for e in f.fix.edits})


def _fix_order(finding: Finding) -> tuple[tuple[int, int], str, tuple[Edit, ...]]:
    edits = finding.fix.edits if finding.fix else ()
    first = min(((e.line, e.column) for e in edits), default=(0, 0))
    return first, finding.rule, tuple(sorted(edits))


def _overlaps(
    a: tuple[tuple[int, int], tuple[int, int]], b: tuple[tuple[int, int], tuple[int, int]]
) -> bool:
    (a_start, a_end), (b_start, b_end) = a, b
    if a_start == a_end or b_start == b_end:  # insertions clash only inside a replaced span
        return a_start < b_end and b_start < a_end and a_start != b_start
    return a_start < b_end and b_start < a_end


def apply_edits(source: SourceFile, edits: Iterable[Edit]) -> str:
    """The source text with non-overlapping ``edits`` applied.

    Line ends inside inserted text become the file's (a ``\\n`` is ``\\r\\n`` in a CRLF
    file), so a fix never mixes line endings.
    """
    text = source.text
    newline = source.newline()
    pieces: list[str] = []
    cursor = 0
    for edit in sorted(edits):
        start = source.offset(edit.line, edit.column)
        end = source.offset(edit.end_line, edit.end_column)
        pieces.append(text[cursor:start])
        pieces.append(with_line_ends(edit.content, newline))
        cursor = max(cursor, end)
    pieces.append(text[cursor:])
    return "".join(pieces)


def with_line_ends(text: str, newline: str) -> str:
    """``text`` with every line end made ``newline`` (inserted text takes the file's)."""
    return _LINE_END.sub(newline, text)


def with_text(source: SourceFile, text: str) -> SourceFile:
    """The same file (path, encoding, BOM) holding ``text``.

    Raises UnicodeEncodeError when ``text`` cannot be stored in the file's encoding.
    """
    return replace(source, text=text, raw=source.encode(text), _lines=None)


def _load_all_yaml(text: str) -> None:
    from ruamel.yaml import YAML

    for _ in YAML(typ="rt").load_all(text):
        pass


def syntax_problem(kind: str, text: str) -> str | None:
    """Why ``text`` does not parse as Python (``kind="code"``) or YAML, or None.

    Python must satisfy both CPython's parser (which runs nothing) and LibCST's; YAML
    must load with ruamel's round-trip loader (plain maps, lists and scalars: no tag
    builds an object), duplicate keys included. LibCST and ruamel are imported here, as
    a fix is checked: a run that fixes nothing needs neither.
    """
    if kind == "code":
        import libcst as cst

        try:
            ast.parse(text)
        except SyntaxError as exc:
            return f"line {exc.lineno}: {exc.msg}"
        except (ValueError, RecursionError, MemoryError) as exc:
            return f"{type(exc).__name__}: {exc}"
        try:
            cst.parse_module(text)
        except cst.ParserSyntaxError as exc:
            return f"line {exc.raw_line}: {exc.message}"
        except RecursionError:
            return "nesting too deep"
        return None
    from ruamel.yaml.error import YAMLError

    try:
        call_with_deep_stack(_load_all_yaml, text)
    except RecursionError:
        return "nesting too deep"
    except YAMLError as exc:
        problem = getattr(exc, "problem", None) or type(exc).__name__
        mark = getattr(exc, "problem_mark", None)
        return f"line {mark.line + 1}: {problem}" if mark is not None else str(problem)
    return None


def unified_diff(path: str, before: str, after: str, context: int = 3) -> str:
    """``--- a/PATH`` / ``+++ b/PATH`` diff of two texts of a file, line ends kept, with
    ``context`` unchanged lines around each change."""
    import difflib  # a diff is asked for by few runs

    name = path.lstrip("/")
    lines = difflib.unified_diff(
        split_lines(before),
        split_lines(after),
        fromfile=f"a/{name}",
        tofile=f"b/{name}",
        n=context,
    )
    out = []
    for line in lines:
        out.append(line)
        if not line.endswith(("\n", "\r")):
            out.append("\n\\ No newline at end of file\n")
    return "".join(out)
