"""Inline suppressions, in Python and YAML alike.

- ``# noqa: DDP101[, DDP201]`` on a line of the flagged statement (a bare ``# noqa`` is
  left to other tools: it does not silence ddplint);
- ``# ddplint: ignore[DDP101]`` (codes or prefixes), or ``# ddplint: ignore`` for all;
- ``# ddplint: file-ignore[DDP101]`` anywhere in the file, or ``# ddplint: file-ignore``.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

from ddplint.finding import Finding
from ddplint.source import split_lines

_NOQA = re.compile(r"#\s*noqa\s*:\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)", re.I)
_DIRECTIVE = re.compile(
    r"#\s*ddplint\s*:\s*(?P<kind>ignore|file-ignore)\b(?:\s*\[(?P<codes>[^\]]*)\])?", re.I
)
_QUICK = re.compile(r"noqa|ddplint\s*:", re.I)
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
            for match in _NOQA.finditer(comment):
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
