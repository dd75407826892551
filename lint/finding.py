"""Plain data every part of ddplint speaks: findings, fixes, edits and per-file errors."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Protocol


class RuleIdentity(Protocol):
    """What a finding takes from its rule (a rule class or instance): no more, so that
    findings and the contexts that make them never need the rule classes."""

    @property
    def code(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def severity(self) -> Severity: ...


class Severity(str, Enum):
    """How much a finding matters; ``error`` means a crash or a hang is likely."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Applicability(str, Enum):
    """Whether a fix may be applied without review (ruff's model)."""

    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True, order=True)
class Edit:
    """Replace the text between two 1-based positions (end exclusive) with ``content``.

    Columns count characters (code points) of the decoded text, as editors do.
    """

    line: int
    column: int
    end_line: int
    end_column: int
    content: str

    def to_json(self) -> dict[str, Any]:
        return {
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "content": self.content,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Edit:
        return cls(
            data["line"], data["column"], data["end_line"], data["end_column"], data["content"]
        )


@dataclass(frozen=True)
class Fix:
    """A set of edits that resolve one finding together."""

    applicability: Applicability
    edits: tuple[Edit, ...]
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "applicability": self.applicability.value,
            "message": self.message,
            "edits": [e.to_json() for e in self.edits],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Fix:
        return cls(
            Applicability(data["applicability"]),
            tuple(Edit.from_json(e) for e in data["edits"]),
            data.get("message", ""),
        )


@dataclass(frozen=True)
class Related:
    """Another place in the same file a finding points to (the collective skipped, the
    test that parts the ranks): a line and column, 1-based, and what it is."""

    line: int
    column: int
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "column": self.column, "message": self.message}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Related:
        return cls(int(data["line"]), int(data["column"]), str(data["message"]))


@dataclass(frozen=True)
class Finding:
    """One hazard at one place in one file. Lines and columns are 1-based; end is exclusive."""

    rule: str
    name: str
    severity: Severity
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    message: str
    fix: Fix | None = None
    key_path: str | None = None
    #: One short clause (about ruff's length) for concise output; ``message`` is the whole
    #: explanation (full output, JSON, SARIF). Empty: concise output shows ``message``.
    summary: str = ""
    # Lines of the enclosing statement: a suppression comment on any of them applies.
    # Internal: not part of the JSON output.
    statement_lines: tuple[int, int] | None = field(default=None, compare=False)
    #: Other places of the file the finding names (SARIF ``relatedLocations``, LSP
    #: ``relatedInformation``, the full text format).
    related: tuple[Related, ...] = ()

    @classmethod
    def of(
        cls,
        rule: RuleIdentity,
        path: str,
        span: tuple[int, int, int, int],
        message: str,
        fix: Fix | None = None,
        key_path: str | None = None,
        statement_lines: tuple[int, int] | None = None,
        summary: str = "",
        related: tuple[Related, ...] = (),
    ) -> Finding:
        """A finding of ``rule`` over ``span`` = (line, column, end_line, end_column)."""
        line, column, end_line, end_column = span
        return cls(
            rule=rule.code,
            name=rule.name,
            severity=rule.severity,
            path=path,
            line=line,
            column=column,
            end_line=end_line,
            end_column=end_column,
            message=message,
            fix=fix,
            key_path=key_path,
            summary=summary,
            statement_lines=statement_lines,
            related=related,
        )

    @property
    def sort_key(self) -> tuple[str, int, int, str, int, int, str]:
        """Reports list findings by place, then rule; two findings of one rule at one
        place by where they end, then by message (an order that never depends on how a
        set of them was iterated)."""
        return (
            self.path,
            self.line,
            self.column,
            self.rule,
            self.end_line,
            self.end_column,
            self.message,
        )

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "rule": self.rule,
            "name": self.name,
            "severity": self.severity.value,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "message": self.message,
            "fix": self.fix.to_json() if self.fix else None,
        }
        if self.key_path is not None:
            data["key_path"] = self.key_path
        if self.summary:
            data["summary"] = self.summary
        if self.related:
            data["related"] = [place.to_json() for place in self.related]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Finding:
        fix = data.get("fix")
        return cls(
            rule=data["rule"],
            name=data["name"],
            severity=Severity(data["severity"]),
            path=data["path"],
            line=data["line"],
            column=data["column"],
            end_line=data["end_line"],
            end_column=data["end_column"],
            message=data["message"],
            fix=Fix.from_json(fix) if fix else None,
            key_path=data.get("key_path"),
            summary=data.get("summary", ""),
            related=tuple(Related.from_json(place) for place in data.get("related", ())),
        )

    @property
    def short_message(self) -> str:
        """What concise output shows: the summary, or the whole message without one."""
        return self.summary or self.message

    def with_path(self, path: str) -> Finding:
        return replace(self, path=path)


@dataclass(frozen=True)
class FileError:
    """A file that could not be read, decoded or parsed, or a rule that crashed on it."""

    path: str
    message: str
    rule: str | None = None
    line: int | None = None
    column: int | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"path": self.path, "message": self.message}
        if self.rule is not None:
            data["rule"] = self.rule
        if self.line is not None:
            data["line"] = self.line
            data["column"] = self.column
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FileError:
        return cls(
            data["path"], data["message"], data.get("rule"), data.get("line"), data.get("column")
        )

    def with_path(self, path: str) -> FileError:
        return replace(self, path=path)
