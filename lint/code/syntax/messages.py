"""Source snippets for finding messages: one line, whitespace collapsed, shortened."""

from __future__ import annotations

import libcst as cst

from ddplint.code.context import CodeContext
from ddplint.code.syntax.ast_snippets import MAX_SNIPPET, SUMMARY_SNIPPET, one_line

__all__ = ["MAX_SNIPPET", "SUMMARY_SNIPPET", "except_clause", "snippet"]


def snippet(ctx: CodeContext, node: cst.CSTNode, limit: int = MAX_SNIPPET) -> str:
    """``node``'s source on one line; long text is cut with an ellipsis."""
    return one_line(ctx.node_text(node), limit)


def except_clause(ctx: CodeContext, handler: cst.ExceptHandler | cst.ExceptStarHandler) -> str:
    """``except RuntimeError``, ``except (A, B)``, ``except``."""
    caught = handler.type
    if caught is None:
        return "except"
    text = snippet(ctx, caught)
    if isinstance(caught, cst.Tuple) and not text.startswith("("):
        text = f"({text})"
    return f"except {text}"
