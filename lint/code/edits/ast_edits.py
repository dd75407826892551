"""Text edits for fixes computed from CPython ``ast`` positions: a rule that answers on
the analysis core offers a fix without a LibCST parse of the file."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ddplint.finding import Edit

if TYPE_CHECKING:
    from ddplint.code.context import CodeContext


def replace_ast_node(ctx: CodeContext, node: ast.expr, content: str) -> Edit:
    """Replace exactly the text of an expression ``node`` (its ``ast`` span, in the
    character columns edits count)."""
    line, column, end_line, end_column = ctx.ast_range(node)
    return Edit(line, column, end_line, end_column, content)


def ast_node_text(ctx: CodeContext, node: ast.expr) -> str:
    """The source text of an expression ``node``, as written."""
    return ast.get_source_segment(ctx.source.text, node) or ""
