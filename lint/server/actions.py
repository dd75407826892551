"""Code actions and hover for the findings of one linted document.

- each finding's fix: a ``quickfix``, preferred when safe; an unsafe fix says so in its
  title;
- "ignore for this line": ``# noqa: CODE`` on the flagged statement's line;
- "fix all safe fixes" (``source.fixAll.ddplint``): every safe fix that does not overlap
  another, as one edit (what one pass of ``ddplint check --fix`` applies), offered only
  when the result still parses;
- hover on a finding: ``ddplint explain``'s text for its rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from lsprotocol import types

from ddplint.finding import Applicability, Edit, Finding
from ddplint.fix import apply_edits, choose_fixes, syntax_problem, with_line_ends
from ddplint.rules import all_rules
from ddplint.server.diagnostics import finding_diagnostic, finding_range, lsp_range
from ddplint.server.documents import DocumentResult
from ddplint.source import SourceFile, is_json
from ddplint.suppress import noqa_edit

FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.ddplint"


def code_actions(
    result: DocumentResult,
    wanted: types.Range,
    encoding: str,
    only: Sequence[str] | None = None,
) -> list[types.CodeAction]:
    """The actions for the findings whose range meets ``wanted``, and "fix all"; ``only``
    (the client's filter) keeps the kinds it names and their sub-kinds."""
    actions: list[types.CodeAction] = []
    for finding in result.findings:
        if _meets(finding_range(result.lines, finding, encoding), wanted):
            actions += _finding_actions(result, finding, encoding)
    fix_all = _fix_all(result, encoding)
    if fix_all is not None:
        actions.append(fix_all)
    if only:
        actions = [a for a in actions if any(_within(a.kind or "", kind) for kind in only)]
    return actions


def hover(
    result: DocumentResult,
    position: types.Position,
    encoding: str,
    markup: types.MarkupKind = types.MarkupKind.Markdown,
) -> types.Hover | None:
    """``ddplint explain`` of the rules of the findings at ``position`` (Markdown source,
    readable as plain text too, sent as ``markup``)."""
    at = types.Range(position, position)
    texts: list[str] = []
    for finding in result.findings:
        if _meets(finding_range(result.lines, finding, encoding), at):
            rule = all_rules().get(finding.rule)
            text = rule.explanation() if rule is not None else finding.message
            if text not in texts:
                texts.append(text)
    if not texts:
        return None
    content = types.MarkupContent(markup, "\n\n---\n\n".join(texts))
    return types.Hover(contents=content)


def _within(kind: str, wanted: str) -> bool:
    return kind == wanted or kind.startswith(wanted + ".")


def _meets(a: types.Range, b: types.Range) -> bool:
    """Whether two ranges overlap or touch (a cursor at a range's end is in it)."""
    return _key(a.start) <= _key(b.end) and _key(b.start) <= _key(a.end)


def _key(position: types.Position) -> tuple[int, int]:
    return position.line, position.character


def _finding_actions(
    result: DocumentResult, finding: Finding, encoding: str
) -> list[types.CodeAction]:
    diagnostic = finding_diagnostic(result.lines, finding, encoding, result.snapshot.uri)
    actions = []
    if finding.fix is not None and finding.fix.edits:
        safe = finding.fix.applicability is Applicability.SAFE
        what = finding.fix.message or f"Fix {finding.name}"
        title = f"{what} ({finding.rule})" if safe else f"{what} ({finding.rule}, unsafe fix)"
        actions.append(
            types.CodeAction(
                title=title,
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                is_preferred=safe,
                edit=_workspace_edit(result, finding.fix.edits, encoding),
            )
        )
    first, last = finding.statement_lines or (finding.line, finding.end_line)
    kind = result.snapshot.kind or "code"
    ignore = None
    if not is_json(result.snapshot.path.name):  # JSON has no comments: nowhere to suppress
        ignore = noqa_edit(result.snapshot.text, kind, first, last, finding.rule)
    if ignore is not None:
        actions.append(
            types.CodeAction(
                title=f"Ignore {finding.rule} for this line",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                edit=_workspace_edit(result, [ignore], encoding),
            )
        )
    return actions


def _fix_all(result: DocumentResult, encoding: str) -> types.CodeAction | None:
    """One action applying every safe fix that does not overlap another; None when
    there is none, or when the text would not parse afterwards."""
    chosen, edits = choose_fixes(result.findings, unsafe=False)
    if not chosen:
        return None
    source = _source(result)
    if syntax_problem(source.kind, apply_edits(source, edits)) is not None:
        return None
    return types.CodeAction(
        title=f"Fix all safe ddplint findings ({len(chosen)})",
        kind=FIX_ALL,
        edit=_workspace_edit(result, edits, encoding),
    )


def _source(result: DocumentResult) -> SourceFile:
    snapshot = result.snapshot
    return SourceFile.decode(str(snapshot.path), snapshot.text.encode("utf-8"))


def _workspace_edit(
    result: DocumentResult, edits: Iterable[Edit], encoding: str
) -> types.WorkspaceEdit:
    """The edits, all relative to the linted text (the server offers actions only
    while the document is still at the version that was linted)."""
    newline = _source(result).newline()
    text_edits = [
        types.TextEdit(
            range=lsp_range(result.lines, (e.line, e.column, e.end_line, e.end_column), encoding),
            new_text=with_line_ends(e.content, newline),
        )
        for e in sorted(edits)
    ]
    return types.WorkspaceEdit(changes={result.snapshot.uri: text_edits})
