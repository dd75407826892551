"""Output formats. Each renders a finished run to text; the CLI picks one by name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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


Formatter = Callable[["RunResult", ReportContext], str]

#: Each format's renderer, as ``module:function`` below ``ddplint.report``: a run imports
#: only the one it prints (``formatter``).
FORMATTERS: dict[str, str] = {
    "concise": "text:render_concise",
    "full": "text:render_full",
    "json": "json_format:render_json",
    "sarif": "sarif:render_sarif",
    "github": "github:render_github",
    "junit": "junit:render_junit",
    "gitlab": "gitlab:render_gitlab",
    "json-lines": "json_lines:render_json_lines",
    "rdjson": "rdjson:render_rdjson",
}
FORMAT_NAMES = frozenset(FORMATTERS)


def formatter(name: str) -> Formatter:
    """The renderer of format ``name`` (one of ``FORMAT_NAMES``), imported now."""
    module, function = FORMATTERS[name].split(":")
    found: Formatter = getattr(import_module(f"ddplint.report.{module}"), function)
    return found


#: Formats read by programs: no summary line, no progress, no colour.
MACHINE_FORMATS = frozenset({"json", "sarif", "github", "junit", "gitlab", "json-lines", "rdjson"})
#: Machine formats with no place for a file's error: errors go to stderr beside them.
ERRORS_APART = frozenset({"gitlab", "json-lines", "rdjson"})
#: The machine formats ``--statistics`` can be written in (the others refuse it).
STATISTICS_FORMATS = frozenset({"json"})
