"""Sequences padded to a multiple of the number of ranks: every rank's strided share of
one (``pieces[rank::n]``) is equally long.

The form: ``m = k * n``; ``pieces = pad(t, [..., -len % m]).chunk(m)``; each rank walks
``pieces[rank::n]``. Padding to a multiple of ``m`` makes ``chunk(m)`` give exactly
``m`` pieces of one shape, and ``m`` a multiple of ``n`` gives each rank ``m / n`` of
them: a loop over the share takes the same number of trips on every rank. Without the
padding ``chunk`` may give fewer pieces, and the last ranks a trip fewer.
"""

from __future__ import annotations

import ast

from ddplint.analysis.control_flow import single_bindings
from ddplint.analysis.names import Names

#: Calls that pad a tensor (the amounts are their second argument, or ``pad=``).
PADDERS = frozenset({"torch.nn.functional.pad"})
#: Functions that cut a tensor into a given number of pieces (tensor first).
CHUNKERS = frozenset({"torch.chunk", "torch.tensor_split"})
#: The same as tensor methods.
_CHUNK_METHODS = frozenset({"chunk", "tensor_split"})


def even_strides(
    scope: ast.AST, names: Names, single: dict[str, ast.expr] | None = None
) -> dict[str, frozenset[str]]:
    """Name -> the strides (``ast.dump`` of each) by which every rank's share of the
    pieces the name holds is equally long: the name is bound once in the scope, to a
    tensor padded to a multiple of ``m`` cut into ``m`` pieces, and each stride is a
    factor of ``m``. ``single``: the scope's ``single_bindings``, where the caller has them."""
    if single is None:
        single = single_bindings(scope)
    found: dict[str, frozenset[str]] = {}
    for name, value in single.items():
        cut = _pieces(value, names)
        if cut is None:
            continue
        tensor, count = cut
        if _padded_to(_bound_value(tensor, single), count, names):
            found[name] = frozenset(_factors(count, single, set()))
    return found


def _bound_value(expression: ast.expr, single: dict[str, ast.expr]) -> ast.expr:
    if isinstance(expression, ast.Name) and expression.id in single:
        return single[expression.id]
    return expression


def _pieces(value: ast.expr, names: Names) -> tuple[ast.expr, ast.expr] | None:
    """(the tensor, the number of pieces) of ``t.chunk(m)`` / ``torch.chunk(t, m)``."""
    if not isinstance(value, ast.Call) or any(k.arg not in (None, "dim") for k in value.keywords):
        return None
    if names.resolve(value.func) in CHUNKERS and len(value.args) >= 2:
        return value.args[0], value.args[1]
    if (
        isinstance(value.func, ast.Attribute)
        and value.func.attr in _CHUNK_METHODS
        and len(value.args) == 1
    ):
        return value.func.value, value.args[0]
    return None


def _padded_to(tensor: ast.expr, count: ast.expr, names: Names) -> bool:
    """Whether ``tensor`` is padded by an amount taken modulo ``count`` (``-n % m``,
    ``(m - n % m) % m``): its length is then a multiple of ``count``."""
    if not isinstance(tensor, ast.Call) or names.resolve(tensor.func) not in PADDERS:
        return False
    amounts = tensor.args[1] if len(tensor.args) > 1 else None
    amounts = amounts or next((k.value for k in tensor.keywords if k.arg == "pad"), None)
    if amounts is None:
        return False
    wanted = ast.dump(count)
    return any(
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Mod)
        and ast.dump(node.right) == wanted
        for node in ast.walk(amounts)
    )


def _factors(expression: ast.expr, single: dict[str, ast.expr], seen: set[str]) -> set[str]:
    """``ast.dump`` of the expressions ``expression`` is a multiple of: itself, and the
    factors of a product (through names bound once)."""
    found = {ast.dump(expression)}
    if isinstance(expression, ast.Name) and expression.id in single and expression.id not in seen:
        seen.add(expression.id)
        found |= _factors(single[expression.id], single, seen)
    if isinstance(expression, ast.BinOp) and isinstance(expression.op, ast.Mult):
        found |= _factors(expression.left, single, seen)
        found |= _factors(expression.right, single, seen)
    return found
