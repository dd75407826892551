"""The project model of a run: the Python files it is built from, their summaries
(cached, built in the pool), the linked index (incremental), and each file's encoded
facts, memoized by the project's summaries."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ddplint.cache import LayeredEntry, ResultCache
from ddplint.code.project.encoding import SUMMARY_VERSION, encode_facts
from ddplint.code.project.memo import (
    DIGESTS_KEY,
    NO_SUMMARY,
    digests_to_keep,
    facts_key,
    file_facts_key,
    read_digests,
    summary_digest,
)
from ddplint.discover import Resolver, Target, discover
from ddplint.engine.pool import run_jobs
from ddplint.engine.run_setup import RunSetup
from ddplint.engine.triage import beyond_bounds
from ddplint.results import RunStats
from ddplint.source import (
    FileTooLarge,
    SourceError,
    SourceFile,
    file_kind,
)
from ddplint.source_stats import (
    ProjectSources,
    Stamp,
    read_stats,
    stamp_of,
    stats_key,
    stats_records,
)

if TYPE_CHECKING:
    from ddplint.code.project.index import ProjectIndex
    from ddplint.code.project.summaries import Summary


def _summary_job(raw: bytes) -> Summary | None:
    """The module summary of a Python file's bytes; None for one ``ast`` cannot read
    or one too large to analyse (its own lint run reports why)."""
    from ddplint.code.project.module_summary import summarize

    if beyond_bounds(raw) is not None:
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
        key = _summary_key(hashes[relative])
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


def _summary_key(hash_: str) -> str:
    return f"summary:{SUMMARY_VERSION}:{hash_}"


def _cached_summary(cache: ResultCache | None, hash_: str) -> Summary | None:
    """The summary the cache holds of a source by its content hash, if any."""
    hit = cache.get(_summary_key(hash_)) if cache is not None else None
    summary = hit.get("summary") if hit is not None else None
    return summary if isinstance(summary, dict) else None


def model_sources(
    targets: list[Target],
    contents: dict[int, bytes],
    stamps: dict[int, Stamp],
    whole_root: bool,
    setup: RunSetup,
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
    kept_stats = LayeredEntry(cache, stats_key(str(root))) if cache is not None else None
    recorded = read_stats(kept_stats.merged) if kept_stats is not None else {}
    resolver = Resolver()
    if whole_root and all(resolver.inside(t.path, root) for t in targets):
        linted = {target.relative for target in targets}
        _add_root(sources, paths, linted, recorded if trust_stats else {}, setup)
    # else no project around the files named: they are the model
    if kept_stats is not None:
        kept = {path: known for path, known in recorded.items() if path not in sources}
        kept.update(sources.records)  # a file read now and not settled is left out
        if kept != recorded:
            kept_stats.write(stats_records(kept))
    return sources


def _add_root(
    sources: ProjectSources,
    paths: dict[str, Path],
    linted: set[str],
    recorded: dict[str, tuple[Stamp, str]],
    setup: RunSetup,
) -> None:
    """Every Python file of the project root not ``linted`` into ``sources``: read from
    disk, or its hash taken from ``recorded`` where its stat is the one recorded."""
    settings = setup.settings
    listing = setup.memo.listing if setup.memo is not None else None
    seen: dict[str, os.stat_result] = {}  # stats the listing took now (a kept one's are old)
    if listing is None:
        found = discover([str(settings.project_root.resolve())], settings)
        listing, seen = found.targets, found.stats
        if setup.memo is not None:
            setup.memo.listing = listing
    for target in listing:
        relative = target.relative
        if relative in linted or file_kind(target.display) != "code":
            continue
        paths[relative] = target.path
        try:
            taken = seen.get(str(target.path))
            stamp = stamp_of(taken if taken is not None else os.stat(target.path))
            known = recorded.get(relative)
            if known is not None and known[0] == stamp and stamp[2] <= settings.max_file_size:
                sources.add_unread(relative, stamp, known[1])
                continue
            sources.add(relative, setup.read(target.path, settings.max_file_size), stamp)
        except (FileTooLarge, OSError):
            continue  # the model goes without it; this file is not reported on


def project_facts(
    targets: list[Target],
    positions: list[int],
    sources: ProjectSources,
    setup: RunSetup,
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
        digests = _summary_digests(sources, hashes, cache, setup.jobs, stats)
        sources.parses = frozenset(r for r, digest in digests.items() if digest != NO_SUMMARY)
        memo_key = facts_key(digests)
        known = _memoized_facts(cache, memo_key, relatives)
    missing = [relative for relative in relatives if relative not in known]
    if missing:
        index = _linked_index(sources, hashes, setup, stats)
        for relative in missing:
            known[relative] = _encoded_facts(index, relative)
            if cache is not None and memo_key is not None:
                cache.put(file_facts_key(memo_key, relative), {"facts": known[relative]})
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
    kept = LayeredEntry(cache, DIGESTS_KEY)
    known = read_digests(kept.merged)
    new = {relative: sources[relative] for relative in sources if hashes[relative] not in known}
    if new:
        found = _summaries(new, hashes, cache, jobs, stats)
        known = {**known, **{hashes[r]: summary_digest(found.get(r)) for r in new}}
        kept.write(digests_to_keep(known, set(hashes.values())))
    return {relative: known[hashes[relative]] for relative in sources}


def _linked_index(
    sources: Mapping[str, bytes], hashes: dict[str, str], setup: RunSetup, stats: RunStats
) -> ProjectIndex:
    """The project linked: by the caller's memo (the language server); else from the
    links the cache keeps of the last link, only what an edit changed linked again
    (``code.project.incremental``), and those links kept for the next run."""
    from ddplint.code.project.incremental import (
        LINKS_KEY,
        REWRITE_AFTER,
        LinkState,
        state_records,
    )
    from ddplint.code.project.index import ProjectIndex

    cache, memo = setup.cache, setup.memo
    if memo is not None or cache is None:
        summaries = _summaries(sources, hashes, cache, setup.jobs, stats)
        if isinstance(sources, ProjectSources):
            sources.parses = frozenset(summaries)
        return memo.index(summaries) if memo is not None else ProjectIndex(summaries)
    kept_links = LayeredEntry(cache, LINKS_KEY)
    for key in (LINKS_KEY, kept_links.layer_key):
        cache.forget(key)  # the lint workers need not inherit every module's links
    previous = LinkState.read(kept_links.merged)
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
        kept_links.write(state_records(index, hashes, summarised, previous))
    return index


class _StaleLinks(Exception):
    """The kept links name a module whose summary cannot be had any more."""


def _relinked(
    previous: Any,
    sources: Mapping[str, bytes],
    hashes: dict[str, str],
    setup: RunSetup,
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
    kept = previous.kept(project, built, lambda hash_: _cached_summary(setup.cache, hash_))
    inserted = previous.inserted_now(project, built)
    return ProjectIndex(summaries, kept=kept, inserted=inserted), set(project)


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


def _memoized_facts(cache: ResultCache, memo_key: str, relatives: list[str]) -> dict[str, str]:
    """The memoized facts of ``relatives`` ("" for none) that the cache holds, by
    relative path; a damaged entry is left out (the file is linked again)."""
    keys = {file_facts_key(memo_key, relative): relative for relative in relatives}
    found = {}
    for key, entry in cache.get_many(keys).items():
        facts = entry.get("facts")
        if isinstance(facts, str):
            found[keys[key]] = facts
    return found
