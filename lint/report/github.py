"""``--format github``: GitHub Actions workflow commands, one annotation per finding
(``::warning file=...,line=...,col=...,endLine=...,endColumn=...,title=...::message``)
and per error, escaped as the Actions runner expects."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddplint.finding import FileError, Finding, Severity
from ddplint.report.printable import printable
from ddplint.results import RunResult

if TYPE_CHECKING:
    from ddplint.report import ReportContext

COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    """The message part: ``%``, CR and LF are percent-encoded; other control characters
    and a file name's undecodable bytes are escaped (``\\x1b``, ``\\xff``)."""
    return printable(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def escape_property(text: str) -> str:
    """A property value: as data, plus ``:`` and ``,`` (they delimit properties)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _command(kind: str, properties: list[tuple[str, object]], message: str) -> str:
    rendered = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties)
    return f"::{kind} {rendered}::{escape_data(message)}\n"


def annotation(finding: Finding) -> str:
    properties: list[tuple[str, object]] = [("file", finding.path), ("line", finding.line)]
    # GitHub takes columns only for a span on one line; endColumn is inclusive there.
    if finding.end_line == finding.line:
        properties.append(("col", finding.column))
    properties.append(("endLine", finding.end_line))
    if finding.end_line == finding.line:
        properties.append(("endColumn", max(finding.column, finding.end_column - 1)))
    properties.append(("title", f"{finding.rule} {finding.name}"))
    return _command(COMMANDS[finding.severity], properties, finding.message)


def error_annotation(error: FileError) -> str:
    properties: list[tuple[str, object]] = [("file", error.path)]
    if error.line is not None:
        properties.append(("line", error.line))
        if error.column is not None:
            properties.append(("col", error.column))
    title = f"ddplint error ({error.rule})" if error.rule else "ddplint error"
    properties.append(("title", title))
    return _command("error", properties, error.message)


def render_github(result: RunResult, _context: ReportContext) -> str:
    lines = [annotation(f) for f in result.findings]
    lines.extend(error_annotation(e) for e in result.errors)
    return "".join(lines)
