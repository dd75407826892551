"""Human formats: ``concise`` (``path:line:col: CODE message``) and ``full`` (the same
with a code frame and the fix on offer)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddplint.engine import RunResult
from ddplint.finding import Finding
from ddplint.report.printable import printable

if TYPE_CHECKING:
    from ddplint.report import ReportContext

FRAME_CONTEXT = 2


def concise_line(finding: Finding) -> str:
    where = f"{printable(finding.path)}:{finding.line}:{finding.column}"
    return f"{where}: {finding.rule} {printable(finding.message)}"


def render_concise(result: RunResult, _context: ReportContext) -> str:
    return "".join(concise_line(f) + "\n" for f in result.findings)


def code_frame(finding: Finding, lines: list[str]) -> list[str]:
    """A few numbered lines around the finding with carets under its span."""
    first = max(1, finding.line - FRAME_CONTEXT)
    last = min(len(lines), finding.end_line + FRAME_CONTEXT)
    width = len(str(last))
    frame = []
    for number in range(first, last + 1):
        text = lines[number - 1].rstrip("\r\n").expandtabs(1)
        marker = ">" if finding.line <= number <= finding.end_line else " "
        frame.append(f"  {marker} {number:>{width}} | {text}")
        if number == finding.line:
            start = finding.column - 1
            if finding.end_line == finding.line:
                span = max(1, finding.end_column - finding.column)
            else:
                span = max(1, len(text) - start)
            frame.append(f"    {' ' * width} | {' ' * start}{'^' * span}")
    return frame


def render_full(result: RunResult, context: ReportContext) -> str:
    out: list[str] = []
    for finding in result.findings:
        out.append(f"{concise_line(finding)} [{finding.name}]")
        lines = context.read_lines(finding.path)
        if lines:
            out.extend(code_frame(finding, lines))
        if finding.fix is not None and context.show_fixes:
            how = "--fix" if finding.fix.applicability.value == "safe" else "--unsafe-fixes"
            label = finding.fix.message or "fix available"
            out.append(f"  = help: {label} ({finding.fix.applicability.value}, {how})")
        out.append("")
    return "\n".join(out) + ("\n" if out else "")
