"""Inline suppressions, in Python and YAML alike.

- ``# noqa: DDP101[, DDP201]`` on a line of the flagged statement (a bare ``# noqa`` is
  left to other tools: it does not silence ddplint);
- ``# ddplint: ignore[DDP101]`` (codes or prefixes), or ``# ddplint: ignore`` for all;
- ``# ddplint: file-ignore[DDP101]`` anywhere in the file, or ``# ddplint: file-ignore``.

``noqa_edit`` writes the first kind for an editor's "ignore for this line".
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

from ddplint.finding import Edit, Finding
from ddplint.source import split_lines

NOQA = re.compile(r"#\s*noqa\s*:\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)", re.I)
_DIRECTIVE = re.compile(
    r"#\s*ddplint\s*:\s*(?P<kind>ignore|file-ignore)\b(?:\s*\[(?P<codes>[^\]]*)\])?", re.I
)
_QUICK = re.compile(r"noqa|ddplint\s*:", re.I)
#: A YAML comment: ``#`` at the start of a line or after whitespace.
_YAML_COMMENT = re.compile(r"(?:^|\s)(#)")
ALL = frozenset({"*"})


def _codes(text: str | None) -> frozenset[str]:
    if not text or not text.strip():
        return ALL
    return frozenset(c.strip().upper() for c in text.split(",") if c.strip())


def _covers(codes: frozenset[str], rule: str) -> bool:
    return "*" in codes or any(rule.startswith(c) for c in codes)


@dataclass
class Suppressions:
    """Suppression comments of one file, by line."""

    by_line: dict[int, set[str]] = field(default_factory=dict)
    file_codes: set[str] = field(default_factory=set)

    @classmethod
    def from_comments(cls, comments: list[tuple[int, str]]) -> Suppressions:
        found = cls()
        for line, comment in comments:
            for match in _DIRECTIVE.finditer(comment):
                codes = _codes(match.group("codes"))
                if match.group("kind").lower() == "file-ignore":
                    found.file_codes.update(codes)
                else:
                    found.by_line.setdefault(line, set()).update(codes)
            for match in NOQA.finditer(comment):
                codes = frozenset(c for c in _codes(match.group("codes")) if c.startswith("DDP"))
                if codes:
                    found.by_line.setdefault(line, set()).update(codes)
        return found

    @classmethod
    def for_text(cls, text: str, kind: str) -> Suppressions:
        """Read the comments of a Python (``kind="code"``) or YAML file."""
        if not _QUICK.search(text):
            return cls()
        comments = _python_comments(text) if kind == "code" else _hash_comments(text)
        return cls.from_comments(comments)

    def suppresses(self, finding: Finding) -> bool:
        if self.file_codes and _covers(frozenset(self.file_codes), finding.rule):
            return True
        first, last = finding.statement_lines or (finding.line, finding.end_line)
        first, last = min(first, finding.line), max(last, finding.end_line)
        for line in range(first, last + 1):
            codes = self.by_line.get(line)
            if codes and _covers(frozenset(codes), finding.rule):
                return True
        return False


def _python_comments(text: str) -> list[tuple[int, str]]:
    """Real comments only (not ``#`` inside strings); falls back to a line scan."""
    comments: list[tuple[int, str]] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                comments.append((token.start[0], token.string))
    except (tokenize.TokenError, SyntaxError):
        return _hash_comments(text)
    return comments


def _hash_comments(text: str) -> list[tuple[int, str]]:
    comments = []
    for number, line in enumerate(split_lines(text), start=1):
        position = line.find("#")
        if position >= 0 and _QUICK.search(line, position):
            comments.append((number, line[position:]))
    return comments


def noqa_edit(text: str, kind: str, first: int, last: int, code: str) -> Edit | None:
    """The edit that silences ``code`` on the first line from ``first`` to ``last`` where
    a comment can end the line (not inside a string, not after a ``\\`` continuation):
    ``  # noqa: CODE`` appended, or the code added to a ``# noqa: ...`` already there.
    None when no line of the range can take a comment."""
    lines = split_lines(text)
    comments, blocked = _comment_columns(text, kind)
    for number in range(first, min(last, len(lines)) + 1):
        line = lines[number - 1].rstrip("\r\n")
        column = comments.get(number)
        if column is None and (number in blocked or line.endswith("\\")):
            continue
        match = NOQA.search(line, column) if column is not None else None
        if match is not None:
            end = match.end("codes") + 1
            return Edit(number, end, number, end, f", {code}")
        end = len(line.rstrip()) + 1
        return Edit(number, end, number, len(line) + 1, f"  # noqa: {code}")
    return None


def _comment_columns(text: str, kind: str) -> tuple[dict[int, int], set[int]]:
    """The 0-based column of each line's comment, and the lines that end inside a
    string (a ``#`` added there would be text, not a comment)."""
    comments: dict[int, int] = {}
    blocked: set[int] = set()
    if kind != "code":
        for number, line in enumerate(split_lines(text), start=1):
            match = _YAML_COMMENT.search(line)
            if match is not None:
                comments[number] = match.start(1)
        return comments, blocked
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                comments[token.start[0]] = token.start[1]
            elif token.start[0] < token.end[0]:
                blocked.update(range(token.start[0], token.end[0]))
    except (tokenize.TokenError, SyntaxError):
        pass
    return comments, blocked
