"""Inline suppressions, in Python and YAML alike.

- ``# noqa: DDP101[, DDP201]`` on a line of the flagged statement (a bare ``# noqa`` is
  left to other tools: it does not silence ddplint);
- ``# ddplint: ignore[DDP101]`` (codes or prefixes), or ``# ddplint: ignore`` for all;
- ``# ddplint: file-ignore[DDP101]`` anywhere in the file, or ``# ddplint: file-ignore``.

Each comment is kept as a ``Directive`` with the place of every code, so that a run can
tell which codes suppressed something (``review``), name the unknown ones, and remove
the unused ones (DDP900). ``noqa_edit`` writes a ``# noqa`` for an editor's "ignore
for this line".
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

from ddplint.finding import Edit, Finding
from ddplint.source import split_lines

_NOQA = re.compile(r"#\s*noqa\s*:\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)", re.I)
_BARE_NOQA = re.compile(r"#\s*noqa\b(?!\s*:)", re.I)
_DIRECTIVE = re.compile(
    r"#\s*ddplint\s*:\s*(?P<kind>ignore|file-ignore)\b(?:\s*\[(?P<codes>[^\]]*)\])?", re.I
)
_CODE = re.compile(r"[^\s,]+")
_QUICK = re.compile(r"noqa|ddplint\s*:", re.I)
#: A YAML comment: ``#`` at the start of a line or after whitespace.
_YAML_COMMENT = re.compile(r"(?:^|\s)(#)")
#: A comment that may name a ddplint code: ``noqa: ... DDP`` or ``ddplint:``.
_OWN_WORDS = (b"DDP", b"ddp", b"Ddp")
_OWN_BYTES = re.compile(rb"noqa\s*:[^\n#]*DDP|ddplint\s*:", re.I)
#: The code of a directive without a code list (``# ddplint: ignore``): every rule.
EVERY_RULE = "*"
#: noqa codes of this prefix are ddplint's; others (E501, F401) belong to other tools.
OWN_PREFIX = "DDP"


def mentions_own_codes(raw: bytes) -> bool:
    """A cheap test on a file's bytes: may it hold a suppression of ddplint's? (Plain
    substring tests first: a case-insensitive regex over every file costs more.)"""
    if not any(word in raw for word in _OWN_WORDS):
        return False
    return _OWN_BYTES.search(raw) is not None


def covers(code: str, rule: str) -> bool:
    return code == EVERY_RULE or rule.startswith(code)


@dataclass(frozen=True)
class Code:
    """One code of a directive and its columns (1-based, end exclusive) on its line."""

    text: str
    column: int
    end_column: int

    @property
    def code(self) -> str:
        return self.text.upper()

    @property
    def ours(self) -> bool:
        return self.code == EVERY_RULE or self.code.startswith(OWN_PREFIX)


@dataclass(frozen=True)
class Directive:
    """One suppression comment: ``noqa``, ``ignore`` or ``file-ignore``, where it is, and
    its codes (a directive without a list has the single code ``*``)."""

    kind: str
    line: int
    column: int
    end_column: int
    codes: tuple[Code, ...]
    #: Where the code list is (``[...]``'s inside, or after ``noqa:``); None without one.
    list_span: tuple[int, int] | None
    #: The whole comment the directive sits in.
    comment_column: int
    comment_end_column: int

    @property
    def text_kind(self) -> str:
        return "noqa" if self.kind == "noqa" else f"ddplint: {self.kind}"

    @property
    def own_codes(self) -> tuple[Code, ...]:
        return tuple(c for c in self.codes if c.ours)

    def applies_to(self, finding: Finding) -> bool:
        """Whether the directive's place covers the finding (not yet its codes)."""
        if self.kind == "file-ignore":
            return True
        first, last = finding.statement_lines or (finding.line, finding.end_line)
        return min(first, finding.line) <= self.line <= max(last, finding.end_line)

    def removal(self, unused: set[Code], line_text: str, last_line: bool) -> Edit:
        """The edit that drops ``unused`` codes: the list rewritten without them, or the
        whole directive when none of its codes is left (the whole line when the line
        holds nothing else)."""
        kept = [c.text for c in self.codes if c not in unused]
        if kept and self.list_span is not None:
            start, end = self.list_span
            return Edit(self.line, start, self.line, end, ", ".join(kept))
        text = line_text.rstrip("\r\n")
        before = text[: self.column - 1]
        after = text[self.end_column - 1 :]
        if self.column == self.comment_column and not before.strip() and not after.strip():
            if last_line:
                return Edit(self.line, 1, self.line, len(text) + 1, "")
            return Edit(self.line, 1, self.line + 1, 1, "")
        if self.column == self.comment_column and after.strip():
            return Edit(self.line, self.column, self.line, self.end_column, "#")
        start = len(before.rstrip()) + 1
        return Edit(self.line, start, self.line, self.end_column, "")


@dataclass
class Review:
    """What the suppressions of one file did to its findings."""

    kept: list[Finding]
    #: (directive, code) pairs that suppressed at least one finding.
    used: set[tuple[Directive, Code]]
    #: Lines of kept findings whose statement carries a bare noqa comment.
    bare_noqa: list[int]


@dataclass
class Suppressions:
    """Suppression comments of one file."""

    directives: list[Directive] = field(default_factory=list)
    #: Lines holding a bare noqa comment (no codes): ddplint does not honour it.
    bare_noqa_lines: set[int] = field(default_factory=set)
    lines: list[str] = field(default_factory=list)

    @classmethod
    def from_comments(cls, comments: list[tuple[int, int, str]]) -> Suppressions:
        """``comments``: (line, 1-based column, comment text) of each comment."""
        found = cls()
        for line, column, comment in comments:
            end = column + len(comment.rstrip())
            for match in _DIRECTIVE.finditer(comment):
                found.directives.append(_directive(match, line, column, end))
            for match in _NOQA.finditer(comment):
                found.directives.append(_directive(match, line, column, end, kind="noqa"))
            if _BARE_NOQA.search(comment):
                found.bare_noqa_lines.add(line)
        return found

    @classmethod
    def for_text(cls, text: str, kind: str) -> Suppressions:
        """Read the comments of a Python (``kind="code"``) or YAML file."""
        if not _QUICK.search(text):
            return cls()
        comments = _python_comments(text) if kind == "code" else _hash_comments(text)
        found = cls.from_comments(comments)
        found.lines = split_lines(text)
        return found

    def suppresses(self, finding: Finding) -> bool:
        return bool(self._covering(finding))

    def _covering(self, finding: Finding) -> list[tuple[Directive, Code]]:
        return [
            (directive, code)
            for directive in self.directives
            if directive.applies_to(finding)
            for code in directive.own_codes
            if covers(code.code, finding.rule)
        ]

    def review(self, findings: list[Finding]) -> Review:
        """Drop the suppressed findings; note which codes were used and which kept
        findings carry a bare ``# noqa``."""
        kept: list[Finding] = []
        used: set[tuple[Directive, Code]] = set()
        bare: list[int] = []
        for finding in findings:
            covering = self._covering(finding)
            used.update(covering)
            if covering:
                continue
            kept.append(finding)
            first, last = finding.statement_lines or (finding.line, finding.end_line)
            lines = range(min(first, finding.line), max(last, finding.end_line) + 1)
            if any(line in self.bare_noqa_lines for line in lines):
                bare.append(finding.line)
        return Review(kept, used, bare)

    def unknown_codes(self, known: frozenset[str]) -> list[tuple[Directive, Code]]:
        """ddplint codes that name no rule (and are no prefix of one), once per place."""
        unknown = [
            (directive, code)
            for directive in self.directives
            for code in directive.own_codes
            if code.code != EVERY_RULE and not any(rule.startswith(code.code) for rule in known)
        ]
        return sorted(unknown, key=lambda pair: (pair[0].line, pair[1].column))

    def line_text(self, line: int) -> str:
        return self.lines[line - 1] if 1 <= line <= len(self.lines) else ""


def _directive(
    match: re.Match[str], line: int, column: int, comment_end: int, kind: str | None = None
) -> Directive:
    """A directive from its regex match in a comment starting at ``column``."""
    listed = match.group("codes")
    codes: tuple[Code, ...]
    if listed is None or not listed.strip():
        codes = (Code(EVERY_RULE, column + match.start(), column + match.end()),)
        span = None
    else:
        base = column + match.start("codes")
        codes = tuple(
            Code(found.group(), base + found.start(), base + found.end())
            for found in _CODE.finditer(listed)
        )
        span = (base, column + match.end("codes"))
    return Directive(
        kind=kind or match.group("kind").lower(),
        line=line,
        column=column + match.start(),
        end_column=column + match.end(),
        codes=codes,
        list_span=span,
        comment_column=column,
        comment_end_column=comment_end,
    )


def _python_comments(text: str) -> list[tuple[int, int, str]]:
    """Real comments only (not ``#`` inside strings); falls back to a line scan."""
    comments: list[tuple[int, int, str]] = []
    # Lines end at \r too (``split_lines``); tokenize's reader splits at \n only.
    unified = text.replace("\r\n", "\n").replace("\r", "\n")
    try:
        for token in tokenize.generate_tokens(io.StringIO(unified).readline):
            if token.type == tokenize.COMMENT:
                comments.append((token.start[0], token.start[1] + 1, token.string))
    except (tokenize.TokenError, SyntaxError):
        return _hash_comments(text)
    return comments


def _hash_comments(text: str) -> list[tuple[int, int, str]]:
    comments = []
    for number, line in enumerate(split_lines(text), start=1):
        position = line.find("#")
        if position >= 0 and _QUICK.search(line, position):
            comments.append((number, position + 1, line[position:].rstrip("\r\n")))
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
        match = _NOQA.search(line, column) if column is not None else None
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
