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
        if _holds(statement, site):
            # ``x = f(x)``: the value is read before the statement binds ``x``.
            value = getattr(statement, "value", None)
            held = value if value is not None and _holds(value, site) else statement
            return None if _binds(held, name) else found
        if isinstance(statement, ast.Assign) and [_spelled(t) for t in statement.targets] == [name]:
            found = statement.value
            continue
        if _binds(statement, name):
            return None
        if forgets(statement):
            found = None
    return None


def _holds(node: ast.AST, site: ast.AST) -> bool:
    return any(inner is site for inner in ast.walk(node))


def _binds(statement: ast.AST, name: str) -> bool:
    return any(
        isinstance(node, (ast.Name, ast.Attribute))
        and isinstance(node.ctx, ast.Store)
        and _spelled(node) == name
        for node in ast.walk(statement)
    )


def _spelled(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        owner = _spelled(node.value)
        return f"{owner}.{node.attr}" if owner is not None else None
    return None
