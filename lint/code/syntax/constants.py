"""Constant values of expressions: literals, simple arithmetic on them, and names bound
once to such a value in the same function or at module level (``TIMEOUT = 30 * 60``).

Nothing is executed: the evaluator knows numbers, strings, ``True``/``False``/``None``,
unary signs and ``+ - * / //`` on numbers, and gives up on anything else.
"""

from __future__ import annotations

import libcst as cst

from ddplint.analysis.literal_values import UNKNOWN as CORE_UNKNOWN
from ddplint.code.syntax.module_index import ModuleIndex

#: The evaluator's answer for "not a constant it can see" (the core's, so that answers of
#: both layers compare alike).
UNKNOWN = CORE_UNKNOWN

_NAMED_CONSTANTS: dict[str, object] = {"True": True, "False": False, "None": None}
_MAX_NAME_HOPS = 4


def literal_value(expr: cst.BaseExpression) -> object:
    """The value of a literal expression, or ``UNKNOWN``. Names are not followed."""
    return _evaluate(expr, None, None, 0)


def constant_value(index: ModuleIndex, expr: cst.BaseExpression) -> object:
    """The value of ``expr``, following names bound exactly once in its scope; or
    ``UNKNOWN``."""
    return _evaluate(expr, index, expr, 0)


def _evaluate(
    expr: cst.BaseExpression, index: ModuleIndex | None, site: cst.CSTNode | None, hops: int
) -> object:
    if isinstance(expr, cst.Integer):
        return int(expr.value, 0)
    if isinstance(expr, cst.Float):
        return float(expr.value.replace("_", ""))
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
        value = expr.evaluated_value
        return value if isinstance(value, str) else UNKNOWN
    if isinstance(expr, cst.Name):
        if expr.value in _NAMED_CONSTANTS:
            return _NAMED_CONSTANTS[expr.value]
        if index is None or site is None or hops >= _MAX_NAME_HOPS:
            return UNKNOWN
        bound = single_assignment(index, site, expr.value)
        if bound is None:
            return UNKNOWN
        return _evaluate(bound, index, bound, hops + 1)
    if isinstance(expr, cst.UnaryOperation):
        operand = _evaluate(expr.expression, index, site, hops)
        if not _is_number(operand):
            return UNKNOWN
        if isinstance(expr.operator, cst.Minus):
            return -operand  # type: ignore[operator]
        if isinstance(expr.operator, cst.Plus):
            return operand
        return UNKNOWN
    if isinstance(expr, cst.BinaryOperation):
        left = _evaluate(expr.left, index, site, hops)
        right = _evaluate(expr.right, index, site, hops)
        if not (_is_number(left) and _is_number(right)):
            return UNKNOWN
        return _arithmetic(expr.operator, left, right)  # type: ignore[arg-type]
    return UNKNOWN


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _arithmetic(operator: cst.BaseBinaryOp, left: float, right: float) -> object:
    if isinstance(operator, cst.Add):
        return left + right
    if isinstance(operator, cst.Subtract):
        return left - right
    if isinstance(operator, cst.Multiply):
        return left * right
    if isinstance(operator, cst.Divide) and right != 0:
        return left / right
    if isinstance(operator, cst.FloorDivide) and right != 0:
        return left // right
    return UNKNOWN


def single_assignment(
    index: ModuleIndex, site: cst.CSTNode, name: str
) -> cst.BaseExpression | None:
    """The value assigned to ``name`` when the scope of ``site`` (its function, else the
    module) binds it exactly once, by a plain ``name = value``; else None.

    A name the function does not bind at all is looked up at module level.
    """
    function = index.enclosing_function(site)
    if function is not None:
        if any(p.name.value == name for p in parameters(function)):
            return None
        values = _bindings(index, function, name)
        if values is None or len(values) > 1:
            return None
        if values:
            return values[0]
    values = _bindings(index, index.module, name)
    return values[0] if values is not None and len(values) == 1 else None


def parameters(function: cst.FunctionDef) -> list[cst.Param]:
    """Every parameter of ``function``, ``*args`` and ``**kwargs`` included."""
    params = function.params
    star = [params.star_arg] if isinstance(params.star_arg, cst.Param) else []
    kwargs = [params.star_kwarg] if params.star_kwarg is not None else []
    return [*params.posonly_params, *params.params, *star, *params.kwonly_params, *kwargs]


def _bindings(index: ModuleIndex, scope: cst.CSTNode, name: str) -> list[cst.BaseExpression] | None:
    """Values of every ``name = value`` in ``scope`` (nested defs excluded); None when
    ``name`` is also bound another way (augmented assignment, loop target, ...)."""
    values: list[cst.BaseExpression] = []
    for node in index.walk_within(scope):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                if isinstance(target.target, cst.Name) and target.target.value == name:
                    values.append(node.value)
                elif _binds(target.target, name):
                    return None
        elif isinstance(node, cst.AnnAssign) and _binds(node.target, name):
            if node.value is None or not isinstance(node.target, cst.Name):
                return None
            values.append(node.value)
        elif _rebinds(node, name):
            return None
    return values


def _binds(target: cst.CSTNode, name: str) -> bool:
    if isinstance(target, cst.Name):
        return target.value == name
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(_binds(element.value, name) for element in target.elements)
    if isinstance(target, cst.StarredElement):
        return _binds(target.value, name)
    return False


def _rebinds(node: cst.CSTNode, name: str) -> bool:
    """Whether ``node`` binds ``name`` other than by a plain assignment."""
    if isinstance(node, (cst.AugAssign, cst.For, cst.CompFor, cst.NamedExpr)):
        return _binds(node.target, name)
    if isinstance(node, cst.AsName):
        return _binds(node.name, name)
    if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        return node.name.value == name
    return False
