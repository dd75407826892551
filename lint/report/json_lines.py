"""``--output-format json-lines``: one JSON object per finding per line (the objects of
``--output-format json``'s ``findings``), for tools that stream or ``grep`` results."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ddplint.results import RunResult

if TYPE_CHECKING:
    from ddplint.report import ReportContext


def render_json_lines(result: RunResult, _context: ReportContext) -> str:
    lines = (json.dumps(f.to_json(), ensure_ascii=False) for f in result.findings)
    text = "".join(line + "\n" for line in lines)
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
