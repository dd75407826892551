"""``--output-format rdjson``: the Reviewdog Diagnostic Format (``DiagnosticResult``)
for reviewdog (``reviewdog -f=rdjson``): the source, then one diagnostic per finding
with its range, severity and rule code, and its fix's edits as suggestions. No ``url``
is given: ddplint has no published documentation site (``ddplint explain CODE`` is it).

Columns are counted in UTF-8 bytes, as the format asks (ddplint counts characters),
converted with the file's text; where the text cannot be read they stay characters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ddplint.finding import Edit, Finding, Severity
from ddplint.report.printable import json_document
from ddplint.results import RunResult

if TYPE_CHECKING:
    from ddplint.report import ReportContext

SOURCE = {"name": "ddplint"}
SEVERITIES = {Severity.ERROR: "ERROR", Severity.WARNING: "WARNING", Severity.INFO: "INFO"}


class _Columns:
    """Character columns of one file turned into UTF-8 byte columns."""

    def __init__(self, lines: list[str] | None) -> None:
        self.lines = lines

    def position(self, line: int, column: int) -> dict[str, int]:
        if self.lines is not None and 1 <= line <= len(self.lines):
            column = len(self.lines[line - 1][: column - 1].encode("utf-8", "surrogatepass")) + 1
        return {"line": line, "column": column}

    def range(self, line: int, column: int, end_line: int, end_column: int) -> dict[str, Any]:
        return {"start": self.position(line, column), "end": self.position(end_line, end_column)}


def _suggestion(edit: Edit, columns: _Columns) -> dict[str, Any]:
    span = columns.range(edit.line, edit.column, edit.end_line, edit.end_column)
    return {"range": span, "text": edit.content}


def _diagnostic(finding: Finding, columns: _Columns) -> dict[str, Any]:
    span = (finding.line, finding.column, finding.end_line, finding.end_column)
    diagnostic: dict[str, Any] = {
        "message": finding.message,
        "location": {"path": finding.path, "range": columns.range(*span)},
        "severity": SEVERITIES[finding.severity],
        "source": SOURCE,
        "code": {"value": finding.rule},
    }
    if finding.fix is not None:
        diagnostic["suggestions"] = [_suggestion(e, columns) for e in finding.fix.edits]
    return diagnostic


def render_rdjson(result: RunResult, context: ReportContext) -> str:
    columns: dict[str, _Columns] = {}
    diagnostics = []
    for finding in result.findings:
        if finding.path not in columns:
            columns[finding.path] = _Columns(context.read_lines(finding.path))
        diagnostics.append(_diagnostic(finding, columns[finding.path]))
    return json_document({"source": SOURCE, "diagnostics": diagnostics})
