"""What a run produced: each file's outcome (cached as it is), the run's counts and
its result, which the report formats print. Plain data: no engine code."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ddplint import code_facts
from ddplint.discover import Target
from ddplint.finding import FileError, Finding


@dataclass
class FileOutcome:
    """What linting one file produced."""

    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    #: Problems with the file's suppression comments (unknown codes), ``line:col: text``.
    warnings: list[str] = field(default_factory=list)
    #: Lines of findings left although their statement has a bare noqa comment.
    bare_noqa: list[int] = field(default_factory=list)
    parsed: bool = False
    prefiltered: bool = False
    internal_error: bool = False
    #: Code facts for config rules (``ddplint.code_facts``), by kind; code files only.
    facts: dict[str, list[code_facts.Record]] = field(default_factory=dict)
    #: What the findings rest on outside the file: the answers the project's configs
    #: gave (``code.values.shipped_precision``), checked before a cached outcome is used.
    config_answers: dict[str, bool] = field(default_factory=dict)

    def to_cache(self) -> dict[str, Any]:
        return {
            "findings": [f.to_json() for f in self.findings],
            "errors": [e.to_json() for e in self.errors],
            "notices": self.notices,
            "warnings": self.warnings,
            "bare_noqa": self.bare_noqa,
            "parsed": self.parsed,
            "prefiltered": self.prefiltered,
            "facts": self.facts,
            "config_answers": self.config_answers,
        }

    @classmethod
    def from_cache(cls, data: dict[str, Any]) -> FileOutcome:
        return cls(
            findings=[Finding.from_json(f) for f in data["findings"]],
            errors=[FileError.from_json(e) for e in data["errors"]],
            notices=list(data.get("notices", [])),
            warnings=list(data.get("warnings", [])),
            bare_noqa=list(data.get("bare_noqa", [])),
            parsed=data["parsed"],
            prefiltered=data["prefiltered"],
            facts=dict(data.get("facts", {})),
            config_answers=dict(data.get("config_answers", {})),
        )


@dataclass
class RunStats:
    files: int = 0
    cached: int = 0
    parsed: int = 0
    prefiltered: int = 0
    #: Files not linted: too large, or too deeply nested (each has a notice).
    skipped: int = 0
    #: Module summaries built (not found in the cache) for the project model.
    summarised: int = 0
    #: Modules whose names were resolved again (the others' links came from the cache).
    linked: int = 0


@dataclass
class RunResult:
    findings: list[Finding]
    errors: list[FileError]
    notices: list[str]
    stats: RunStats
    #: True when a rule crashed or the engine failed on a file (exit code 2).
    internal_error: bool = False
    #: The files that were linted, in order.
    targets: list[Target] = field(default_factory=list)
    #: Problems with suppression comments, ``path:line:col: text``.
    warnings: list[str] = field(default_factory=list)
    #: Findings reported although their statement has a bare noqa comment.
    bare_noqa: list[Finding] = field(default_factory=list)


#: How a notice about a file that was not linted begins.
SKIPPED = "skipped: "
