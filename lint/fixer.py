"""Fix files on disk: the fix loop (apply, re-parse, re-lint, until stable), diffs, and
atomic writes that keep encoding, BOM, line endings and permissions."""

from __future__ import annotations

import contextlib
import glob
import os
import stat
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from ddplint.engine.per_file import lint_source
from ddplint.engine.pool import default_jobs, run_jobs
from ddplint.finding import FileError, Finding
from ddplint.fix import (
    applicable,
    apply_edits,
    choose_fixes,
    edits_of,
    syntax_problem,
    with_text,
)
from ddplint.interrupt import signals_held
from ddplint.results import FileOutcome, RunResult
from ddplint.settings import LintOptions, Settings, ignored_for_path
from ddplint.source import SourceError, SourceFile

#: Passes of apply + re-lint before giving up on a file whose fixes keep offering more.
MAX_PASSES = 20


@dataclass
class FileFix:
    """What the fix loop did to one file's text (nothing on disk yet)."""

    path: str
    before: str
    after: str
    raw_before: bytes
    raw_after: bytes
    #: Findings whose fixes were applied, over all passes.
    fixed: list[Finding] = field(default_factory=list)
    #: The lint result of the final text: what is left to report.
    remaining: FileOutcome = field(default_factory=FileOutcome)
    #: Fixes dropped (result did not parse) or a loop that did not settle.
    errors: list[FileError] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.raw_after != self.raw_before


@dataclass
class FixRun:
    """A run after fixing: what is left to report, plus what was (or would be) changed."""

    result: RunResult
    files: list[FileFix]

    @property
    def changed_files(self) -> list[FileFix]:
        return [f for f in self.files if f.changed]

    @property
    def fixed_count(self) -> int:
        return sum(len(f.fixed) for f in self.changed_files)


def fix_source(path: str, raw: bytes, options: LintOptions, unsafe: bool) -> FileFix:
    """Lint one file's bytes and run the fix loop on them.

    Each pass applies the fixes that do not overlap, checks that the result still
    parses (a fix that breaks it is dropped and reported, naming its rule; the others of
    the pass are kept) and re-lints, until no fix is left or ``MAX_PASSES`` is reached.
    Raises SourceError when the bytes cannot be decoded.
    """
    source = SourceFile.decode(path, raw)
    result = FileFix(path, source.text, source.text, raw, raw)
    outcome = lint_source(path, raw, options)
    result.remaining = outcome
    if not any(applicable(f, unsafe) for f in outcome.findings):
        return result
    if source.encode(source.text) != source.raw:
        result.errors.append(
            FileError(
                path,
                f"not fixed: its encoding ({source.encoding}) does not store the same text as "
                "the same bytes, so any edit would rewrite the whole file",
            )
        )
        return result
    original_problem = syntax_problem(source.kind, source.text)
    if original_problem is not None:
        result.errors.append(
            FileError(path, f"not fixed: the file does not parse as it is ({original_problem})")
        )
        return result
    dropped: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    for _ in range(MAX_PASSES):
        candidates = [
            f
            for f in outcome.findings
            if applicable(f, unsafe) and _identity(f, source) not in dropped
        ]
        chosen, _ = choose_fixes(candidates, unsafe)
        if not chosen:
            break
        fixed, applied, broken = _apply_checked(source, chosen)
        for finding, problem in broken:
            dropped.add(_identity(finding, source))
            result.errors.append(
                FileError(
                    path,
                    f"fix for {finding.rule} dropped: {problem}",
                    rule=finding.rule,
                    line=finding.line,
                    column=finding.column,
                )
            )
        if applied:
            source = fixed
            result.fixed.extend(applied)
            outcome = lint_source(path, source.raw, options)
    else:
        rules = sorted({f.rule for f in outcome.findings if applicable(f, unsafe)})
        result.errors.append(
            FileError(
                path,
                f"fixes did not settle after {MAX_PASSES} passes ({', '.join(rules)} kept "
                "offering fixes); the last state that parsed is kept",
                rule=rules[0] if rules else None,
            )
        )
    result.after, result.raw_after, result.remaining = source.text, source.raw, outcome
    return result


def _identity(finding: Finding, source: SourceFile) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A fix by what it does (rule, replaced text, new text), not where: positions move
    between passes."""
    assert finding.fix is not None
    return finding.rule, tuple(
        (
            source.text[source.offset(e.line, e.column) : source.offset(e.end_line, e.end_column)],
            e.content,
        )
        for e in finding.fix.edits
    )


def _apply_checked(
    source: SourceFile, chosen: list[Finding]
) -> tuple[SourceFile, list[Finding], list[tuple[Finding, str]]]:
    """Apply ``chosen`` together; if the result does not parse (or cannot be encoded),
    find the fixes to blame by adding them one at a time.

    Returns the new file, the fixes applied, and the fixes dropped with the reason.
    """
    fixed, problem = _try(source, chosen)
    if problem is None:
        return fixed, chosen, []
    accepted: list[Finding] = []
    broken: list[tuple[Finding, str]] = []
    for finding in chosen:
        _, problem = _try(source, [*accepted, finding])
        if problem is None:
            accepted.append(finding)
        else:
            broken.append((finding, problem))
    fixed, _ = _try(source, accepted)
    return fixed, accepted, broken


def _try(source: SourceFile, findings: list[Finding]) -> tuple[SourceFile, str | None]:
    text = apply_edits(source, edits_of(findings))
    try:
        fixed = with_text(source, text)
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start : exc.end]
        return source, f"the result cannot be written as {source.encoding} ({bad!r})"
    problem = syntax_problem(source.kind, text)
    if problem is not None:
        return source, f"the result does not parse ({problem})"
    return fixed, None


def _fix_job(job: tuple[str, bytes, LintOptions, bool]) -> FileFix:
    path, raw, options, unsafe = job
    try:
        return fix_source(path, raw, options, unsafe)
    except SourceError as exc:  # the file changed since it was linted, and now is bad
        text = raw.decode("utf-8", "replace")
        fix = FileFix(path, text, text, raw, raw)
        fix.errors.append(FileError(path, f"not fixed: {exc.message}"))
        return fix


def fix_run(
    result: RunResult,
    settings: Settings,
    options: LintOptions,
    *,
    unsafe: bool,
    write: bool,
    jobs: int | None = None,
) -> FixRun:
    """Fix every linted file that has an applicable fix; write the changes when
    ``write`` (else only compute them, for ``--diff``).

    The returned result holds the findings left after fixing, plus an error for each
    fix dropped and each file that could not be written (left exactly as it was).
    """
    fixable = {f.path for f in result.findings if applicable(f, unsafe)}
    targets = {t.display: t for t in result.targets if t.display in fixable}
    errors: list[FileError] = []
    work = []
    for display, target in targets.items():
        try:
            raw = target.path.read_bytes()
        except OSError as exc:
            errors.append(FileError(display, f"cannot read: {exc.strerror or exc}"))
            continue
        work.append((display, raw, options_for_path(settings, options, target.relative), unsafe))

    files = list(run_jobs(_fix_job, work, jobs or default_jobs()))
    changed: dict[str, FileFix] = {}
    for fix in files:
        errors.extend(fix.errors)
        if not fix.changed:
            continue
        if write:
            path = targets[fix.path].path
            problem = write_refusal(path, Path(options.project_root)) or write_atomic(
                path, fix.raw_after, expected=fix.raw_before
            )
            if problem is not None:
                errors.append(FileError(fix.path, f"cannot write fixes: {problem}"))
                fix.after, fix.raw_after, fix.fixed = fix.before, fix.raw_before, []
                continue
        changed[fix.path] = fix

    findings = [f for f in result.findings if f.path not in changed]
    kept_errors = [e for e in result.errors if e.path not in changed]
    internal = result.internal_error
    for fix in changed.values():
        findings.extend(fix.remaining.findings)
        kept_errors.extend(fix.remaining.errors)
        internal = internal or fix.remaining.internal_error
    findings.sort(key=lambda f: f.sort_key)
    new_result = replace(
        result, findings=findings, errors=[*kept_errors, *errors], internal_error=internal
    )
    return FixRun(new_result, files)


def options_for_path(settings: Settings, options: LintOptions, relative: str) -> LintOptions:
    """The options for one file: rules its ``per-file-ignores`` turn off are not run."""
    ignored = ignored_for_path(settings, relative)
    if not ignored:
        return options
    selected = tuple(c for c in options.selected if not any(c.startswith(i) for i in ignored))
    return replace(options, selected=selected)


#: Temporary files of a fix are ``.NAME.ddplint-PID-RANDOM.tmp`` next to the file: never
#: linted (not .py / .yaml), and removed by the next fix of that file if a killed
#: process (PID gone) left one behind.
TEMPORARY_TAG = ".ddplint-"


def _temporary_prefix(real: Path) -> str:
    return f".{real.name}{TEMPORARY_TAG}"


def remove_stale_temporaries(real: Path) -> list[Path]:
    """Delete the temporary files of earlier fixes of ``real`` whose process is gone
    (killed between writing and renaming); returns them."""
    prefix = _temporary_prefix(real)
    removed = []
    for candidate in real.parent.glob(glob.escape(prefix) + "*.tmp"):
        pid = candidate.name[len(prefix) :].split("-", 1)[0]
        if not pid.isdigit() or (int(pid) != os.getpid() and _process_exists(int(pid))):
            continue
        with contextlib.suppress(FileNotFoundError):
            candidate.unlink()
            removed.append(candidate)
    return removed


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def write_refusal(path: Path, root: Path) -> str | None:
    """Why ``path`` must not be written by a fix, or None: ddplint never writes through a
    symbolic link, nor anywhere outside the project root (a tracked link or a linked
    folder could otherwise carry a fix out of the repository)."""
    if path.is_symlink():
        return "it is a symbolic link (fixes never write through a link)"
    real, real_root = os.path.realpath(path), os.path.realpath(root)
    if os.path.commonpath([real, real_root]) != real_root:
        return f"it lies outside the project root {root} (through a linked folder)"
    return None


def write_atomic(path: Path, data: bytes, *, expected: bytes) -> str | None:
    """Replace the file's bytes with ``data`` through a temporary file and a rename, so
    a reader never sees half a file and a killed fix leaves the file as it was;
    permissions (and, where allowed, ownership) are kept. Callers check
    ``write_refusal`` first (no links, nothing outside the project). Returns why it was
    not written, or None.

    A read-only file is not written (even for root), nor one with hard links (the other
    names would keep the old text), nor one whose bytes are no longer ``expected``
    (changed on disk since it was read). SIGINT / SIGTERM wait for the rename, so an
    interrupted fix leaves no temporary file.
    """
    real = Path(os.path.realpath(path))
    try:
        info = real.stat()
        if not os.access(real, os.W_OK) or not info.st_mode & 0o222:
            return "the file is read-only"
        if info.st_nlink > 1:
            return (
                f"it has {info.st_nlink} hard links (a fixed copy would leave the other "
                "names with the old text)"
            )
        if real.read_bytes() != expected:
            return "the file changed on disk while it was being fixed"
        remove_stale_temporaries(real)
    except OSError as exc:
        return exc.strerror or str(exc)
    with signals_held():
        return _replace_bytes(real, data, info)


def _replace_bytes(real: Path, data: bytes, info: os.stat_result) -> str | None:
    """Write ``data`` to a temporary file beside ``real`` with its permissions and rename
    it over ``real``; why not, or None."""
    try:
        handle, temporary = tempfile.mkstemp(
            dir=real.parent, prefix=f"{_temporary_prefix(real)}{os.getpid()}-", suffix=".tmp"
        )
    except OSError as exc:
        return exc.strerror or str(exc)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, stat.S_IMODE(info.st_mode))
        if os.name == "posix" and (info.st_uid, info.st_gid) != (os.geteuid(), os.getegid()):
            # Only root may give a file away; otherwise it stays the fixer's.
            with contextlib.suppress(PermissionError):
                os.chown(temporary, info.st_uid, info.st_gid)
        os.replace(temporary, real)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        return exc.strerror or str(exc)
    return None
