"""Text edits for code fixes, computed from node positions (never a full re-print)."""

from __future__ import annotations

import libcst as cst

from lint.code.context import CodeContext
from lint.finding import Edit


def replace_node(ctx: CodeContext, node: cst.CSTNode, content: str) -> Edit:
    """Replace exactly the text of ``node``."""
    line, column, end_line, end_column = ctx.range_of(node)
    return Edit(line, column, end_line, end_column, content)


def remove_small_statement(ctx: CodeContext, statement: cst.BaseSmallStatement) -> Edit | None:
    """Remove one small statement (``x()`` in ``x(); y()`` or on its own line).

    A statement that is the only one of its block becomes ``pass``; the comments above
    it stay. Returns None when the statement is not in a simple statement line or suite.
    """
    holder = ctx.index.parent.get(statement)
    if not isinstance(holder, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        return None
    siblings = list(holder.body)
    position = next(i for i, s in enumerate(siblings) if s is statement)
    if len(siblings) > 1:
        if position + 1 < len(siblings):
            start = ctx.range_of(statement)[:2]
            end = ctx.range_of(siblings[position + 1])[:2]
        else:
            start = ctx.range_of(siblings[position - 1])[2:]
            end = ctx.range_of(statement)[2:]
        return Edit(start[0], start[1], end[0], end[1], "")
    block = ctx.index.parent.get(holder)
    alone = isinstance(holder, cst.SimpleStatementSuite) or (
        isinstance(block, (cst.IndentedBlock, cst.Module)) and len(block.body) == 1
    )
    if alone:
        return replace_node(ctx, statement, "pass")
    line, _, end_line, _ = ctx.range_of(holder)
    last = ctx.source.lines[end_line - 1]
    if end_line < len(ctx.source.lines) or last.endswith(("\n", "\r")):
        return Edit(line, 1, end_line + 1, 1, "")  # the line end goes too
    return Edit(line, 1, end_line, len(last) + 1, "")
