"""Which files to lint: git-aware (tracked + untracked-not-ignored), excludes honoured,
explicit file arguments always linted."""

from __future__ import annotations

import errno
import fnmatch
import os
import re
import stat
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path

from ddplint.gitignore import IgnoreRule, is_ignored, read_rules
from ddplint.settings import Settings
from ddplint.source import file_kind

#: How long git may take to list a repository's files.
GIT_TIMEOUT_SECONDS = 60


@dataclass(frozen=True)
class Target:
    """A file to lint: where it is, and how to name it in output."""

    path: Path
    display: str
    relative: str  # posix path relative to the project root, for per-file-ignores


@dataclass(frozen=True)
class Discovery:
    targets: list[Target]
    missing: list[str]
    #: Paths given that exist but cannot be linted (a FIFO, a symlink loop), with why.
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    #: What the reader should know about the listing (git failed, a folder unreadable).
    notices: list[str] = field(default_factory=list)
    #: The stat (links followed) of each file found in a folder, by ``str(target.path)``:
    #: taken by the listing, before any read.
    stats: dict[str, os.stat_result] = field(default_factory=dict)


def _resolve(path: Path) -> Path:
    """``path.resolve()``; the absolute path, unresolved, where symbolic links loop."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # RuntimeError before Python 3.13
        return Path(os.path.abspath(path))


class Resolver:
    """``resolve()`` for the many files of one listing, on strings: each folder is
    resolved once, and a file that is not a symbolic link resolves to its resolved folder
    and its name (as ``resolve()`` would). One per discovery: folders may change between
    runs."""

    def __init__(self) -> None:
        self._folders: dict[str, str] = {}
        self._files: dict[str, str] = {}

    def folder(self, path: Path | str) -> str:
        """``_resolve(path)``, remembered."""
        key = os.fspath(path)
        found = self._folders.get(key)
        if found is None:
            found = self._folders[key] = str(_resolve(Path(key)))
        return found

    def file(self, path: Path | str) -> str:
        """``_resolve(path)``, with the folder's resolution remembered (and the file's:
        a listing asks for each file more than once)."""
        key = os.fspath(path)
        found = self._files.get(key)
        if found is None:
            head, name = os.path.split(key)
            if name in ("", ".", "..") or os.path.islink(key):
                found = str(_resolve(Path(key)))
            else:
                found = os.path.join(self.folder(head or "."), name)
            self._files[key] = found
        return found

    def inside(self, path: Path | str, folder: Path | str) -> bool:
        """Whether ``path`` resolves to something strictly below ``folder`` resolved
        (``folder in path.resolve().parents``)."""
        return _below(self.file(path), self.folder(folder)) not in (None, ".")

    @cached_property
    def cwd(self) -> str:
        return str(_resolve(Path.cwd()))


def _below(path: str, base: str) -> str | None:
    """``path`` relative to ``base`` (both resolved), as ``Path.relative_to`` gives it;
    None when it is not below."""
    if path == base:
        return "."
    prefix = base if base.endswith("/") else base + "/"
    return path[len(prefix) :] if path.startswith(prefix) else None


def display_path(path: Path, resolver: Resolver | None = None) -> str:
    """Relative to the working directory when below it, else absolute."""
    resolver = resolver or Resolver()
    below = _below(resolver.file(path), resolver.cwd)
    return path.as_posix() if below is None else below


def _relative(
    path: Path, root: Path, fallback: Path | None = None, resolver: Resolver | None = None
) -> str:
    """Posix path below ``root``; below ``fallback`` (the scanned folder) otherwise."""
    resolver = resolver or Resolver()
    resolved = resolver.file(path)
    for base in (root, fallback):
        if base is None:
            continue
        below = _below(resolved, resolver.folder(base))
        if below is not None:
            return below
    return path.as_posix()


def is_excluded(relative: str, patterns: tuple[str, ...], named_depth: int = 0) -> bool:
    """Whether ``relative`` (posix, below the project root) is excluded: a pattern matches
    one of its leading paths (``a``, ``a/b``, ...) in full, or, without a ``/``, one of its
    components. The first ``named_depth`` components (a folder named on the command line
    and those above it) are not matched: a folder named on its own is linted, as a file
    named on its own is (ruff's rule). A folder's answer is remembered (the files of a
    listing share their folders)."""
    folder, _, name = relative.rpartition("/")
    depth = folder.count("/") + 1 if folder else 0
    if folder and _folder_excluded(folder, patterns, named_depth):
        return True
    if depth < named_depth:
        return False
    whole, component = _exclude_matchers(patterns)
    return bool(whole(relative) or component(name))


@lru_cache(maxsize=4096)
def _folder_excluded(folder: str, patterns: tuple[str, ...], named_depth: int) -> bool:
    """``is_excluded`` for the leading paths of ``folder`` (posix, below the root)."""
    whole, component = _exclude_matchers(patterns)
    parts = folder.split("/")
    for depth in range(named_depth, len(parts)):
        if whole("/".join(parts[: depth + 1])) or component(parts[depth]):
            return True
    return False


def _never(_text: str) -> bool:
    return False


@lru_cache(maxsize=32)
def _exclude_matchers(
    patterns: tuple[str, ...],
) -> tuple[Callable[[str], object], Callable[[str], object]]:
    """One compiled test for "a pattern matches this path" and one for "a pattern
    without ``/`` matches this component" (``fnmatch.fnmatchcase`` semantics, each
    pattern translated once instead of matched one by one)."""

    def compiled(chosen: list[str]) -> Callable[[str], object]:
        if not chosen:
            return _never
        return re.compile("|".join(fnmatch.translate(p) for p in chosen)).match

    return compiled(list(patterns)), compiled([p for p in patterns if "/" not in p])


def _named_depth(folder: Path, settings: Settings) -> int:
    """How many leading components of the paths found below ``folder`` (named on the
    command line) the excludes leave alone: all of ``folder``'s own, unless
    ``force-exclude`` applies the excludes to named paths too."""
    if settings.force_exclude:
        return 0
    relative = _relative(folder, settings.project_root, folder)
    return 0 if relative == "." else len(relative.split("/"))


@dataclass
class _Listing:
    """The files below a folder (their posix paths relative to it), and what the reader
    should know about how they were found."""

    files: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)


def _repository_root(directory: Path) -> Path | None:
    """The nearest folder at or above ``directory`` holding a ``.git``."""
    resolved = _resolve(directory)
    for candidate in (resolved, *resolved.parents):
        if os.path.lexists(candidate / ".git"):
            return candidate
    return None


def _unreadable_excludes_file(directory: Path) -> str | None:
    """The configured (or default) global excludes file when it is not a regular file:
    git would block reading a FIFO there until its timeout."""
    try:
        answer = subprocess.run(
            ["git", "config", "--path", "--get", "core.excludesFile"],
            cwd=directory,
            capture_output=True,
            timeout=GIT_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    configured = answer.stdout.decode("utf-8", "surrogateescape").strip()
    if configured:
        candidate = Path(configured)
    else:
        config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
        candidate = Path(config_home) / "git" / "ignore"
    try:
        mode = candidate.stat().st_mode
    except OSError:
        return None
    return None if stat.S_ISREG(mode) else str(candidate)


def _git_files(directory: Path) -> _Listing | str:
    """Tracked and untracked-not-ignored files below ``directory``, or why git could not
    list them (not a repository, git missing, damaged or refusing the checkout). The
    listing starts at once, beside the question of the global excludes file; when that
    file is not a regular one (git would wait on a FIFO there), the listing is stopped and
    started again without it."""
    # The linted repository's own config must not run anything: core.fsmonitor names a
    # command that git would start for ls-files.
    command = ["git", "-c", "core.fsmonitor=false"]
    listing = ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "."]
    notices = []
    try:
        listed = _start(command + listing, directory)
        excludes = _unreadable_excludes_file(directory)
        if excludes is not None:
            _stop(listed)
            notices.append(
                f"git: the global excludes file {excludes} is not a regular file: not read"
            )
            listed = _start([*command, "-c", "core.excludesFile=", *listing], directory)
    except OSError as exc:
        return f"git cannot be run ({exc.strerror or exc})"
    try:
        stdout, stderr = listed.communicate(timeout=GIT_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        _stop(listed)
        return f"git ls-files gave no answer in {GIT_TIMEOUT_SECONDS} s"
    messages = stderr.decode("utf-8", "replace").splitlines()
    if listed.returncode != 0:
        reason = next((m for m in messages if m.startswith(("fatal:", "error:"))), None)
        return f"git ls-files failed ({reason or f'exit {listed.returncode}'})"
    notices += [f"git: {m}" for m in messages if m.startswith("warning:")]
    names = [n for n in stdout.decode("utf-8", "surrogateescape").split("\0") if n]
    return _Listing(names, notices)


def _start(command: list[str], directory: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(command, cwd=directory, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """End ``process`` (it may wait on a FIFO) and collect it."""
    process.kill()
    process.communicate()


def _walk_files(directory: Path, settings: Settings, repository: Path | None) -> _Listing:
    """Every file below ``directory`` outside the excludes; inside a git repository (that
    git could not list) its ``.gitignore`` files and ``.git/info/exclude`` apply too."""
    listing = _Listing()
    root = settings.project_root
    named_depth = _named_depth(directory, settings)
    rules = _inherited_ignore_rules(directory, repository)
    resolver = Resolver()

    def unreadable(error: OSError) -> None:
        where = display_path(Path(error.filename)) if error.filename else directory.as_posix()
        listing.notices.append(f"{where}: cannot read folder ({error.strerror}): not linted")

    top = os.fspath(directory)
    for current, dirs, files in os.walk(top, onerror=unreadable, followlinks=False):
        here = Path(current)
        below = os.path.relpath(current, top).replace(os.sep, "/")
        prefix = "" if below == "." else below + "/"
        in_repo = _relative(here, repository, resolver=resolver) if repository is not None else ""
        if repository is not None:
            rules = rules + read_rules(here / ".gitignore", "" if in_repo == "." else in_repo)

        dirs[:] = sorted(
            d
            for d in dirs
            if not (repository is not None and _ignored(rules, in_repo, d, True))
            and not is_excluded(
                _relative(here / d, root, directory, resolver), settings.all_excludes, named_depth
            )
        )
        listing.files.extend(
            prefix + f
            for f in sorted(files)
            if not (repository is not None and _ignored(rules, in_repo, f, False))
        )
    return listing


def _ignored(rules: list[IgnoreRule], folder: str, name: str, is_folder: bool) -> bool:
    """Whether ``name`` in ``folder`` (relative to the repository, "." for its root) is
    ignored; ``.git`` always is."""
    if name == ".git":
        return True
    return is_ignored(rules, name if folder == "." else f"{folder}/{name}", is_folder)


def _inherited_ignore_rules(directory: Path, repository: Path | None) -> list[IgnoreRule]:
    """The ignore rules of ``repository`` that apply above ``directory``: its
    ``.git/info/exclude`` and the ``.gitignore`` of each folder from the root down."""
    if repository is None:
        return []
    rules = read_rules(repository / ".git" / "info" / "exclude", "")
    above = _relative(directory, repository)
    parts = [] if above == "." else above.split("/")
    for depth in range(len(parts)):  # the walk reads ``directory``'s own
        base = "/".join(parts[:depth])
        rules += read_rules(repository.joinpath(*parts[:depth], ".gitignore"), base)
    return rules


def _listing(path: Path, settings: Settings) -> _Listing:
    """The files git lists below ``path``; else a walk, which inside a repository (git
    failed there) applies its ignore files and says why git was not used."""
    listed = _git_files(path)
    if isinstance(listed, _Listing):
        return listed
    repository = _repository_root(path)
    walked = _walk_files(path, settings, repository)
    if repository is not None:
        walked.notices.insert(
            0, f"{display_path(path)}: {listed}; walked the folder instead, .gitignore applied"
        )
    return walked


def file_target(path: Path, settings: Settings) -> Target:
    """The target of one file named on its own (it need not exist on disk yet)."""
    return Target(path, display_path(path), _relative(path, settings.project_root))


def discover(paths: list[str], settings: Settings) -> Discovery:
    """Files to lint under ``paths``, each once, in a stable order."""
    targets: dict[str, Target] = {}
    missing: list[str] = []
    unreadable: list[tuple[str, str]] = []
    notices: list[str] = []
    stats: dict[str, os.stat_result] = {}
    root = settings.project_root
    for raw in paths:
        path = Path(raw)
        mode = _mode(path)
        if mode is not None and stat.S_ISREG(mode):
            # A file named on its own is linted even where excluded, unless
            # ``force-exclude`` is on (the pre-commit hook passes files one by one).
            excluded = settings.force_exclude and is_excluded(
                _relative(path, root), settings.all_excludes
            )
            if file_kind(path.name) is not None and not excluded:
                targets.setdefault(str(_resolve(path)), file_target(path, settings))
            continue
        if mode is None or not stat.S_ISDIR(mode):
            problem = _not_lintable(path)
            if problem is None:
                missing.append(raw)
            else:
                unreadable.append((raw, problem))
            continue
        listing = _listing(path, settings)
        notices += listing.notices
        _add_listed(listing, path, settings, targets, unreadable, stats)
    ordered = sorted(targets.values(), key=lambda t: t.display)
    return Discovery(ordered, missing, unreadable, notices, stats)


def _add_listed(
    listing: _Listing,
    folder: Path,
    settings: Settings,
    targets: dict[str, Target],
    unreadable: list[tuple[str, str]],
    stats: dict[str, os.stat_result],
) -> None:
    """The lintable files of ``folder``'s listing into ``targets`` (by resolved path),
    their stats into ``stats``. The folders of a listing are real folders below
    ``folder`` (git and the walk never follow a linked folder; a folder of git's index
    replaced by a link since is found by one ``lstat`` per folder), so a file that is
    not a link resolves to ``folder`` resolved and its name: one ``resolve()`` per
    listing, one ``lstat`` per file, the rest string operations."""
    named_depth = _named_depth(folder, settings)
    resolver = Resolver()
    unlinked = _unlinked_folders(folder)
    base = resolver.folder(folder)
    bases = (resolver.folder(settings.project_root), base)
    prefix = base if base.endswith("/") else base + "/"
    excludes = settings.all_excludes
    for name in listing.files:
        if file_kind(name.rpartition("/")[2]) is None:
            continue
        candidate = folder / name
        found = _lstat(candidate)
        link = found is not None and stat.S_ISLNK(found.st_mode)
        if link or not unlinked(name.rpartition("/")[0]):
            resolved = resolver.file(candidate)
            found = _stat(candidate)
        else:
            resolved = prefix + name
        relative = next(
            (r for b in bases if (r := _below(resolved, b)) is not None), candidate.as_posix()
        )
        if is_excluded(relative, excludes, named_depth):
            continue
        if found is None or not stat.S_ISREG(found.st_mode):
            # Deleted since git listed it, a dangling link or a loop: skipped. Below a
            # folder that cannot be read: said.
            if found is None and _permission_denied(candidate):
                unreadable.append((display_path(candidate), "cannot read: Permission denied"))
            continue
        known = targets.get(resolved)
        if known is None or (known.path.is_symlink() and not link):
            # A file and a link to it are one target: the file itself, which a fix
            # may write (never the link).
            below = _below(resolved, resolver.cwd)
            display = candidate.as_posix() if below is None else below
            targets[resolved] = Target(candidate, display, relative)
            stats[str(candidate)] = found


def _unlinked_folders(folder: Path) -> Callable[[str], bool]:
    """A test of a folder below ``folder`` (posix, relative; "" for ``folder``): whether
    none of its own components is a symbolic link, each folder asked once."""
    top = os.fspath(folder)
    known: dict[str, bool] = {"": True}

    def unlinked(sub: str) -> bool:
        answer = known.get(sub)
        if answer is None:
            parent = sub.rpartition("/")[0]
            answer = unlinked(parent) and not os.path.islink(os.path.join(top, sub))
            known[sub] = answer
        return answer

    return unlinked


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def _stat(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def _permission_denied(path: Path) -> bool:
    try:
        path.stat()
    except PermissionError:
        return True
    except OSError:
        return False
    return False


def _mode(path: Path) -> int | None:
    """``path``'s file type and mode (links followed); None when it cannot be had."""
    try:
        return path.stat().st_mode
    except OSError:
        return None


def _not_lintable(path: Path) -> str | None:
    """Why an existing path that is neither a file nor a folder cannot be linted; None
    when nothing is there."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        if exc.errno == errno.EACCES:
            return f"cannot read: {exc.strerror}"
        if not os.path.lexists(path):
            return None
        if exc.errno == errno.ENOENT:
            return f"cannot read: dangling symbolic link to {os.readlink(path)}"
        return f"cannot read: {exc.strerror or exc}"  # a symbolic link loop
    kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket or device"
    return f"cannot read: not a regular file ({kind})"
