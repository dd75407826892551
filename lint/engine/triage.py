"""Before a parse: a file too large, too deep, unreadable or that no rule or fact
collector could fire on gets its outcome here; the others a plan of what to run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ddplint.code.project.encoding import OPTIONS_KEY as PROJECT_KEY
from ddplint.code.project.encoding import informs_rules
from ddplint.engine.selection import fact_collectors, passing_rules
from ddplint.engine.suppressions import apply_suppressions
from ddplint.finding import FileError
from ddplint.results import SKIPPED, FileOutcome
from ddplint.settings import LintOptions
from ddplint.source import (
    SourceError,
    SourceFile,
    file_kind,
    is_json,
)
from ddplint.suppress import mentions_own_codes

if TYPE_CHECKING:
    from ddplint.code.fact_collectors import FactCollector
    from ddplint.rules.catalogue import RuleEntry


def _size_notice(size: int, limit: int) -> str:
    return f"{SKIPPED}{size} bytes is above max-file-size ({limit})"


def too_large_outcome(path: str, size: int, limit: int) -> FileOutcome:
    """A file above the size limit: a notice, except for JSON (large JSON files are
    data, never the configuration the JSON rules read)."""
    return FileOutcome() if is_json(path) else FileOutcome(notices=[_size_notice(size, limit)])


def beyond_bounds(raw: bytes) -> str | None:
    """Why a Python file is too large to analyse (``safe_parse.too_large``), or None."""
    from ddplint.code.syntax.safe_parse import too_large

    return too_large(raw)


def _unreadable(path: str, raw: bytes) -> FileOutcome | None:
    """An error outcome for bytes that cannot be text (NUL bytes, bad encoding), else
    None: a file no rule needs is still checked, so binary content never passes."""
    try:
        SourceFile.decode(path, raw)
    except SourceError as exc:
        return FileOutcome(errors=[FileError(path, exc.message, line=exc.line, column=exc.column)])
    return None


@dataclass(frozen=True)
class Plan:
    """What a file that must be parsed is parsed for: its rules (their catalogue
    entries: a rule's module is imported once its screen passes) and fact collectors,
    or (``syntax_only``) nothing but to say why Python code does not parse."""

    kind: str
    rules: list[RuleEntry]
    collectors: list[FactCollector]
    syntax_only: bool = False


def _compiles(path: str, raw: bytes) -> bool:
    """Whether CPython's parser reads the file (cheap: no LibCST). A file it refuses
    may still be newer syntax than this Python, which LibCST decides."""
    from ddplint.code.syntax.python_ast import parse_python

    try:
        parse_python(SourceFile.decode(path, raw).text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def triage_file(
    path: str,
    raw: bytes,
    options: LintOptions,
    collect: Sequence[str],
    known_to_parse: bool = False,
) -> FileOutcome | Plan:
    """The outcome of a file that needs no parse (too big, or no rule or fact collector
    could fire on it), or the plan for parsing it. Cheap: substring tests on bytes, and
    CPython's parser on a Python file no rule needs unless ``known_to_parse`` (the
    project model read it already; one that does not parse is parsed to say why: never
    passed unread)."""
    kind = file_kind(path)
    if kind is None:
        return FileOutcome()
    if len(raw) > options.max_file_size:
        return too_large_outcome(path, len(raw), options.max_file_size)
    if kind == "code" and (problem := beyond_bounds(raw)) is not None:
        return FileOutcome(notices=[f"{SKIPPED}{problem}"])
    collectors = fact_collectors(collect, raw) if kind == "code" else []
    # A file that uses project names reaching collectives or testing the rank may hold
    # a hazard without any of the words the rules' pre-filters look for.
    informed = kind == "code" and informs_rules(options.fact(PROJECT_KEY))
    rules = passing_rules(options.selected, kind, path, raw, informed)
    if not rules and not collectors:
        if is_json(path):  # JSON no rule reads (package.json, data) is not ours to judge
            return FileOutcome(prefiltered=True)
        outcome = _unreadable(path, raw) or FileOutcome(prefiltered=True)
        unread = not outcome.errors and kind == "code" and not known_to_parse
        if unread and not _compiles(path, raw):
            return Plan(kind, [], [], syntax_only=True)  # never passed unread
        if not outcome.errors and mentions_own_codes(raw):
            text = SourceFile.decode(path, raw).text
            apply_suppressions(outcome, path, text, kind, [], options)
        return outcome
    return Plan(kind, rules, collectors)


def prefilter(
    path: str,
    raw: bytes,
    options: LintOptions,
    collect: Sequence[str] = (),
    known_to_parse: bool = False,
) -> FileOutcome | None:
    """The outcome of a file that needs no parse, or None when it must be parsed."""
    plan = triage_file(path, raw, options, collect, known_to_parse)
    return plan if isinstance(plan, FileOutcome) else None
