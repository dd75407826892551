"""What shapes a run besides its targets (settings, how files are read, the cache,
the jobs) and what a caller that lints one project again and again keeps between runs."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ddplint.cache import ResultCache
from ddplint.discover import Target
from ddplint.settings import LintOptions, Settings

if TYPE_CHECKING:
    from ddplint.code.project.index import ProjectIndex
    from ddplint.code.project.summaries import Summary


#: Called as files are done: (files done, files in all).
ProgressCallback = Callable[[int, int], None]


#: Reads a file's bytes up to a size limit, raising as ``read_source_bytes`` does.
Reader = Callable[[Path, int], bytes]


def cache_directory(settings: Settings) -> Path:
    override = os.environ.get("DDPLINT_CACHE_DIR")
    return Path(override) if override else settings.project_root / ".ddplint_cache"


def open_cache(settings: Settings, options: LintOptions) -> ResultCache:
    """The project's result cache for these options (off, with ``problem``, when its
    signing key is unusable)."""
    return ResultCache(cache_directory(settings), options.fingerprint(), settings.project_root)


@dataclass(frozen=True)
class RunSetup:
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
    module summary is the same (an edit inside a function body seldom changes one) and
    moved where only line numbers changed (a line inserted or removed); otherwise the new
    index keeps the links of every module whose linking read none of the changed modules
    (and, when only what functions do changed, not the names modules import and define,
    starts from the old one's name resolutions)."""

    listing: list[Target] | None = None
    _summaries: dict[str, Summary] = field(default_factory=dict)
    _index: ProjectIndex | None = None

    def index(self, summaries: dict[str, Summary]) -> ProjectIndex:
        from ddplint.code.project.index import ProjectIndex, resolution_inputs
        from ddplint.code.project.module_summary import without_lines

        changed = self._changed(summaries)
        if changed and any(
            summaries[path].get("path_roots") != self._summaries[path].get("path_roots")
            for path in changed
        ):
            changed = None  # the folders on ``sys.path`` changed: any import may read another
        if self._index is None or changed is None:
            self._index = ProjectIndex(summaries)
        elif changed:
            previous = self._summaries
            if all(
                without_lines(summaries[path]) == without_lines(previous[path]) for path in changed
            ):  # lines inserted or removed above code: only where things stand moved
                self._index.moved(summaries, changed)
                self._summaries = summaries
                return self._index
            same_names = all(
                resolution_inputs(summaries[path]) == resolution_inputs(previous[path])
                for path in changed
            )
            # links that read none of the changed modules still hold; the names resolved
            # before hold while every module exports what it did
            old = self._index
            resolved = old.resolved if same_names else None
            self._index = ProjectIndex(summaries, resolved, old.links_unread(changed))
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
