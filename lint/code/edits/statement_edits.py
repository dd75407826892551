"""Inserting a whole statement line into a block, at the indentation of its neighbour."""

from __future__ import annotations

import libcst as cst

from ddplint.code.context import CodeContext
from ddplint.finding import Edit


def insert_statement_before(ctx: CodeContext, statement: cst.CSTNode, code: str) -> Edit:
    """A new line holding ``code`` just above ``statement`` (a statement that starts its
    own line), indented like it and ended with the file's line end."""
    line = ctx.range_of(statement)[0]
    text = ctx.source.line_text(line)
    indent = text[: len(text) - len(text.lstrip())]
    return Edit(line, 1, line, 1, f"{indent}{code}{ctx.source.newline()}")
