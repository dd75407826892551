"""Which files to lint: git-aware (tracked + untracked-not-ignored), excludes honoured,
explicit file arguments always linted."""

from __future__ import annotations

import errno
import fnmatch
import os
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ddplint.settings import Settings
from ddplint.source import file_kind


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


def _resolve(path: Path) -> Path:
    """``path.resolve()``; the absolute path, unresolved, where symbolic links loop."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # RuntimeError before Python 3.13
        return Path(os.path.abspath(path))


def display_path(path: Path) -> str:
    """Relative to the working directory when below it, else absolute."""
    try:
        return _resolve(path).relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _relative(path: Path, root: Path, fallback: Path | None = None) -> str:
    """Posix path below ``root``; below ``fallback`` (the scanned folder) otherwise."""
    resolved = _resolve(path)
    for base in (root, fallback):
        if base is None:
            continue
        try:
            return resolved.relative_to(_resolve(base)).as_posix()
        except ValueError:
            continue
    return path.as_posix()


def is_excluded(relative: str, patterns: tuple[str, ...]) -> bool:
    """A pattern matches the whole relative path, or any one of its components."""
    parts = relative.split("/")
    for pattern in patterns:
        if fnmatch.fnmatchcase(relative, pattern) or fnmatch.fnmatchcase(relative, pattern + "/*"):
            return True
        if "/" not in pattern and any(fnmatch.fnmatchcase(part, pattern) for part in parts):
            return True
    return False


def _git_files(directory: Path) -> list[Path] | None:
    """Tracked and untracked-not-ignored files below ``directory``, or None outside git."""
    # The linted repository's own config must not run anything: core.fsmonitor names a
    # command that git would start for ls-files.
    command = ["git", "-c", "core.fsmonitor=false", "ls-files", "-z", "--cached", "--others"]
    try:
        result = subprocess.run(
            [*command, "--exclude-standard", "--", "."],
            cwd=directory,
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if result.returncode != 0:
        return None
    names = [n for n in result.stdout.decode("utf-8", "surrogateescape").split("\0") if n]
    return [directory / name for name in names]


def _walk_files(directory: Path, settings: Settings) -> list[Path]:
    found: list[Path] = []
    root = settings.project_root
    for current, dirs, files in os.walk(directory, followlinks=False):
        here = Path(current)
        dirs[:] = sorted(
            d
            for d in dirs
            if not is_excluded(_relative(here / d, root, directory), settings.all_excludes)
        )
        found.extend(here / f for f in sorted(files))
    return found


def discover(paths: list[str], settings: Settings) -> Discovery:
    """Files to lint under ``paths``, each once, in a stable order."""
    targets: dict[Path, Target] = {}
    missing: list[str] = []
    unreadable: list[tuple[str, str]] = []
    root = settings.project_root
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            # An explicit file is always linted (pre-commit passes files one by one).
            if file_kind(path.name) is not None:
                targets.setdefault(
                    _resolve(path), Target(path, display_path(path), _relative(path, root))
                )
            continue
        if not path.is_dir():
            problem = _not_lintable(path)
            if problem is None:
                missing.append(raw)
            else:
                unreadable.append((raw, problem))
            continue
        candidates = _git_files(path)
        if candidates is None:
            candidates = _walk_files(path, settings)
        for candidate in candidates:
            if file_kind(candidate.name) is None:
                continue
            relative = _relative(candidate, root, path)
            if is_excluded(relative, settings.all_excludes):
                continue
            if not candidate.is_file():
                continue  # deleted since git listed it, or a dangling link
            key = _resolve(candidate)
            targets.setdefault(key, Target(candidate, display_path(candidate), relative))
    ordered = sorted(targets.values(), key=lambda t: t.display)
    return Discovery(ordered, missing, unreadable)


def _not_lintable(path: Path) -> str | None:
    """Why an existing path that is neither a file nor a folder cannot be linted; None
    when nothing is there."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        if not os.path.lexists(path):
            return None
        if exc.errno == errno.ENOENT:
            return f"cannot read: dangling symbolic link to {os.readlink(path)}"
        return f"cannot read: {exc.strerror or exc}"  # a symbolic link loop
    kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket or device"
    return f"cannot read: not a regular file ({kind})"
