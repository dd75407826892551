"""Findings, file errors and notices (a file skipped) as LSP diagnostics."""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types

from ddplint.finding import FileError, Finding, Severity
from ddplint.results import SKIPPED
from ddplint.rule import rule_docs_url
from ddplint.server.positions import to_lsp

SOURCE = "ddplint"
_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}


def lsp_range(lines: Sequence[str], span: tuple[int, int, int, int], encoding: str) -> types.Range:
    """The LSP range of ddplint's 1-based (line, column, end_line, end_column)."""
    line, column, end_line, end_column = span
    start = to_lsp(lines, line, column, encoding)
    end = to_lsp(lines, end_line, end_column, encoding)
    return types.Range(types.Position(*start), types.Position(*end))


def finding_range(lines: Sequence[str], finding: Finding, encoding: str) -> types.Range:
    span = (finding.line, finding.column, finding.end_line, finding.end_column)
    return lsp_range(lines, span, encoding)


def finding_diagnostic(
    lines: Sequence[str], finding: Finding, encoding: str, uri: str | None = None
) -> types.Diagnostic:
    """The diagnostic of a finding; with the document's ``uri``, the other places it
    names as related information."""
    related = None
    if uri is not None and finding.related:
        related = [
            types.DiagnosticRelatedInformation(
                location=types.Location(
                    uri, lsp_range(lines, (p.line, p.column, p.line, p.column), encoding)
                ),
                message=p.message,
            )
            for p in finding.related
        ]
    return types.Diagnostic(
        range=finding_range(lines, finding, encoding),
        message=finding.message,
        severity=_SEVERITY[finding.severity],
        code=finding.rule,
        code_description=types.CodeDescription(href=rule_docs_url(finding.rule)),
        source=SOURCE,
        related_information=related,
    )


def error_diagnostic(lines: Sequence[str], error: FileError, encoding: str) -> types.Diagnostic:
    """A file ddplint could not analyse (a syntax error while typing): at the place
    named, else at the start of the file."""
    line = error.line or 1
    column = error.column or 1
    return types.Diagnostic(
        range=lsp_range(lines, (line, column, line, column), encoding),
        message=f"ddplint could not analyse this file: {error.message}",
        severity=types.DiagnosticSeverity.Warning,
        source=SOURCE,
    )


def notice_diagnostic(lines: Sequence[str], notice: str, encoding: str) -> types.Diagnostic:
    """Why (part of) a file was not linted (too large: ``max-file-size``), at its start:
    the editor must not show a skipped file as clean."""
    if notice.startswith(SKIPPED):
        message = f"ddplint did not lint this file: {notice.removeprefix(SKIPPED)}"
    else:
        message = f"ddplint: {notice}"
    return types.Diagnostic(
        range=lsp_range(lines, (1, 1, 1, 1), encoding),
        message=message,
        severity=types.DiagnosticSeverity.Information,
        source=SOURCE,
    )
