"""Run the selected rules over files: pre-filter, one parse per file, suppressions,
content-hash cache and a process pool. The engine owns files and processes; rules only
return findings."""

from __future__ import annotations

import ast
import hashlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field, replace
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ddplint import cancellation, code_facts
from ddplint.cache import ResultCache, cache_key, valid_outcome_entry
from ddplint.code.project.encoding import OPTIONS_KEY as PROJECT_KEY
from ddplint.code.project.encoding import SUMMARY_VERSION, encode_facts, informs_rules
from ddplint.code.project.memo import (
    DIGESTS_KEY,
    digests_entry,
    facts_key,
    read_digests,
    summary_digest,
)
from ddplint.deep_stack import call_with_deep_stack
from ddplint.discover import Target, discover, display_path, file_target
from ddplint.finding import FileError, Finding
from ddplint.interrupt import native_work_ends_on_signals, quiet_worker, stop_pool
from ddplint.launch_facts import launch_facts
from ddplint.rule import CodeRule, ConfigRule, SuppressionRule
from ddplint.rules import rule_class
from ddplint.rules.catalogue import CATALOGUE
from ddplint.settings import LintOptions, Settings, ignored_for_path
from ddplint.source import (
    FileTooLarge,
    SourceError,
    SourceFile,
    file_kind,
    is_json,
    read_source_bytes,
)
from ddplint.source_stats import (
    ProjectSources,
    SourceChanged,
    Stamp,
    read_stats,
    stamp_of,
    stats_entry,
    stats_key,
)
from ddplint.suppress import Suppressions, mentions_own_codes

if TYPE_CHECKING:
    import libcst as cst

    from ddplint.code.fact_collectors import FactCollector
    from ddplint.code.project.index import ProjectIndex
    from ddplint.code.project.summaries import Summary

T = TypeVar("T")
#: Below this many files to parse, a process pool costs more than it saves.
POOL_THRESHOLD = 24
#: What a worker gets: display path, bytes, options, code-fact kinds to collect.
Job = tuple[str, bytes, LintOptions, tuple[str, ...]]

J = TypeVar("J")
R = TypeVar("R")


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


#: Called as files are done: (files done, files in all).
ProgressCallback = Callable[[int, int], None]
#: Reads a file's bytes up to a size limit, raising as ``read_source_bytes`` does.
Reader = Callable[[Path, int], bytes]


@cache
def _rule(code: str) -> Any:
    """An instance of rule ``code`` (its module imported now, when first needed)."""
    return rule_class(code)()


def _passing_rules(
    selected: tuple[str, ...], kind: str, path: str, raw: bytes, informed: bool
) -> list[CodeRule | ConfigRule]:
    """The selected rules of this kind that read ``path`` and whose pre-filter the
    bytes pass (all of them when ``informed``): asked of the catalogue, so a rule's
    module is imported only for a file that passes its pre-filter."""
    entries = (CATALOGUE.get(code) for code in selected)
    return [
        _rule(entry.code)
        for entry in entries
        if entry is not None
        and entry.kind == kind
        and entry.reads(path)
        and (informed or entry.prefilter(raw))
    ]


def _suppression_rules(selected: tuple[str, ...]) -> list[SuppressionRule]:
    kinds = ((code, CATALOGUE.get(code)) for code in selected)
    return [_rule(code) for code, entry in kinds if entry and entry.kind == "suppression"]


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
    """The context rules read; a Python file's LibCST module is parsed when first asked
    for (``_rules_to_run`` asks for it up front where a rule reads it)."""
    if source.kind == "code":
        from ddplint.code.context import CodeContext

        return CodeContext(source, options)
    from ddplint.config.context import ConfigContext

    return ConfigContext.load(source, options)


def _rules_to_run(plan: _Plan, context: Any) -> list[CodeRule | ConfigRule]:
    """The planned rules that may report on the file (``CodeRule.may_report``, asked of
    its ``ast``). A Python file is parsed with LibCST here, where its parse errors are
    reported, when a rule left reads LibCST, when CPython refuses the file (LibCST says
    why, or reads syntax newer than this Python) or when the plan is to say why it does
    not parse; otherwise not at all. (A rule's ``may_report`` says yes where CPython
    refuses the file.)"""
    if context is None or plan.kind != "code":
        return plan.rules
    rules = [r for r in plan.rules if isinstance(r, CodeRule) and r.may_report(context)]
    if plan.syntax_only or context.ast_module is None or any(r.reads_libcst for r in rules):
        _ = context.module
    return [*rules]


#: How a notice about a file that was not linted begins.
SKIPPED = "skipped: "


def _size_notice(size: int, limit: int) -> str:
    return f"{SKIPPED}{size} bytes is above max-file-size ({limit})"


def _too_large(path: str, size: int, limit: int) -> FileOutcome:
    """A file above the size limit: a notice, except for JSON (large JSON files are
    data, never the configuration the JSON rules read)."""
    return FileOutcome() if is_json(path) else FileOutcome(notices=[_size_notice(size, limit)])


def _beyond_bounds(raw: bytes) -> str | None:
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


def _describe(exc: BaseException) -> str:
    """``Type: message``, short; arguments that are not plain values (a CST node in a
    KeyError) are named by type: their repr can be huge, or too deep to print."""
    plain = all(isinstance(arg, (str, int, float)) for arg in exc.args)
    text = str(exc) if plain else ", ".join(f"<{type(arg).__name__}>" for arg in exc.args)
    if len(text) > 300:
        text = text[:300] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@dataclass(frozen=True)
class _Plan:
    """What a file that must be parsed is parsed for: its rules and fact collectors, or
    (``syntax_only``) nothing but to say why Python code does not parse."""

    kind: str
    rules: list[CodeRule | ConfigRule]
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


def _triage(
    path: str, raw: bytes, options: LintOptions, collect: Sequence[str]
) -> FileOutcome | _Plan:
    """The outcome of a file that needs no parse (too big, or no rule or fact collector
    could fire on it), or the plan for parsing it. Cheap: substring tests on bytes, and
    CPython's parser on a Python file no rule needs (one that does not parse is parsed
    to say why: never passed unread)."""
    kind = file_kind(path)
    if kind is None:
        return FileOutcome()
    if len(raw) > options.max_file_size:
        return _too_large(path, len(raw), options.max_file_size)
    if kind == "code" and (problem := _beyond_bounds(raw)) is not None:
        return FileOutcome(notices=[f"{SKIPPED}{problem}"])
    collectors = _fact_collectors(collect, raw) if kind == "code" else []
    # A file that uses project names reaching collectives or testing the rank may hold
    # a hazard without any of the words the rules' pre-filters look for.
    informed = kind == "code" and informs_rules(options.fact(PROJECT_KEY))
    rules = _passing_rules(options.selected, kind, path, raw, informed)
    if not rules and not collectors:
        if is_json(path):  # JSON no rule reads (package.json, data) is not ours to judge
            return FileOutcome(prefiltered=True)
        outcome = _unreadable(path, raw) or FileOutcome(prefiltered=True)
        if not outcome.errors and kind == "code" and not _compiles(path, raw):
            return _Plan(kind, [], [], syntax_only=True)  # never passed unread
        if not outcome.errors and mentions_own_codes(raw):
            text = SourceFile.decode(path, raw).text
            _apply_suppressions(outcome, path, text, kind, [], options)
        return outcome
    return _Plan(kind, rules, collectors)


def prefilter(
    path: str, raw: bytes, options: LintOptions, collect: Sequence[str] = ()
) -> FileOutcome | None:
    """The outcome of a file that needs no parse, or None when it must be parsed."""
    plan = _triage(path, raw, options, collect)
    return plan if isinstance(plan, FileOutcome) else None


def lint_source(
    path: str, raw: bytes, options: LintOptions, collect: Sequence[str] = ()
) -> FileOutcome:
    """Lint one file's bytes. Never raises: every failure becomes an error entry.

    ``collect`` names code-fact kinds to gather from a Python file for the config rules.
    A file that will be parsed is linted on a deep stack (see ``ddplint.deep_stack``); an
    exception that escapes (a bug of ours outside any one rule) is an error entry.
    """
    try:
        plan = _triage(path, raw, options, collect)
        if isinstance(plan, FileOutcome):
            return plan
        return call_with_deep_stack(_lint_planned, path, raw, options, plan)
    except Exception as exc:
        message = f"internal error: {_describe(exc)}"
        return FileOutcome(errors=[FileError(path, message)], internal_error=True)


def _lint_planned(path: str, raw: bytes, options: LintOptions, plan: _Plan) -> FileOutcome:
    """Parse the file once and run the planned rules and fact collectors on it."""
    import libcst as cst  # only a file that is parsed needs LibCST and the analysis

    from ddplint.code.fact_collectors import collect_facts
    from ddplint.code.syntax.safe_parse import ParseLimitExceeded

    outcome = FileOutcome()
    try:
        source = SourceFile.decode(path, raw)
        context = _build_context(source, options) if plan.rules or plan.syntax_only else None
        rules = _rules_to_run(plan, context)
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
        outcome.notices.append(f"{SKIPPED}{exc}")
        return outcome
    except Exception as exc:  # a bug of ours, not bad input: reported, the run goes on
        outcome.internal_error = True
        outcome.errors.append(FileError(path, f"internal error while parsing: {_describe(exc)}"))
        return outcome
    if plan.collectors:
        facts = _guarded(
            outcome, path, "code facts", lambda: collect_facts(source.text, plan.collectors)
        )
        outcome.facts = facts or {}
    if context is None or not (rules or plan.syntax_only):
        if mentions_own_codes(raw):
            _apply_suppressions(outcome, path, source.text, plan.kind, [], options)
        return outcome
    outcome.parsed = True
    findings: list[Finding] = []
    for rule in rules:
        cancellation.check()
        findings.extend(_guarded(outcome, path, rule.code, partial(_check, rule, context)) or [])
    if findings and plan.kind == "config":
        settled = _guarded(outcome, path, "fix checks", partial(context.settle_fixes, findings))
        findings = settled if settled is not None else [replace(f, fix=None) for f in findings]
    if findings or mentions_own_codes(raw):
        _apply_suppressions(outcome, path, source.text, plan.kind, findings, options)
    else:
        outcome.findings = sorted(set(findings), key=lambda f: f.sort_key)
    return outcome


def _apply_suppressions(
    outcome: FileOutcome,
    path: str,
    text: str,
    kind: str,
    findings: list[Finding],
    options: LintOptions,
) -> None:
    """The findings the file's suppression comments leave, and what the comments tell:
    unknown codes (warnings), bare ``# noqa`` on a reported line, and the selected
    suppression rules' findings (DDP900), themselves open to suppression."""
    suppressions = Suppressions.for_text(text, kind)
    review = suppressions.review(findings)
    known = tuple(CATALOGUE)
    for directive, code in suppressions.unknown_codes(frozenset(known)):
        outcome.warnings.append(
            f"{directive.line}:{code.column}: unknown rule code `{code.text}` in "
            f"`# {directive.text_kind}` (`ddplint rules` lists the codes)"
        )
    kept = review.kept
    if not outcome.errors:
        selected = frozenset(options.selected)
        for rule in _suppression_rules(options.selected):
            found = rule.check_suppressions(path, suppressions, review, selected, known)
            kept += [f for f in found if not suppressions.suppresses(f)]
    outcome.bare_noqa = review.bare_noqa
    outcome.findings = sorted(set(kept), key=lambda f: f.sort_key)


def _check(rule: CodeRule | ConfigRule, context: Any) -> list[Finding]:
    return list(rule.check(context))


def _fact_collectors(kinds: Sequence[str], raw: bytes) -> list[FactCollector]:
    if not kinds:
        return []
    from ddplint.code.fact_collectors import COLLECTORS

    wanted = (COLLECTORS[k] for k in kinds if k in COLLECTORS)
    return [c for c in wanted if any(n.encode() in raw for n in c.needles)]


def _guarded(outcome: FileOutcome, path: str, what: str, run: Callable[[], T]) -> T | None:
    """``run()``; a crash is reported against ``what`` (a rule code, or code facts)."""
    try:
        return run()
    except RecursionError:
        outcome.errors.append(FileError(path, f"{what} gave up: nesting too deep", rule=what))
    except Exception as exc:  # one rule's crash must not stop the others
        outcome.internal_error = True
        outcome.errors.append(
            FileError(path, f"internal error in rule {what}: {_describe(exc)}", rule=what)
        )
    return None


def _lint_job(job: Job) -> FileOutcome:
    return lint_source(*job)


def run_jobs(
    job: Callable[[J], R],
    work: list[J],
    jobs: int,
    crashed: Callable[[J], R] | None = None,
    done: Callable[[int], None] | None = None,
) -> list[R]:
    """``job`` over each item of ``work``, results in order; worker processes for big
    batches (``job`` must then be a picklable module-level function).

    A worker that dies (a native crash, the out-of-memory killer) breaks its pool and
    every item the pool had not finished. Those are retried in halves, each in a fresh
    pool, until the item that kills a worker is alone: it gets ``crashed(item)`` (or the
    error is raised when there is no ``crashed``), every other item its real result.
    ``done(n)`` is told as items finish.
    """
    if jobs <= 1 or len(work) < POOL_THRESHOLD:
        return _run_in_process(job, work, done)
    from concurrent.futures.process import BrokenProcessPool  # multiprocessing: pools only

    finished: dict[int, R] = {}
    batches = [list(range(len(work)))]
    while batches:
        batch = batches.pop()
        failed = _run_batch(job, work, batch, jobs, finished, done)
        if not failed:
            continue
        if len(batch) == 1:
            if crashed is None:
                raise BrokenProcessPool("a worker process died")
            finished[batch[0]] = crashed(work[batch[0]])
        elif len(failed) == 1:
            batches.append(failed)
        else:
            middle = len(failed) // 2
            batches += [failed[middle:], failed[:middle]]
    return [finished[position] for position in range(len(work))]


def _run_in_process(
    job: Callable[[J], R], work: list[J], done: Callable[[int], None] | None
) -> list[R]:
    """``job`` over ``work`` here; a signal ends the process even inside a native parse."""
    results = []
    with native_work_ends_on_signals():
        for item in work:
            cancellation.check()
            results.append(job(item))
            if done is not None:
                done(1)
    return results


def _apply(job: Callable[[J], R], items: list[J]) -> list[R]:
    return [job(item) for item in items]


def _run_batch(
    job: Callable[[J], R],
    work: list[J],
    batch: list[int],
    jobs: int,
    finished: dict[int, R],
    done: Callable[[int], None] | None,
) -> list[int]:
    """Run ``batch`` (positions in ``work``) in one pool; the positions left unfinished."""
    from concurrent.futures.process import BrokenProcessPool, ProcessPoolExecutor

    size = max(1, len(batch) // (jobs * 8))
    chunks = [batch[start : start + size] for start in range(0, len(batch), size)]
    failed: list[int] = []
    pool = ProcessPoolExecutor(
        max_workers=min(jobs, len(batch)), initializer=quiet_worker, initargs=(os.getpid(),)
    )
    try:
        futures = [pool.submit(_apply, job, [work[i] for i in chunk]) for chunk in chunks]
        for chunk, future in zip(chunks, futures, strict=True):
            try:
                finished.update(zip(chunk, future.result(), strict=True))
            except BrokenProcessPool:
                failed.extend(chunk)
            else:
                if done is not None:
                    done(len(chunk))
    except BaseException:  # an interrupt (or a bug): no worker may outlive the run
        stop_pool(pool)
        raise
    pool.shutdown()
    return failed


def _worker_died(job: Job) -> FileOutcome:
    message = "internal error: the worker process died while linting this file"
    return FileOutcome(errors=[FileError(job[0], message)], internal_error=True)


def default_jobs() -> int:
    return max(1, os.cpu_count() or 1)


def cache_directory(settings: Settings) -> Path:
    override = os.environ.get("DDPLINT_CACHE_DIR")
    return Path(override) if override else settings.project_root / ".ddplint_cache"


@dataclass
class _Run:
    """The state of one run: file contents, outcomes so far, the cache."""

    targets: list[Target]
    contents: dict[int, bytes]
    cache: ResultCache | None
    jobs: int
    stats: RunStats
    outcomes: dict[int, FileOutcome] = field(default_factory=dict)
    progress: ProgressCallback | None = None
    #: Encoded project facts per position (``ddplint.code.project``), where any.
    project: dict[int, str] = field(default_factory=dict)

    def lint(
        self, positions: list[int], options: LintOptions, collect: tuple[str, ...], key_suffix: str
    ) -> None:
        """Lint the files at ``positions`` (cache first, under content hash + suffix;
        a file with project facts also under their digest)."""
        pending: list[tuple[int, str]] = []
        per_file: dict[int, LintOptions] = {}
        for position in positions:
            kind = file_kind(self.targets[position].display) or "code"
            key = cache_key(kind, self.contents[position], key_suffix)
            if kind == "code":
                key += _bound_configs_digest(
                    self.targets[position].display, self.contents[position], options.project_root
                )
            if position in self.project:
                encoded = self.project[position]
                per_file[position] = replace(
                    options, facts=(*options.facts, (PROJECT_KEY, encoded))
                )
                key += ":p" + code_facts.digest(encoded)
            hit = _cached_outcome(self.cache, key) if self.cache is not None else None
            if hit is not None:
                self.outcomes[position] = hit
                self.stats.cached += 1
                continue
            skipped = prefilter(
                self.targets[position].display,
                self.contents[position],
                per_file.get(position, options),
                collect,
            )
            if skipped is not None:
                self.outcomes[position] = skipped
                if self.cache is not None:
                    self.cache.put(key, skipped.to_cache())
            else:
                pending.append((position, key))
        work = [
            (self.targets[p].display, self.contents[p], per_file.get(p, options), collect)
            for p, _ in pending
        ]
        before = len(self.outcomes)
        finished = 0

        def done(count: int) -> None:
            nonlocal finished
            finished += count
            if self.progress is not None:
                self.progress(before + finished, len(self.targets))

        results = run_jobs(_lint_job, work, self.jobs, crashed=_worker_died, done=done)
        for (position, key), outcome in zip(pending, results, strict=True):
            self.outcomes[position] = outcome
            if self.cache is not None and not outcome.internal_error:
                self.cache.put(key, outcome.to_cache())


#: Bytes of a bound config read for a cache key (a larger file counts as empty).
MAX_BOUND_CONFIG_BYTES = 1024 * 1024


def _bound_configs_digest(display: str, raw: bytes, project_root: str) -> str:
    """``:b<digest>`` of the YAML configs a Python file may be bound to (``@hydra.main``,
    ``OmegaConf.load``: code rules read their values), over their paths and bytes; ""
    for a file bound to none. A config edited since makes the file's cached result stale."""
    from ddplint.code.values.config_files import dependency_files

    files = dependency_files(raw, display, project_root)
    if not files:
        return ""
    digest = hashlib.blake2b(digest_size=8)
    for path in files:
        try:
            content = read_source_bytes(path, MAX_BOUND_CONFIG_BYTES)
        except (OSError, FileTooLarge):
            content = b""
        digest.update(f"{path}\0".encode("utf-8", "surrogateescape") + content)
    return ":b" + digest.hexdigest()


def _cached_outcome(cache: ResultCache, key: str) -> FileOutcome | None:
    """The cached outcome, or None when absent or damaged (then the file is re-linted)."""
    hit = cache.get(key)
    if hit is None or not valid_outcome_entry(hit):
        return None
    try:
        return FileOutcome.from_cache(hit)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _summary_job(raw: bytes) -> Summary | None:
    """The module summary of a Python file's bytes; None for one ``ast`` cannot read
    or one too large to analyse (its own lint run reports why)."""
    from ddplint.code.project.module_summary import summarize

    if _beyond_bounds(raw) is not None:
        return None  # its own lint says it was skipped
    try:
        return summarize(SourceFile.decode("", raw).text)
    except (SourceError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _summaries(
    sources: Mapping[str, bytes],
    hashes: dict[str, str],
    cache: ResultCache | None,
    jobs: int,
    stats: RunStats,
) -> dict[str, Summary]:
    """Summaries of the project's Python files (relative path -> summary), from the
    cache where it has them, the rest built in the pool. ``hashes``: the sources'
    content hashes."""
    found: dict[str, Summary] = {}
    missing: list[tuple[str, str]] = []
    for relative in sources:
        key = f"summary:{SUMMARY_VERSION}:{hashes[relative]}"
        hit = cache.get(key) if cache is not None else None
        if isinstance(hit, dict) and isinstance(hit.get("summary"), dict):
            found[relative] = hit["summary"]
        elif not (isinstance(hit, dict) and hit.get("summary", 0) is None):
            missing.append((relative, key))
    built = run_jobs(_summary_job, [sources[r] for r, _ in missing], jobs, crashed=lambda _: None)
    stats.summarised += len(built)
    for (relative, key), summary in zip(missing, built, strict=True):
        if cache is not None:
            cache.put(key, {"summary": summary})
        if summary is not None:
            found[relative] = summary
    return found


def _model_sources(
    targets: list[Target],
    contents: dict[int, bytes],
    stamps: dict[int, Stamp],
    whole_root: bool,
    setup: _RunSetup,
    trust_stats: bool,
) -> ProjectSources:
    """The Python files the project model is built from, by relative path: the code
    files linted, and with ``whole_root`` every Python file of the project root. With
    ``trust_stats`` (and the cache), a file not linted whose stat is unchanged since a
    run read it is not read (``ddplint.source_stats``); a linted file's stat is taken
    only where it was read from disk (``stamp_targets``), never an editor's buffer."""
    settings, cache = setup.settings, setup.cache
    paths: dict[str, Path] = {}
    sources = ProjectSources(lambda relative: setup.read(paths[relative], settings.max_file_size))
    for position, raw in contents.items():
        if file_kind(targets[position].display) == "code":
            sources.add(targets[position].relative, raw, stamps.get(position))
    root = settings.project_root.resolve()
    key = stats_key(str(root))
    recorded = read_stats(cache.get(key)) if cache is not None else {}
    if whole_root and all(root in Path(t.path).resolve().parents for t in targets):
        linted = {target.relative for target in targets}
        _add_root(sources, paths, linted, recorded if trust_stats else {}, setup)
    # else no project around the files named: they are the model
    if cache is not None:
        kept = {path: known for path, known in recorded.items() if path not in sources}
        kept.update(sources.records)  # a file read now and not settled is left out
        if kept != recorded:
            cache.put(key, stats_entry(kept))
    return sources


def _add_root(
    sources: ProjectSources,
    paths: dict[str, Path],
    linted: set[str],
    recorded: dict[str, tuple[Stamp, str]],
    setup: _RunSetup,
) -> None:
    """Every Python file of the project root not ``linted`` into ``sources``: read from
    disk, or its hash taken from ``recorded`` where its stat is the one recorded."""
    settings = setup.settings
    listing = setup.memo.listing if setup.memo is not None else None
    if listing is None:
        listing = discover([str(settings.project_root.resolve())], settings).targets
        if setup.memo is not None:
            setup.memo.listing = listing
    for target in listing:
        relative = target.relative
        if relative in linted or file_kind(target.display) != "code":
            continue
        paths[relative] = target.path
        try:
            stamp = stamp_of(os.stat(target.path))
            known = recorded.get(relative)
            if known is not None and known[0] == stamp and stamp[2] <= settings.max_file_size:
                sources.add_unread(relative, stamp, known[1])
                continue
            sources.add(relative, setup.read(target.path, settings.max_file_size), stamp)
        except (FileTooLarge, OSError):
            continue  # the model goes without it; this file is not reported on


def _project_facts(
    targets: list[Target],
    positions: list[int],
    sources: ProjectSources,
    setup: _RunSetup,
    stats: RunStats,
) -> dict[int, str]:
    """Encoded project facts (``ProjectIndex.facts_for``) per code-file position.

    Memoized in the cache by the project's paths and summaries (``code.project.memo``):
    a file an earlier run of the same summaries answered costs no linking (a pre-commit
    run after a whole-tree run, a warm run, an edit that changes no summary)."""
    relatives = sorted({targets[p].relative for p in positions})
    hashes = sources.hashes
    cache = setup.cache
    memo_key = None
    known: dict[str, str] = {}
    if cache is not None:
        memo_key = facts_key(_summary_digests(sources, hashes, cache, setup.jobs, stats))
        known = _cached_project_facts(cache, memo_key) or {}
    missing = [relative for relative in relatives if relative not in known]
    if missing:
        index = _linked_index(sources, hashes, setup, stats)
        known = {**known, **{relative: _encoded_facts(index, relative) for relative in missing}}
        if cache is not None and memo_key is not None:
            cache.put(memo_key, {"project_facts": known})
    return {p: known[targets[p].relative] for p in positions if known[targets[p].relative]}


def _summary_digests(
    sources: Mapping[str, bytes],
    hashes: dict[str, str],
    cache: ResultCache,
    jobs: int,
    stats: RunStats,
) -> dict[str, str]:
    """The summary digest of every source (relative path -> digest): kept in the cache
    by content hash; the sources whose bytes are new are summarised (``_summaries``)."""
    known = read_digests(cache.get(DIGESTS_KEY))
    new = {relative: sources[relative] for relative in sources if hashes[relative] not in known}
    if new:
        found = _summaries(new, hashes, cache, jobs, stats)
        known = {**known, **{hashes[r]: summary_digest(found.get(r)) for r in new}}
        cache.put(DIGESTS_KEY, digests_entry(known, set(hashes.values())))
    return {relative: known[hashes[relative]] for relative in sources}


def _linked_index(
    sources: Mapping[str, bytes], hashes: dict[str, str], setup: _RunSetup, stats: RunStats
) -> ProjectIndex:
    """The project linked: by the caller's memo (the language server); else from the
    links the cache keeps of the last link, only what an edit changed linked again
    (``code.project.incremental``), and those links kept for the next run."""
    from ddplint.code.project.incremental import (
        LINKS_KEY,
        REWRITE_AFTER,
        LinkState,
        state_entry,
    )
    from ddplint.code.project.index import ProjectIndex

    cache, memo = setup.cache, setup.memo
    if memo is not None or cache is None:
        summaries = _summaries(sources, hashes, cache, setup.jobs, stats)
        return memo.index(summaries) if memo is not None else ProjectIndex(summaries)
    previous = LinkState.read(cache.get(LINKS_KEY))
    cache.forget(LINKS_KEY)  # the lint workers need not inherit every module's links
    index: ProjectIndex | None = None
    if previous is not None:
        try:
            index, summarised = _relinked(previous, sources, hashes, setup, stats)
        except (_StaleLinks, KeyError, TypeError, ValueError, IndexError, AttributeError):
            index = None  # links that do not fit together: the project is linked afresh
    if index is None:
        summaries = _summaries(sources, hashes, cache, setup.jobs, stats)
        index, summarised, previous = ProjectIndex(summaries), set(summaries), None
    stats.linked += len(index.linked)
    if previous is None or len(index.linked) > REWRITE_AFTER:
        cache.put(LINKS_KEY, state_entry(index, hashes, summarised, previous))
    return index


class _StaleLinks(Exception):
    """The kept links name a module whose summary cannot be had any more."""


def _relinked(
    previous: Any,
    sources: Mapping[str, bytes],
    hashes: dict[str, str],
    setup: _RunSetup,
    stats: RunStats,
) -> tuple[ProjectIndex, set[str]]:
    """The index linked again from ``previous`` (a ``LinkState``): the changed files
    summarised, the modules whose links are stale linked; the paths with a summary."""
    from ddplint.code.project.index import ProjectIndex

    changed = previous.changed(hashes)
    found = _summaries(
        {path: sources[path] for path in changed}, hashes, setup.cache, setup.jobs, stats
    )
    built = {path: found.get(path) for path in changed}
    project = previous.summarised(hashes, built)
    summaries = _CachedSummaries(project, built, sources, hashes, setup.cache, stats)
    return ProjectIndex(summaries, kept=previous.kept(project, built)), set(project)


class _CachedSummaries(Mapping[str, "Summary"]):
    """Module summaries by path, read from the cache when first asked (built again
    when the cache lost one)."""

    def __init__(
        self,
        paths: list[str],
        built: dict[str, Summary | None],
        sources: Mapping[str, bytes],
        hashes: dict[str, str],
        cache: ResultCache | None,
        stats: RunStats,
    ) -> None:
        self._paths = paths
        self._found = {path: summary for path, summary in built.items() if summary is not None}
        self._sources, self._hashes, self._cache, self._stats = sources, hashes, cache, stats

    def __getitem__(self, path: str) -> Summary:
        summary = self._found.get(path)
        if summary is None:
            single = {path: self._sources[path]}
            summary = _summaries(single, self._hashes, self._cache, 1, self._stats).get(path)
            if summary is None:
                raise _StaleLinks(path)
            self._found[path] = summary
        return summary

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


def _encoded_facts(index: ProjectIndex, relative: str) -> str:
    """The file's facts encoded; "" for a file without any."""
    facts = index.facts_for(relative)
    return encode_facts(facts) if facts else ""


def _cached_project_facts(cache: ResultCache, key: str) -> dict[str, str] | None:
    """The memoized project facts by relative path ("" for none); None when absent or
    damaged."""
    hit = cache.get(key)
    found = hit.get("project_facts") if hit is not None else None
    if not isinstance(found, dict):
        return None
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in found.items()):
        return None
    return found


def _facts_wanted(options: LintOptions, config_raws: list[bytes]) -> tuple[str, ...]:
    """Code-fact kinds some selected config rule could use on these YAML files (read
    from the rule catalogue: no rule module is imported)."""
    kinds: set[str] = set()
    for code in options.selected:
        rule = CATALOGUE.get(code)
        if rule is not None and rule.kind == "config" and rule.code_facts:
            needles = [n.encode() for n in rule.needles or ("",)]
            if any(n in raw for raw in config_raws for n in needles):
                kinds.update(rule.code_facts)
    return tuple(sorted(kinds))


def lint_targets(
    targets: list[Target],
    settings: Settings,
    options: LintOptions,
    *,
    jobs: int | None = None,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
    whole_project: bool = False,
) -> RunResult:
    """Lint the given files; results in a stable order.

    Python files go first: they may hand code facts to the YAML rules (one pass over
    the repo); a YAML result is cached under its content and the facts' digest. The
    project model is built from the Python files linted, and with ``whole_project``
    from every Python file of the project root (files named one by one, as pre-commit
    does, are analysed with their whole project).
    """
    cache = open_cache(settings, options) if use_cache else None
    run = _RunSetup(
        settings,
        options,
        read_source_bytes,
        cache,
        jobs or default_jobs(),
        progress,
        stamp_targets=True,
    )
    result = _lint_read(targets, run, whole_project)
    if cache is not None:
        cache.save()
        if cache.problem is not None:
            result.notices.append(cache.problem)
    return result


def open_cache(settings: Settings, options: LintOptions) -> ResultCache:
    """The project's result cache for these options (off, with ``problem``, when its
    signing key is unusable)."""
    return ResultCache(cache_directory(settings), options.fingerprint(), settings.project_root)


def lint_buffers(
    buffers: Mapping[Path, bytes],
    settings: Settings,
    options: LintOptions,
    cache: ResultCache | None = None,
    memo: ProjectMemo | None = None,
) -> RunResult:
    """Lint texts held in memory (an editor's unsaved buffers, by absolute path) in this
    process, as one run with their whole project: each buffer stands in for its file on
    disk, as a target and in the project model; the project's other files are read from
    disk. ``cache`` and ``memo`` are the caller's to keep between runs of the project.
    """

    def read(path: Path, limit: int) -> bytes:
        raw = buffers.get(path)
        if raw is None:
            return read_source_bytes(path, limit)
        if len(raw) > limit:
            raise FileTooLarge(len(raw))
        return raw

    targets = [file_target(path, settings) for path in buffers]
    setup = _RunSetup(settings, options, read, cache, 1, memo=memo)
    return _lint_read(targets, setup, whole_project=True)


@dataclass(frozen=True)
class _RunSetup:
    """What shapes a run besides its targets: settings, how files are read, the cache."""

    settings: Settings
    options: LintOptions
    read: Reader
    cache: ResultCache | None
    jobs: int
    progress: ProgressCallback | None = None
    memo: ProjectMemo | None = None
    #: Whether ``read`` reads the linted files from disk (their stat then tells whether
    #: they changed since a run read them); an editor's buffers are not on disk.
    stamp_targets: bool = False


@dataclass
class ProjectMemo:
    """What a caller that lints one project again and again (the language server) keeps
    between runs: the listing of the project's files (until it sets ``listing`` to None:
    a file was created or deleted) and the last project index, used again while every
    module summary is the same (an edit inside a function body seldom changes one); when
    only what functions do changed (not the names modules import and define), the new
    index starts from the old one's name resolutions."""

    listing: list[Target] | None = None
    _summaries: dict[str, Summary] = field(default_factory=dict)
    _index: ProjectIndex | None = None

    def index(self, summaries: dict[str, Summary]) -> ProjectIndex:
        from ddplint.code.project.index import ProjectIndex, resolution_inputs

        changed = self._changed(summaries)
        if self._index is None or changed is None:
            self._index = ProjectIndex(summaries)
        elif changed:
            previous = self._summaries
            same_names = all(
                resolution_inputs(summaries[path]) == resolution_inputs(previous[path])
                for path in changed
            )
            self._index = ProjectIndex(summaries, self._index.resolved if same_names else None)
        self._summaries = summaries
        return self._index

    def _changed(self, summaries: dict[str, Summary]) -> list[str] | None:
        """The paths whose summary changed since the last run; None when files came or
        went."""
        previous = self._summaries
        if summaries.keys() != previous.keys():
            return None
        return [
            path
            for path, summary in summaries.items()
            if not (summary is previous[path] or summary == previous[path])
        ]


def _lint_read(targets: list[Target], setup: _RunSetup, whole_project: bool) -> RunResult:
    """Read the targets and lint them (``lint_targets``)."""
    settings, options, cache = setup.settings, setup.options, setup.cache
    stats = RunStats(files=len(targets))
    errors: list[FileError] = []
    contents: dict[int, bytes] = {}
    too_large: dict[int, FileOutcome] = {}
    stamps: dict[int, Stamp] = {}
    for position, target in enumerate(targets):
        if setup.stamp_targets:  # taken before the read: a later write moves it
            with suppress(OSError):
                stamps[position] = stamp_of(os.stat(target.path))
        try:
            contents[position] = setup.read(target.path, options.max_file_size)
        except FileTooLarge as exc:
            too_large[position] = _too_large(target.display, exc.size, options.max_file_size)
        except OSError as exc:
            errors.append(FileError(target.display, f"cannot read: {exc.strerror or exc}"))
    configs = [p for p in contents if file_kind(targets[p].display) == "config"]
    others = [p for p in contents if p not in set(configs)]
    wanted = _facts_wanted(options, [contents[p] for p in configs])
    run = _Run(targets, contents, cache, setup.jobs, stats, dict(too_large), setup.progress)
    code_files = [p for p in others if file_kind(targets[p].display) == "code"]
    sources = _model_sources(targets, contents, stamps, whole_project, setup, trust_stats=True)
    try:
        run.project = _project_facts(targets, code_files, sources, setup, stats)
    except SourceChanged:  # a file changed while this run read the project: read it all
        sources = _model_sources(targets, contents, stamps, whole_project, setup, trust_stats=False)
        run.project = _project_facts(targets, code_files, sources, setup, stats)
    if cache is not None:
        cache.save()  # the summaries leave memory before the lint workers start
    code_kinds = tuple(kind for kind in wanted if kind != code_facts.LAUNCHES)
    run.lint(others, options, code_kinds, ":" + ",".join(code_kinds) if code_kinds else "")
    config_options, suffix = options, ""
    launch_notices: list[str] = []
    if wanted:
        per_file = [(targets[p].display, run.outcomes[p].facts) for p in others]
        if code_kinds:
            per_file += _facts_of_others(targets, sources, settings, options, code_kinds, run)
        if code_facts.LAUNCHES in wanted:
            scripts, launch_notices = launch_facts(settings.project_root)
            per_file += scripts
        merged = code_facts.merge((path, facts) for path, facts in per_file if facts)
        encoded = code_facts.encode(merged)
        config_options = replace(options, facts=(*options.facts, (code_facts.OPTIONS_KEY, encoded)))
        suffix = ":" + code_facts.digest(encoded)
    run.lint(configs, config_options, (), suffix)

    findings: list[Finding] = []
    notices: list[str] = list(launch_notices)
    warnings: list[str] = []
    bare_noqa: list[Finding] = []
    internal = False
    for position, outcome in sorted(run.outcomes.items()):
        target = targets[position]
        ignored = ignored_for_path(settings, target.relative)
        stats.parsed += outcome.parsed
        stats.prefiltered += outcome.prefiltered
        stats.skipped += any(n.startswith(SKIPPED) for n in outcome.notices)
        internal = internal or outcome.internal_error
        bare = set(outcome.bare_noqa)
        for finding in outcome.findings:
            if not any(finding.rule.startswith(code) for code in ignored):
                findings.append(finding.with_path(target.display))
                if finding.line in bare:
                    bare_noqa.append(findings[-1])
        errors.extend(e.with_path(target.display) for e in outcome.errors)
        notices.extend(f"{target.display}: {notice}" for notice in outcome.notices)
        warnings.extend(f"{target.display}:{warning}" for warning in outcome.warnings)
    result = RunResult(findings, errors, notices, stats, internal, list(targets), warnings)
    result.bare_noqa = bare_noqa
    return result


def _facts_of_others(
    targets: list[Target],
    sources: Mapping[str, bytes],
    settings: Settings,
    options: LintOptions,
    wanted: tuple[str, ...],
    run: _Run,
) -> list[tuple[str, dict[str, list[code_facts.Record]]]]:
    """Code facts from the project's Python files that are not linted in this run (a
    YAML file linted alone still sees what the whole project's code does)."""
    linted = {targets[p].relative for p in run.contents}
    others = [
        Target(
            settings.project_root / relative,
            display_path(settings.project_root / relative),
            relative,
        )
        for relative in sources
        if relative not in linted
    ]
    if not others:
        return []
    contents = {position: sources[t.relative] for position, t in enumerate(others)}
    side = _Run(others, contents, run.cache, run.jobs, RunStats())
    facts_only = replace(options, selected=())
    side.lint(list(contents), facts_only, wanted, ":facts:" + ",".join(wanted))
    return [(others[p].display, side.outcomes[p].facts) for p in contents]


def lint_paths(
    paths: list[str],
    settings: Settings,
    options: LintOptions,
    *,
    jobs: int | None = None,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
) -> RunResult:
    """Discover files under ``paths`` and lint them; missing paths become errors."""
    found = discover(paths, settings)
    result = lint_targets(
        found.targets,
        settings,
        options,
        jobs=jobs,
        use_cache=use_cache,
        progress=progress,
        whole_project=any(os.path.isfile(path) for path in paths),
    )
    result.notices[:0] = found.notices
    for path, reason in reversed(found.unreadable):
        result.errors.insert(0, FileError(path, reason))
    for missing in found.missing:
        result.errors.insert(0, FileError(missing, "no such file or directory"))
    return result
