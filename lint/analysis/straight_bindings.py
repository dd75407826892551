"""The value a name holds at a point of its function when plain statements decide it:
the last ``name = value`` among the function's top-level statements before the one that
holds the point, a re-bound name being its new value (``model = Net(); model =
Other()``). Unknown (None) when a compound statement before the point, or the
statement that holds it, binds the name too: which binding reaches then depends on
the way taken.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from ddplint.analysis.control_flow import holds_node
from ddplint.analysis.names import dotted_name

Function = ast.FunctionDef | ast.AsyncFunctionDef


def last_straight_binding(
    function: Function,
    site: ast.AST,
    name: str,
    forgets: Callable[[ast.stmt], bool] = lambda statement: False,
) -> ast.expr | None:
    """The value of the last ``name = value`` (``name`` a plain name or a dotted one,
    ``self.x``) before ``site`` among the top-level statements of ``function``; None
    when none is, or the name is bound otherwise before ``site`` or around it, or a
    statement after the binding ``forgets`` it (may bind it out of sight)."""
    found: ast.expr | None = None
    for statement in function.body:
        if holds_node(statement, site):
            # ``x = f(x)``: the value is read before the statement binds ``x``.
            value = getattr(statement, "value", None)
            held = value if value is not None and holds_node(value, site) else statement
            return None if _binds(held, name) else found
        if isinstance(statement, ast.Assign) and _sole_target(statement) == name:
            found = statement.value
            continue
        if _binds(statement, name):
            return None
        if forgets(statement):
            found = None
    return None


def _sole_target(assignment: ast.Assign) -> str | None:
    """The dotted name ``a = ...`` / ``self.a = ...`` binds alone (None otherwise)."""
    return dotted_name(assignment.targets[0]) if len(assignment.targets) == 1 else None


def _binds(statement: ast.AST, name: str) -> bool:
    return any(
        isinstance(node, (ast.Name, ast.Attribute))
        and isinstance(node.ctx, ast.Store)
        and dotted_name(node) == name
        for node in ast.walk(statement)
    )
