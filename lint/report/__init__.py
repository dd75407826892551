"""Output formats. Each renders a finished run to text; the CLI picks one by name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ddplint.report.github import render_github
from ddplint.report.gitlab import render_gitlab
from ddplint.report.json_format import render_json
from ddplint.report.json_lines import render_json_lines
from ddplint.report.junit import render_junit
from ddplint.report.rdjson import render_rdjson
from ddplint.report.sarif import render_sarif
from ddplint.report.text import render_concise, render_full
from ddplint.results import RunResult


@dataclass(frozen=True)
class ReportContext:
    """What a formatter may need besides the findings: file text for code frames."""

    read_lines: Callable[[str], list[str] | None]
    show_fixes: bool = True
    #: ``--unsafe-fixes``: unsafe fixes count as applicable (the ``[*]`` marker).
    unsafe_fixes: bool = False
    #: ANSI colour in the human formats.
    colour: bool = False


Formatter = Callable[[RunResult, ReportContext], str]

FORMATTERS: dict[str, Formatter] = {
    "concise": render_concise,
    "full": render_full,
    "json": render_json,
    "sarif": render_sarif,
    "github": render_github,
    "junit": render_junit,
    "gitlab": render_gitlab,
    "json-lines": render_json_lines,
    "rdjson": render_rdjson,
}
#: Formats read by programs: no summary line, no progress, no colour.
MACHINE_FORMATS = frozenset({"json", "sarif", "github", "junit", "gitlab", "json-lines", "rdjson"})
#: Machine formats with no place for a file's error: errors go to stderr beside them.
ERRORS_APART = frozenset({"gitlab", "json-lines", "rdjson"})
#: The machine formats ``--statistics`` can be written in (the others refuse it).
STATISTICS_FORMATS = frozenset({"json"})
