"""``check --add-noqa``: silence every reported finding with a ``# noqa: CODE`` on its
line (ruff's flag of the same name), so a project can adopt ddplint and fix later."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from ddplint.finding import Finding
from ddplint.fix import apply_edits, with_text
from ddplint.fixer import write_atomic, write_refusal
from ddplint.source import SourceError, SourceFile
from ddplint.suppress import noqa_edit


@dataclass
class NoqaRun:
    """What ``--add-noqa`` did: directives added, and files it could not write."""

    added: int = 0
    refused: list[tuple[str, str]] = field(default_factory=list)


def with_noqa(source: SourceFile, findings: list[Finding]) -> tuple[SourceFile, int]:
    """The file with a ``# noqa: CODE`` for each finding (once per line and code), and
    how many codes were added."""
    done: set[tuple[int, str]] = set()
    for finding in findings:
        first, last = finding.statement_lines or (finding.line, finding.end_line)
        edit = noqa_edit(source.text, source.kind, first, last, finding.rule)
        if edit is None or (edit.line, finding.rule) in done:
            continue
        done.add((edit.line, finding.rule))
        source = with_text(source, apply_edits(source, [edit]))
    return source, len(done)


def _add_to_file(path: str, findings: list[Finding], project_root: Path) -> tuple[int, str | None]:
    """Codes added to one file, and why it was not written (None when it was)."""
    refusal = write_refusal(Path(path), project_root)
    if refusal is not None:
        return 0, refusal
    try:
        raw = Path(path).read_bytes()
        source, added = with_noqa(SourceFile.decode(path, raw), findings)
    except (OSError, SourceError, UnicodeEncodeError) as exc:
        return 0, str(exc)
    refusal = write_atomic(Path(path), source.raw, expected=raw) if added else None
    return (0, refusal) if refusal else (added, None)


def add_noqa(findings: list[Finding], project_root: Path) -> NoqaRun:
    """Write the directives into each file with findings."""
    by_path: dict[str, list[Finding]] = defaultdict(list)
    for finding in findings:
        by_path[finding.path].append(finding)
    run = NoqaRun()
    for path, found in by_path.items():
        added, refusal = _add_to_file(path, found, project_root)
        run.added += added
        if refusal is not None:
            run.refused.append((path, refusal))
    return run
