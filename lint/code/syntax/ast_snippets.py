"""Source snippets of ``ast`` nodes for finding messages (the rules that answer on the
analysis core): one line, whitespace collapsed, shortened; no LibCST parse."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ddplint.code.edits.ast_edits import ast_node_text

if TYPE_CHECKING:
    from ddplint.code.context import CodeContext

#: The longest code snippet a finding's short summary quotes.
SUMMARY_SNIPPET = 32
MAX_SNIPPET = 60


def ast_snippet(ctx: CodeContext, node: ast.expr, limit: int = MAX_SNIPPET) -> str:
    """``node``'s source on one line; long text is cut with an ellipsis."""
    return one_line(ast_node_text(ctx, node), limit)


def one_line(text: str, limit: int = MAX_SNIPPET) -> str:
    """``text`` on one line, whitespace collapsed; long text is cut with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def ast_except_clause(ctx: CodeContext, handler: ast.ExceptHandler) -> str:
    """``except RuntimeError``, ``except (A, B)``, ``except``."""
    caught = handler.type
    if caught is None:
        return "except"
    text = ast_snippet(ctx, caught)
    if isinstance(caught, ast.Tuple) and not text.startswith("("):
        text = f"({text})"
    return f"except {text}"
