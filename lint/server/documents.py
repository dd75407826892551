"""The open documents and their linting.

Each open Python or YAML document is linted with its whole project: one in-process
engine run (``engine.lint_buffers``) per project over every open document of it, the
unsaved texts standing in for the files on disk, the project's other files read from
disk (their listing and the project index are kept between runs: ``ProjectMemo``).
Settings are those of ``ddplint check`` (the nearest ``[tool.ddplint]``), found per
folder and kept until ``forget_settings`` (a settings file changed). A bad configuration
is reported and the project is linted with the default settings. A document that cannot
be linted (its path, a lone surrogate) or a project whose run fails gets its error; the
others are linted all the same.
"""

from __future__ import annotations

import errno
import os
from collections import OrderedDict, defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ddplint.cache import ResultCache
from ddplint.code.project import module_summary
from ddplint.code.syntax import incremental_parse, module_index
from ddplint.discover import is_excluded
from ddplint.engine.run import lint_buffers
from ddplint.engine.run_setup import ProjectMemo, cache_directory
from ddplint.finding import FileError, Finding
from ddplint.invocation import build_options, build_settings
from ddplint.results import RunResult
from ddplint.settings import LintOptions, Settings, SettingsError, find_project_root
from ddplint.source import file_kind, split_lines

#: The most result-cache entries a project keeps in a server session.
SESSION_ENTRIES = 50_000
#: The most entries a session keeps of what it learned after its first write-back: the
#: texts of edits (a 900-line file's summary and result: about 1.3 MB each; 1,000 edits
#: grew the server by 1.3 GB before this bound). The last ones stay: an undo is a hit.
EDIT_ENTRIES = 100


@dataclass(frozen=True)
class Snapshot:
    """One open document as it was when a lint started."""

    uri: str
    path: Path
    version: int | None
    text: str
    #: Why the document cannot be linted (its path cannot be used), or None.
    problem: str | None = None

    @property
    def kind(self) -> str | None:
        """``code``, ``config``, or None for a file ddplint does not lint."""
        return file_kind(self.path.name)


def usable_path(path: str) -> tuple[Path, str | None]:
    """The resolved path of an open document (or a workspace folder), and why it cannot
    be used (a NUL byte, a loop of symbolic links, a name too long for the system), or
    None. A document not saved yet, or in a folder ddplint may not list, is linted from
    its text."""
    try:
        resolved = Path(path).resolve()
    except (ValueError, RuntimeError, OSError) as exc:  # a NUL byte; a link loop (3.11)
        return Path(path), f"its path cannot be used ({exc})"
    try:
        os.lstat(resolved)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENAMETOOLONG):
            return resolved, f"its path cannot be used ({exc.strerror})"
    return resolved, None


@dataclass
class DocumentResult:
    """What linting one snapshot found, and why parts of it were not linted (notices)."""

    snapshot: Snapshot
    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

    @cached_property
    def lines(self) -> list[str]:
        return split_lines(self.snapshot.text)


@dataclass
class ProjectSetup:
    """The settings of one project and the result cache kept between its runs."""

    settings: Settings
    options: LintOptions
    cache: SessionCache
    #: Why the project's own settings could not be used (the defaults are), or None.
    problem: str | None = None
    memo: ProjectMemo = field(default_factory=ProjectMemo)

    @classmethod
    def for_folder(cls, folder: Path) -> ProjectSetup:
        problem = None
        try:
            settings = build_settings((str(folder),), None, (), (), (), False)
            options = build_options(settings)
        except SettingsError as exc:
            problem = f"ddplint: bad settings ({exc}); linting with the default settings"
            settings = Settings(project_root=find_project_root(folder))
            options = build_options(settings)
        cache = SessionCache(
            cache_directory(settings), options.fingerprint(), settings.project_root
        )
        if problem is None and cache.problem is not None:
            problem = f"ddplint: {cache.problem}"
        return cls(settings, options, cache, problem)

    def lints(self, snapshot: Snapshot) -> bool:
        """Whether the document is linted: a Python or YAML file, not excluded by
        ``force-exclude`` (as for a file named on the command line)."""
        if snapshot.kind is None:
            return False
        if not self.settings.force_exclude:
            return True
        try:
            relative = snapshot.path.relative_to(self.settings.project_root).as_posix()
        except ValueError:
            return True
        return not is_excluded(relative, self.settings.all_excludes)


@dataclass
class LintRun:
    """One run's results by URI, and the settings problems of the projects it linted."""

    results: dict[str, DocumentResult]
    problems: list[str]


class SessionCache(ResultCache):
    """A project's result cache for one server session: read from the project's cache as
    entries are asked for, kept in memory (it gains entries for every text an edit
    makes), at most ``SESSION_ENTRIES`` entries (the oldest go first). What the session
    learned until its first ``write_back`` (the project's files on disk: summaries,
    results) is added to the project's cache file then, so the next session and the next
    ``ddplint check`` start warm; texts being edited later are not written, and only the
    last ``EDIT_ENTRIES`` entries learned after it are kept."""

    def __init__(self, directory: Path, fingerprint: str, project_root: Path | None = None):
        super().__init__(directory, fingerprint, project_root)
        self._learned: dict[str, dict[str, Any]] | None = {}
        self._edited: OrderedDict[str, None] = OrderedDict()

    def put(self, key: str, value: dict[str, Any]) -> None:
        self.remember(key, value)  # written back by ``write_back`` only
        if self._learned is None:
            self._edited[key] = None
            self._edited.move_to_end(key)
            while len(self._edited) > EDIT_ENTRIES:
                self.entries.pop(self._edited.popitem(last=False)[0], None)
        elif len(self._learned) < SESSION_ENTRIES:
            self._learned[key] = value
        while len(self.entries) > SESSION_ENTRIES:
            del self.entries[next(iter(self.entries))]

    def write_back(self, write: bool = True) -> None:
        """Add what was learned so far to the cache file (unless not ``write``), once
        per session; later entries are the edits' (``EDIT_ENTRIES``)."""
        learned, self._learned = self._learned, None
        if learned and write:
            self.add_to_file(learned)


class ProjectLinter:
    """Lints snapshots of open documents, each with its project's settings. ``lint``
    runs in one thread at a time; ``forget_settings`` may be called from another and
    takes effect when the next run starts."""

    def __init__(self) -> None:
        # An edit re-parses and re-summarises only the top-level statements it changed.
        incremental_parse.enable()
        module_summary.enable()
        module_index.keep_walks()
        #: By folder of a document; folders of one project share their setup.
        self._by_folder: dict[Path, ProjectSetup] = {}
        self._projects: dict[tuple[Path, Path | None], ProjectSetup] = {}
        self._forget = False

    def setup_for(self, path: Path) -> ProjectSetup:
        folder = path.parent
        setup = self._by_folder.get(folder)
        if setup is None:
            found = ProjectSetup.for_folder(folder)
            key = (found.settings.project_root, found.settings.config_file)
            setup = self._by_folder[folder] = self._projects.setdefault(key, found)
        return setup

    def forget_settings(self) -> None:
        """Read every project's settings again at the next run (a config file changed)."""
        self._forget = True

    def write_back(self, workspace: Sequence[Path]) -> None:
        """Each project's first results into its cache file (``SessionCache``), for the
        projects of the editor's workspace only: a file viewed elsewhere (a library, a
        loose script) gets no cache folder beside it."""
        for setup in list(self._projects.values()):
            root = setup.settings.project_root
            setup.cache.write_back(write=any(_nested(root, folder) for folder in workspace))

    def forget_files(self) -> None:
        """List every project's files again at the next run (a file may have been
        created or deleted)."""
        for setup in list(self._projects.values()):
            setup.memo.listing = None

    def lint(self, snapshots: list[Snapshot]) -> LintRun:
        """Results by URI for every snapshot ddplint lints; one run per project. A
        document, or a project, that fails gets its error; the others are linted."""
        if self._forget:
            self._forget = False
            self._by_folder.clear()
            self._projects.clear()
        results: dict[str, DocumentResult] = {}
        groups: dict[int, tuple[ProjectSetup, list[Snapshot]]] = {}
        for snapshot in snapshots:
            if snapshot.kind is None:
                continue
            unusable = _unusable(snapshot)
            if unusable is not None:
                results[snapshot.uri] = DocumentResult(snapshot, errors=[unusable])
                continue
            try:
                setup = self.setup_for(snapshot.path)
            except Exception as exc:  # a bug of ours: this document fails alone
                results[snapshot.uri] = _failed(snapshot, _internal_error(exc))
                continue
            if setup.lints(snapshot):
                groups.setdefault(id(setup), (setup, []))[1].append(snapshot)
        for setup, members in groups.values():
            try:
                results.update(_lint_group(setup, members))
            except Exception as exc:  # a bug of ours: this project fails alone
                results.update((s.uri, _failed(s, _internal_error(exc))) for s in members)
        problems = sorted({setup.problem for setup, _ in groups.values() if setup.problem})
        return LintRun(results, problems)


def _nested(path: Path, folder: Path) -> bool:
    """Whether one of the two folders holds the other (or they are the same)."""
    return path.is_relative_to(folder) or folder.is_relative_to(path)


def _internal_error(exc: Exception) -> str:
    return f"internal error while linting: {type(exc).__name__}: {exc}"


def _unusable(snapshot: Snapshot) -> FileError | None:
    """Why the document cannot be linted at all: its path, or text that is not valid
    Unicode (a lone surrogate: an editor's unpaired UTF-16), with the place."""
    if snapshot.problem is not None:
        return FileError(snapshot.uri, snapshot.problem)
    try:
        snapshot.text.encode("utf-8")
    except UnicodeEncodeError as exc:
        before = snapshot.text[: exc.start]
        line_start = max(before.rfind("\n"), before.rfind("\r")) + 1
        line = len(split_lines(before[:line_start])) + 1
        return FileError(
            snapshot.uri,
            f"the text holds a lone surrogate (U+{ord(snapshot.text[exc.start]):04X}), "
            "which is not valid Unicode",
            line=line,
            column=exc.start - line_start + 1,
        )
    return None


def _failed(snapshot: Snapshot, message: str) -> DocumentResult:
    """The result of a document that could not be linted: one error."""
    return DocumentResult(snapshot, errors=[FileError(snapshot.uri, message)])


def _lint_group(setup: ProjectSetup, snapshots: list[Snapshot]) -> dict[str, DocumentResult]:
    buffers = {s.path: s.text.encode("utf-8") for s in snapshots}
    run = lint_buffers(buffers, setup.settings, setup.options, setup.cache, setup.memo)
    by_display = {
        target.display: snapshot for target, snapshot in zip(run.targets, snapshots, strict=True)
    }
    results = {s.uri: DocumentResult(s) for s in snapshots}
    found: dict[str, list[Finding]] = defaultdict(list)
    for finding in run.findings:
        found[by_display[finding.path].uri].append(finding)
    for error in run.errors:
        snapshot = by_display.get(error.path)
        if snapshot is not None:
            results[snapshot.uri].errors.append(error)
    for uri, findings in found.items():
        results[uri].findings = findings
    for display, notice in _notices_by_file(run, by_display):
        results[by_display[display].uri].notices.append(notice)
    return results


def _notices_by_file(run: RunResult, displays: Collection[str]) -> list[tuple[str, str]]:
    """The run's notices about the given files (``DISPLAY: notice``), split."""
    split = []
    for notice in run.notices:
        display = next((d for d in displays if notice.startswith(f"{d}: ")), None)
        if display is not None:
            split.append((display, notice[len(display) + 2 :]))
    return split
