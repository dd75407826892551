"""Baselines for adopting ddplint in an existing repository: record today's findings,
then report only new ones.

An entry is a fingerprint of rule + path (from the project root) + the flagged lines'
text without whitespace + which occurrence of that text it is. No line numbers:
edits above a finding, or re-formatting its lines, do not make it new again.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from ddplint.finding import Finding
from ddplint.results import RunResult
from ddplint.source import FileTooLarge, read_source_bytes

BASELINE_VERSION = 1
#: A baseline larger than this (64 MiB) is refused unread (``/dev/zero``, a huge file).
MAX_BASELINE_BYTES = 64 * 1024 * 1024

ReadLines = Callable[[str], "list[str] | None"]


class BaselineError(Exception):
    """A baseline file that cannot be read or is not a ddplint baseline (exit 2)."""


@dataclass(frozen=True, order=True)
class BaselineEntry:
    path: str
    rule: str
    fingerprint: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "rule": self.rule, "fingerprint": self.fingerprint}


def flagged_text(finding: Finding, lines: list[str] | None) -> str:
    """The finding's lines without any whitespace, so re-indenting or re-formatting
    them keeps the entry (empty if the file is gone)."""
    if not lines:
        return ""
    return "".join("".join(lines[finding.line - 1 : finding.end_line]).split())


def fingerprint(rule: str, path: str, text: str, occurrence: int) -> str:
    payload = "\0".join((rule, path, text, str(occurrence)))
    return hashlib.blake2b(payload.encode("utf-8", "surrogateescape"), digest_size=10).hexdigest()


def entries_for(
    findings: Iterable[Finding], read_lines: ReadLines, path_key: Callable[[str], str]
) -> list[tuple[Finding, BaselineEntry]]:
    """Each finding with its entry. Findings sharing rule, path and text are told apart
    by their order in the file (0 for the first, 1 for the next, ...)."""
    seen: Counter[tuple[str, str, str]] = Counter()
    lines_of: dict[str, list[str] | None] = {}
    paired = []
    for finding in sorted(findings, key=lambda f: f.sort_key):
        if finding.path not in lines_of:
            lines_of[finding.path] = read_lines(finding.path)
        key = path_key(finding.path)
        text = flagged_text(finding, lines_of[finding.path])
        occurrence = seen[(finding.rule, key, text)]
        seen[(finding.rule, key, text)] += 1
        entry = BaselineEntry(key, finding.rule, fingerprint(finding.rule, key, text, occurrence))
        paired.append((finding, entry))
    return paired


def project_path_key(root: Path) -> Callable[[str], str]:
    """Displayed path -> posix path below ``root`` (unchanged when outside it), so a
    baseline does not depend on the folder ddplint was started from."""

    def key(display: str) -> str:
        try:
            return Path(display).resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            return display

    return key


def write_baseline(
    file: Path, result: RunResult, read_lines: ReadLines, root: Path
) -> list[BaselineEntry]:
    """Record every finding of ``result`` in ``file``; the entries, sorted."""
    entries = sorted(e for _, e in entries_for(result.findings, read_lines, project_path_key(root)))
    document = {
        "version": BASELINE_VERSION,
        "tool": "ddplint",
        "findings": [e.to_json() for e in entries],
    }
    try:
        file.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise BaselineError(f"cannot write baseline {file}: {exc.strerror or exc}") from None
    return entries


def load_baseline(file: Path) -> list[BaselineEntry]:
    """The entries of the baseline ``file``; a ``BaselineError`` saying why when the file
    cannot be read (a FIFO or device is refused unread, at most ``MAX_BASELINE_BYTES``)
    or is not a ddplint baseline."""
    try:
        data = json.loads(read_source_bytes(file, MAX_BASELINE_BYTES).decode("utf-8"))
    except FileTooLarge as exc:
        raise BaselineError(
            f"cannot read baseline {file}: {exc.size} bytes, more than a baseline may hold "
            f"({MAX_BASELINE_BYTES})"
        ) from None
    except OSError as exc:
        raise BaselineError(f"cannot read baseline {file}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise BaselineError(f"baseline {file} is not valid JSON: {exc}") from None
    if not (
        isinstance(data, dict)
        and data.get("version") == BASELINE_VERSION
        and isinstance(data.get("findings"), list)
    ):
        raise BaselineError(
            f"{file} is not a ddplint baseline (version {BASELINE_VERSION}); "
            "write one with --write-baseline"
        )
    return [_entry(file, number, raw) for number, raw in enumerate(data["findings"], start=1)]


def _entry(file: Path, number: int, raw: object) -> BaselineEntry:
    """Entry ``number`` (1-based) of ``file``: an object of three strings."""
    fields = ("path", "rule", "fingerprint")
    if not isinstance(raw, dict) or not all(isinstance(raw.get(key), str) for key in fields):
        raise BaselineError(
            f"baseline {file} has a malformed entry (number {number}): each must be an "
            f"object with string {', '.join(fields)}"
        )
    return BaselineEntry(raw["path"], raw["rule"], raw["fingerprint"])


@dataclass(frozen=True)
class BaselineOutcome:
    result: RunResult
    #: Findings hidden because the baseline holds them.
    known: int
    #: Entries of linted (or deleted) files that match no finding any more.
    stale: list[BaselineEntry]


def apply_baseline(
    result: RunResult,
    entries: list[BaselineEntry],
    read_lines: ReadLines,
    root: Path,
    selected: Collection[str],
) -> BaselineOutcome:
    """``result`` without the findings the baseline holds, and the stale entries (of
    rules in ``selected`` that ran on the entry's file, or of files that are gone)."""
    key = project_path_key(root)
    recorded = set(entries)
    paired = entries_for(result.findings, read_lines, key)
    new = [finding for finding, entry in paired if entry not in recorded]
    matched = {entry for _, entry in paired if entry in recorded}
    linted = {key(t.display) for t in result.targets}
    stale = [
        e
        for e in sorted(recorded - matched)
        if e.rule in selected and (e.path in linted or not (root / e.path).exists())
    ]
    return BaselineOutcome(replace(result, findings=new), known=len(paired) - len(new), stale=stale)
