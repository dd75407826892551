"""The value an argument has as the program is written or configured: a constant where
it is written (a literal or a name bound to one), else the default a parameter, an
argparse option or a config field declares for it, else what the YAML config the module
is bound to sets, with a clause that cites where it comes from."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ddplint.analysis.literal_values import UNKNOWN
from ddplint.code.edits.ast_edits import ast_node_text

if TYPE_CHECKING:
    from ddplint.code.context import CodeContext


@dataclass(frozen=True)
class DeclaredValue:
    """``value`` and where it is declared (empty: written in place)."""

    value: object
    cited: str


def declared_value(ctx: CodeContext, expression: ast.expr, scope: ast.AST) -> DeclaredValue | None:
    """The value ``expression`` holds where it is written, by its declared default or
    by the module's YAML config; None when none is in sight."""
    analysis = ctx.analysis
    constant = analysis.constants.value(expression, scope)
    if constant is not UNKNOWN:
        return DeclaredValue(constant, "")
    default = analysis.fallback_defaults.of(expression, scope)
    if default is not None:
        return DeclaredValue(default.value, f"{default.where} {default.value!r}")
    found = ctx.config_reads.value_at(ast_node_text(ctx, expression), expression.lineno)
    if found is None:
        return None
    spelled = str(found.value).lower() if isinstance(found.value, bool) else repr(found.value)
    return DeclaredValue(
        found.value, f"the config sets `{found.key}` to {spelled} at `{found.where}`"
    )
