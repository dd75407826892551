"""Run the selected rules over files: pre-filter, one parse per file, suppressions,
content-hash cache and a process pool. The engine owns files and processes; rules only
return findings."""

from __future__ import annotations

import ast
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from functools import lru_cache, wraps
from pathlib import Path
from typing import Any

import libcst as cst

from lint.cache import ResultCache, content_hash
from lint.code.safe_parse import ParseLimitExceeded
from lint.deep_stack import call_with_deep_stack
from lint.discover import Target, discover
from lint.finding import FileError, Finding
from lint.rule import CodeRule, ConfigRule
from lint.settings import LintOptions, Settings, ignored_for_path
from lint.source import FileTooLarge, SourceError, SourceFile, file_kind, read_source_bytes
from lint.suppress import Suppressions
from rules import all_rules

#: Below this many files to parse, a process pool costs more than it saves.
POOL_THRESHOLD = 24


@dataclass
class FileOutcome:
    """What linting one file produced."""

    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    parsed: bool = False
    prefiltered: bool = False
    internal_error: bool = False

    def to_cache(self) -> dict[str, Any]:
        return {
            "findings": [f.to_json() for f in self.findings],
            "errors": [e.to_json() for e in self.errors],
            "notices": self.notices,
            "parsed": self.parsed,
            "prefiltered": self.prefiltered,
        }

    @classmethod
    def from_cache(cls, data: dict[str, Any]) -> FileOutcome:
        return cls(
            findings=[Finding.from_json(f) for f in data["findings"]],
            errors=[FileError.from_json(e) for e in data["errors"]],
            notices=list(data.get("notices", [])),
            parsed=data["parsed"],
            prefiltered=data["prefiltered"],
        )


@dataclass
class RunStats:
    files: int = 0
    cached: int = 0
    parsed: int = 0
    prefiltered: int = 0


@dataclass
class RunResult:
    findings: list[Finding]
    errors: list[FileError]
    notices: list[str]
    stats: RunStats
    #: True when a rule crashed or the engine failed on a file (exit code 2).
    internal_error: bool = False


@lru_cache(maxsize=8)
def _rule_instances(selected: tuple[str, ...]) -> tuple[CodeRule | ConfigRule, ...]:
    rules = all_rules()
    instances = (rules[code]() for code in selected if code in rules)
    return tuple(r for r in instances if isinstance(r, (CodeRule, ConfigRule)))


def _parse_error(path: str, text: str, exc: cst.ParserSyntaxError) -> FileError:
    """Python's own parser words syntax errors better than LibCST's; it runs nothing."""
    try:
        ast.parse(text)
    except SyntaxError as syntax:
        return FileError(
            path, f"cannot parse: {syntax.msg}", line=syntax.lineno, column=syntax.offset
        )
    except (ValueError, RecursionError, MemoryError):
        pass
    message = exc.message.removeprefix("parser error: ")
    return FileError(path, f"cannot parse: {message}", line=exc.raw_line, column=exc.raw_column + 1)


def _build_context(source: SourceFile, options: LintOptions) -> Any:
    if source.kind == "code":
        from lint.code.context import CodeContext

        return CodeContext.parse(source, options)
    from lint.config.context import ConfigContext

    return ConfigContext.load(source, options)


def _size_notice(size: int, limit: int) -> str:
    return f"skipped: {size} bytes is above max-file-size ({limit})"


LintFunction = Callable[[str, bytes, LintOptions], FileOutcome]


def _describe(exc: BaseException) -> str:
    """``Type: message``, short; arguments that are not plain values (a CST node in a
    KeyError) are named by type: their repr can be huge, or too deep to print."""
    plain = all(isinstance(arg, (str, int, float)) for arg in exc.args)
    text = str(exc) if plain else ", ".join(f"<{type(arg).__name__}>" for arg in exc.args)
    if len(text) > 300:
        text = text[:300] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _candidates(kind: str, raw: bytes, options: LintOptions) -> list[CodeRule | ConfigRule]:
    """The selected rules of this kind whose needles the file holds (the text pre-filter)."""
    return [
        rule
        for rule in _rule_instances(options.selected)
        if rule.kind == kind and any(n.encode() in raw for n in rule.needles or ("",))
    ]


def _contained(lint: LintFunction) -> LintFunction:
    """Run ``lint`` on a deep stack (see ``lint.deep_stack``) when it will parse the file;
    an exception that escapes it (a bug of ours outside any one rule) becomes an error
    entry for the file."""

    @wraps(lint)
    def contained(path: str, raw: bytes, options: LintOptions) -> FileOutcome:
        try:
            kind = file_kind(path)
            if kind is None or not _candidates(kind, raw, options):
                return lint(path, raw, options)  # nothing to parse: no thread needed
            return call_with_deep_stack(lint, path, raw, options)
        except Exception as exc:
            message = f"internal error: {_describe(exc)}"
            return FileOutcome(errors=[FileError(path, message)], internal_error=True)

    return contained


@_contained
def lint_source(path: str, raw: bytes, options: LintOptions) -> FileOutcome:
    """Lint one file's bytes. Never raises: every failure becomes an error entry."""
    outcome = FileOutcome()
    kind = file_kind(path)
    if kind is None:
        return outcome
    if len(raw) > options.max_file_size:
        outcome.notices.append(_size_notice(len(raw), options.max_file_size))
        return outcome
    candidates = _candidates(kind, raw, options)
    if not candidates:
        outcome.prefiltered = True
        return outcome
    try:
        source = SourceFile.decode(path, raw)
        context = _build_context(source, options)
    except SourceError as exc:
        outcome.errors.append(FileError(path, exc.message, line=exc.line, column=exc.column))
        return outcome
    except cst.ParserSyntaxError as exc:
        outcome.errors.append(_parse_error(path, source.text, exc))
        return outcome
    except RecursionError:
        outcome.errors.append(FileError(path, "cannot parse: nesting too deep"))
        return outcome
    except ParseLimitExceeded as exc:
        outcome.notices.append(f"skipped: {exc}")
        return outcome
    except Exception as exc:  # a bug of ours, not bad input: reported, the run goes on
        outcome.internal_error = True
        outcome.errors.append(FileError(path, f"internal error while parsing: {_describe(exc)}"))
        return outcome
    outcome.parsed = True
    findings: list[Finding] = []
    for rule in candidates:
        try:
            findings.extend(rule.check(context))
        except RecursionError:
            outcome.errors.append(
                FileError(path, f"{rule.code} gave up: nesting too deep", rule=rule.code)
            )
        except Exception as exc:  # one rule's crash must not stop the others
            outcome.internal_error = True
            outcome.errors.append(
                FileError(
                    path,
                    f"internal error in rule {rule.code}: {_describe(exc)}",
                    rule=rule.code,
                )
            )
    if findings:
        suppressions = Suppressions.for_text(source.text, kind)
        findings = [f for f in findings if not suppressions.suppresses(f)]
    outcome.findings = sorted(set(findings), key=lambda f: f.sort_key)
    return outcome


Job = tuple[str, bytes, LintOptions]


def _lint_job(job: Job) -> FileOutcome:
    return lint_source(*job)


def _lint_chunk(jobs: list[Job]) -> list[FileOutcome]:
    return [lint_source(*job) for job in jobs]


def _lint_in_pool(work: list[Job], jobs: int) -> list[FileOutcome]:
    """Lint ``work`` in worker processes, in order.

    A worker that dies (a native crash, the out-of-memory killer) breaks its pool and
    every file the pool had not finished. Those are retried in halves, each in a fresh
    pool, until the file that kills a worker is alone: it gets an error entry, every
    other file its real result.
    """
    results: dict[int, FileOutcome] = {}
    batches = [list(range(len(work)))]
    while batches:
        batch = batches.pop()
        failed = _run_batch(work, batch, jobs, results)
        if not failed:
            continue
        if len(batch) == 1:
            path = work[batch[0]][0]
            message = "internal error: the worker process died while linting this file"
            results[batch[0]] = FileOutcome(errors=[FileError(path, message)], internal_error=True)
        elif len(failed) == 1:
            batches.append(failed)
        else:
            middle = len(failed) // 2
            batches += [failed[middle:], failed[:middle]]
    return [results[position] for position in range(len(work))]


def _run_batch(
    work: list[Job], batch: list[int], jobs: int, results: dict[int, FileOutcome]
) -> list[int]:
    """Lint ``batch`` (positions in ``work``) in one pool; the positions left unfinished."""
    size = max(1, len(batch) // (jobs * 8))
    chunks = [batch[start : start + size] for start in range(0, len(batch), size)]
    failed: list[int] = []
    with ProcessPoolExecutor(max_workers=min(jobs, len(batch))) as pool:
        futures = [pool.submit(_lint_chunk, [work[i] for i in chunk]) for chunk in chunks]
        for chunk, future in zip(chunks, futures, strict=True):
            try:
                results.update(zip(chunk, future.result(), strict=True))
            except BrokenProcessPool:
                failed.extend(chunk)
    return failed


def default_jobs() -> int:
    return max(1, os.cpu_count() or 1)


def cache_directory(settings: Settings) -> Path:
    override = os.environ.get("DDPLINT_CACHE_DIR")
    return Path(override) if override else settings.project_root / ".ddplint_cache"


def _cached_outcome(cache: ResultCache, key: str) -> FileOutcome | None:
    """The cached outcome, or None when absent or damaged (then the file is re-linted)."""
    hit = cache.get(key)
    if hit is None:
        return None
    try:
        return FileOutcome.from_cache(hit)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def lint_targets(
    targets: list[Target],
    settings: Settings,
    options: LintOptions,
    *,
    jobs: int | None = None,
    use_cache: bool = True,
) -> RunResult:
    """Lint the given files; results in a stable order."""
    stats = RunStats(files=len(targets))
    errors: list[FileError] = []
    outcomes: dict[int, FileOutcome] = {}
    cache = ResultCache(cache_directory(settings), options.fingerprint()) if use_cache else None
    pending: list[tuple[int, str, bytes]] = []
    hashes: dict[int, str] = {}
    for position, target in enumerate(targets):
        try:
            raw = read_source_bytes(target.path, options.max_file_size)
        except FileTooLarge as exc:
            notice = _size_notice(exc.size, options.max_file_size)
            outcomes[position] = FileOutcome(notices=[notice])
            continue
        except OSError as exc:
            errors.append(FileError(target.display, f"cannot read: {exc.strerror or exc}"))
            continue
        if cache is not None:
            key = content_hash(raw)
            hashes[position] = key
            hit = _cached_outcome(cache, key)
            if hit is not None:
                outcomes[position] = hit
                stats.cached += 1
                continue
        pending.append((position, target.display, raw))

    jobs = jobs or default_jobs()
    work = [(display, raw, options) for _, display, raw in pending]
    if jobs > 1 and len(work) >= POOL_THRESHOLD:
        results = _lint_in_pool(work, jobs)
    else:
        results = [_lint_job(job) for job in work]
    for (position, _, _), outcome in zip(pending, results, strict=True):
        outcomes[position] = outcome
        if cache is not None and not outcome.internal_error:
            cache.put(hashes[position], outcome.to_cache())
    if cache is not None:
        cache.save()

    findings: list[Finding] = []
    notices: list[str] = []
    internal = False
    for position, outcome in sorted(outcomes.items()):
        target = targets[position]
        ignored = ignored_for_path(settings, target.relative)
        stats.parsed += outcome.parsed
        stats.prefiltered += outcome.prefiltered
        internal = internal or outcome.internal_error
        for finding in outcome.findings:
            if not any(finding.rule.startswith(code) for code in ignored):
                findings.append(finding.with_path(target.display))
        errors.extend(e.with_path(target.display) for e in outcome.errors)
        notices.extend(f"{target.display}: {notice}" for notice in outcome.notices)
    return RunResult(findings, errors, notices, stats, internal)


def lint_paths(
    paths: list[str],
    settings: Settings,
    options: LintOptions,
    *,
    jobs: int | None = None,
    use_cache: bool = True,
) -> RunResult:
    """Discover files under ``paths`` and lint them; missing paths become errors."""
    found = discover(paths, settings)
    result = lint_targets(found.targets, settings, options, jobs=jobs, use_cache=use_cache)
    for path, reason in reversed(found.unreadable):
        result.errors.insert(0, FileError(path, reason))
    for missing in found.missing:
        result.errors.insert(0, FileError(missing, "no such file or directory"))
    return result
