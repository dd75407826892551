"""``--format json``: ``{"version": 1, "findings": [...], "errors": [...]}``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddplint.report.printable import json_document
from ddplint.results import RunResult

if TYPE_CHECKING:
    from ddplint.report import ReportContext

JSON_VERSION = 1


def render_json(result: RunResult, _context: ReportContext) -> str:
    document = {
        "version": JSON_VERSION,
        "findings": [f.to_json() for f in result.findings],
        "errors": [e.to_json() for e in result.errors],
    }
    return json_document(document)
