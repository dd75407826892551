"""Text edits on a call's arguments: drop one, add a keyword (``edits.replace_node`` on
``arg.value`` changes a value)."""

from __future__ import annotations

import libcst as cst

from ddplint.code.context import CodeContext
from ddplint.finding import Edit


def _start(ctx: CodeContext, node: cst.CSTNode) -> tuple[int, int]:
    line, column, _, _ = ctx.range_of(node)
    return line, column


def _end(ctx: CodeContext, node: cst.CSTNode) -> tuple[int, int]:
    _, _, end_line, end_column = ctx.range_of(node)
    return end_line, end_column


def _edit(start: tuple[int, int], end: tuple[int, int], content: str) -> Edit:
    return Edit(start[0], start[1], end[0], end[1], content)


def remove_argument(ctx: CodeContext, call: cst.Call, arg: cst.Arg) -> Edit:
    """Remove ``arg`` from ``call`` with its separating comma."""
    args = list(call.args)
    position = next(i for i, a in enumerate(args) if a is arg)
    if len(args) == 1:
        return _edit(_after_open_paren(ctx, call), _before_close_paren(ctx, call), "")
    if position + 1 < len(args):
        return _edit(_start(ctx, arg), _start(ctx, args[position + 1]), "")
    return _edit(_end(ctx, args[position - 1].value), _end(ctx, arg.value), "")


def add_keyword_argument(ctx: CodeContext, call: cst.Call, text: str) -> Edit:
    """Append ``text`` (``name=value``) to the arguments of ``call``."""
    if call.args:
        where = _end(ctx, call.args[-1].value)
        return _edit(where, where, f", {text}")
    where = _before_close_paren(ctx, call)
    return _edit(where, where, text)


def _after_open_paren(ctx: CodeContext, call: cst.Call) -> tuple[int, int]:
    """The position just after the ``(`` that opens the arguments."""
    line, column = _end(ctx, call.func)
    text = ctx.source.text
    offset = text.index("(", ctx.source.offset(line, column)) + 1
    while ctx.source.line_starts[line] <= offset:
        line += 1
    return line, offset - ctx.source.line_starts[line - 1] + 1


def _before_close_paren(ctx: CodeContext, call: cst.Call) -> tuple[int, int]:
    end_line, end_column = _end(ctx, call)
    return end_line, end_column - 1
