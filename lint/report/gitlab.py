"""``--output-format gitlab``: a GitLab Code Quality report (a JSON array of issues:
``description``, ``check_name``, ``fingerprint``, ``severity``, ``location.path`` and
``location.lines.begin``), for ``artifacts: reports: codequality:``.

The fingerprint is the baseline's (rule, path, flagged text, occurrence): unique per
finding and stable when lines above it move, so GitLab tracks an issue across commits.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ddplint.baseline import entries_for
from ddplint.finding import Finding, Severity
from ddplint.report.printable import json_document
from ddplint.results import RunResult

if TYPE_CHECKING:
    from ddplint.report import ReportContext

#: GitLab's levels are info, minor, major, critical, blocker; a ddplint error means
#: a crash or a hang is likely.
LEVELS = {Severity.ERROR: "critical", Severity.WARNING: "major", Severity.INFO: "info"}


def repository_path(path: str) -> str:
    """The path as GitLab matches it: relative to the working directory (the checkout),
    with ``/``; a path outside it stays absolute."""
    if Path(path).is_absolute():
        try:
            path = os.path.relpath(path)
        except ValueError:  # another drive
            return Path(path).as_posix()
        if path.startswith(".."):
            return Path(os.path.abspath(path)).as_posix()
    return Path(path).as_posix()


def _issue(finding: Finding, fingerprint: str) -> dict[str, Any]:
    return {
        "type": "issue",
        "check_name": finding.rule,
        "description": f"{finding.name}: {finding.message}",
        "categories": ["Bug Risk"],
        "severity": LEVELS[finding.severity],
        "fingerprint": fingerprint,
        "location": {
            "path": repository_path(finding.path),
            "lines": {"begin": finding.line, "end": finding.end_line},
        },
    }


def render_gitlab(result: RunResult, context: ReportContext) -> str:
    paired = entries_for(result.findings, context.read_lines, lambda path: path)
    return json_document([_issue(finding, entry.fingerprint) for finding, entry in paired])
