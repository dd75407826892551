"""Human formats: ``concise`` (``path:line:col: CODE [*] summary``, one short clause per
finding, as ruff prints) and ``full`` (the whole message, a code frame and the fix on
offer, as a diff)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddplint.finding import Finding, Fix, Severity
from ddplint.fix import applicable, apply_edits, unified_diff
from ddplint.report.printable import printable
from ddplint.report.style import Styler
from ddplint.results import RunResult
from ddplint.source import SourceError, SourceFile

if TYPE_CHECKING:
    from ddplint.report import ReportContext

FRAME_CONTEXT = 2
#: Unchanged lines around a fix's change in ``full`` output (the code frame shows more).
FIX_CONTEXT = 1


#: After concise findings: where the explanation each short line leaves out is.
WHY_HINT = "For why each finding matters: `ddplint explain CODE`, or `--output-format full`."


def concise_line(finding: Finding) -> str:
    """``path:line:col: CODE message``: the whole message on one plain line."""
    where = f"{printable(finding.path)}:{finding.line}:{finding.column}"
    return f"{where}: {finding.rule} {printable(finding.message)}"


def short_line(finding: Finding, context: ReportContext) -> str:
    """``path:line:col: CODE [*] summary``: ``[*]`` when the fix would be applied under
    the current flags (unsafe ones only with ``--unsafe-fixes``); warnings and infos
    say so before the summary; colour when the context has it."""
    style = Styler(context.colour)
    where = style.path(f"{printable(finding.path)}:{finding.line}:{finding.column}:")
    parts = [where, style.code(finding.rule, finding.severity)]
    if applicable(finding, context.unsafe_fixes):
        parts.append(style.fixable("[*]"))
    if finding.severity is not Severity.ERROR:
        parts.append(style(f"{finding.severity.value}:", fg="yellow"))
    parts.append(printable(finding.short_message))
    return " ".join(parts)


def render_concise(result: RunResult, context: ReportContext) -> str:
    return "".join(short_line(f, context) + "\n" for f in result.findings)


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


def fix_diff(path: str, fix: Fix, lines: list[str]) -> list[str]:
    """The fix's change to the file, as the hunks of a unified diff (no file headers);
    empty when the edits cannot be applied to these lines."""
    before = "".join(lines)
    try:
        after = apply_edits(SourceFile.decode(path, before.encode("utf-8")), fix.edits)
    except (SourceError, IndexError, ValueError):
        return []
    diff = unified_diff(path, before, after, context=FIX_CONTEXT)
    return [f"    {line}" for line in diff.splitlines()[2:]]


def render_full(result: RunResult, context: ReportContext) -> str:
    out: list[str] = []
    for finding in result.findings:
        out.append(f"{concise_line(finding)} [{finding.name}]")
        lines = context.read_lines(finding.path)
        if lines:
            out.extend(code_frame(finding, lines))
        for place in finding.related:
            out.append(
                f"  = see {finding.path}:{place.line}:{place.column}: {printable(place.message)}"
            )
        if finding.fix is not None and context.show_fixes:
            how = "--fix" if finding.fix.applicability.value == "safe" else "--unsafe-fixes"
            label = finding.fix.message or "fix available"
            out.append(f"  = help: {label} ({finding.fix.applicability.value}, {how})")
            if lines:
                out.extend(fix_diff(finding.path, finding.fix, lines))
        out.append("")
    return "\n".join(out) + ("\n" if out else "")
