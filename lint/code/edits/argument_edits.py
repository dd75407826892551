"""Text edits on a call's arguments: add a keyword (``edits.replace_node`` on
``arg.value`` changes a value; ``ast_edits.remove_ast_argument`` drops one)."""

from __future__ import annotations

import libcst as cst

from ddplint.code.context import CodeContext
from ddplint.finding import Edit


def _end(ctx: CodeContext, node: cst.CSTNode) -> tuple[int, int]:
    _, _, end_line, end_column = ctx.range_of(node)
    return end_line, end_column


def _edit(start: tuple[int, int], end: tuple[int, int], content: str) -> Edit:
    return Edit(start[0], start[1], end[0], end[1], content)


def add_keyword_argument(ctx: CodeContext, call: cst.Call, text: str) -> Edit:
    """Append ``text`` (``name=value``) to the arguments of ``call``."""
    if call.args:
        where = _end(ctx, call.args[-1].value)
        return _edit(where, where, f", {text}")
    where = _before_close_paren(ctx, call)
    return _edit(where, where, text)


def _before_close_paren(ctx: CodeContext, call: cst.Call) -> tuple[int, int]:
    end_line, end_column = _end(ctx, call)
    return end_line, end_column - 1
