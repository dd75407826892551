"""Source snippets for finding messages: one line, whitespace collapsed, shortened."""

from __future__ import annotations

import libcst as cst

from ddplint.code.context import CodeContext

#: The longest code snippet a finding's short summary quotes.
SUMMARY_SNIPPET = 32
MAX_SNIPPET = 60


def snippet(ctx: CodeContext, node: cst.CSTNode, limit: int = MAX_SNIPPET) -> str:
    """``node``'s source on one line; long text is cut with an ellipsis."""
    text = " ".join(ctx.node_text(node).split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def except_clause(ctx: CodeContext, handler: cst.ExceptHandler | cst.ExceptStarHandler) -> str:
    """``except RuntimeError``, ``except (A, B)``, ``except``."""
    caught = handler.type
    if caught is None:
        return "except"
    text = snippet(ctx, caught)
    if isinstance(caught, cst.Tuple) and not text.startswith("("):
        text = f"({text})"
    return f"except {text}"
