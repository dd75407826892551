"""One run over files: read them, build the project model, lint Python files (cache
first, then the pool), hand code facts to the YAML rules, gather the result."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass, field, replace
from pathlib import Path

from ddplint import code_facts, run_memo
from ddplint.cache import ResultCache, cache_key, valid_outcome_entry
from ddplint.code.project.encoding import OPTIONS_KEY as PROJECT_KEY
from ddplint.discover import Target, discover, display_path, file_target
from ddplint.engine.per_file import lint_job, worker_died
from ddplint.engine.pool import default_jobs, run_jobs
from ddplint.engine.project_model import model_sources, project_facts
from ddplint.engine.run_setup import ProgressCallback, ProjectMemo, RunSetup, open_cache
from ddplint.engine.selection import facts_wanted
from ddplint.engine.triage import prefilter, too_large_outcome
from ddplint.finding import FileError, Finding
from ddplint.gc_pace import paced
from ddplint.results import SKIPPED, FileOutcome, RunResult, RunStats
from ddplint.settings import LintOptions, Settings, ignored_for_path
from ddplint.source import (
    FileTooLarge,
    file_kind,
    read_source_bytes,
)
from ddplint.source_stats import (
    SourceChanged,
    Stamp,
    stamp_of,
)


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
    #: Relative paths the project model found ``ast`` reads (no second parse to tell).
    parses: frozenset[str] = frozenset()

    def lint(
        self, positions: list[int], options: LintOptions, collect: tuple[str, ...], key_suffix: str
    ) -> None:
        """Lint the files at ``positions`` (cache first, under content hash + suffix;
        a file with project facts also under their digest)."""
        pending: list[tuple[int, str]] = []
        per_file: dict[int, LintOptions] = {}
        keys: dict[int, str] = {}
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
            keys[position] = key
        if self.cache is not None:
            self.cache.get_many(keys.values())  # one query per batch, not per file
        for position, key in keys.items():
            hit = _cached_outcome(self.cache, key) if self.cache is not None else None
            if hit is not None and not _answers_hold(hit, self.targets[position], options):
                hit = None
            if hit is not None:
                self.outcomes[position] = hit
                self.stats.cached += 1
                continue
            skipped = prefilter(
                self.targets[position].display,
                self.contents[position],
                per_file.get(position, options),
                collect,
                self.targets[position].relative in self.parses,
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

        results = run_jobs(lint_job, work, self.jobs, crashed=worker_died, done=done)
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


def _answers_hold(outcome: FileOutcome, target: Target, options: LintOptions) -> bool:
    """Whether the project's configs still answer as they did when ``outcome`` was
    linted (the precision they ship); an outcome that asked nothing holds."""
    if not outcome.config_answers:
        return True
    from ddplint.code.values.shipped_precision import answers_hold

    return answers_hold(options.project_root, target.display, outcome.config_answers)


def _cached_outcome(cache: ResultCache, key: str) -> FileOutcome | None:
    """The cached outcome, or None when absent or damaged (then the file is re-linted)."""
    hit = cache.get(key)
    if hit is None or not valid_outcome_entry(hit):
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
    run = RunSetup(
        settings,
        options,
        read_source_bytes,
        cache,
        jobs or default_jobs(),
        progress,
        stamp_targets=True,
    )
    with paced():  # the run's many objects are scanned less often
        result = _lint_read(targets, run, whole_project)
    if cache is not None:
        cache.save()
        if cache.problem is not None:
            result.notices.append(cache.problem)
    return result


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
    setup = RunSetup(settings, options, read, cache, 1, memo=memo)
    return _lint_read(targets, setup, whole_project=True)


def _lint_read(targets: list[Target], setup: RunSetup, whole_project: bool) -> RunResult:
    """Read the targets and lint them (``lint_targets``)."""
    settings, options, cache = setup.settings, setup.options, setup.cache
    run_memo.forget()  # a run reads the project's configs afresh
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
            too_large[position] = too_large_outcome(target.display, exc.size, options.max_file_size)
        except OSError as exc:
            errors.append(FileError(target.display, f"cannot read: {exc.strerror or exc}"))
    configs = [p for p in contents if file_kind(targets[p].display) == "config"]
    others = [p for p in contents if p not in set(configs)]
    wanted = facts_wanted(options, [contents[p] for p in configs])
    run = _Run(targets, contents, cache, setup.jobs, stats, dict(too_large), setup.progress)
    code_files = [p for p in others if file_kind(targets[p].display) == "code"]
    sources = model_sources(targets, contents, stamps, whole_project, setup, trust_stats=True)
    try:
        run.project = project_facts(targets, code_files, sources, setup, stats)
    except SourceChanged:  # a file changed while this run read the project: read it all
        sources = model_sources(targets, contents, stamps, whole_project, setup, trust_stats=False)
        run.project = project_facts(targets, code_files, sources, setup, stats)
    run.parses = sources.parses
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
            from ddplint.launch_facts import launch_facts  # only a rule that reads them

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
    side = _Run(others, contents, run.cache, run.jobs, RunStats(), parses=run.parses)
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
