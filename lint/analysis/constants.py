"""Constant values of expressions on CPython's ``ast``: literals, signs and ``+ - * / //``
on numbers, and names bound exactly once, by a plain ``name = value``, in the innermost
function around the read (else at module level: ``TIMEOUT = 30 * 60``).

The ``ast`` counterpart of the LibCST layer's ``code/syntax/constants`` (the same
answers, so a rule ported onto the core reports what it reported before). Not
flow-sensitive: a name bound twice, or bound another way too (a loop, ``+=``, a
parameter, an import alias), has no constant value. Nothing is executed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.literal_values import UNKNOWN
from ddplint.analysis.module_nodes import ModuleNodes

Function = ast.FunctionDef | ast.AsyncFunctionDef
#: Where a name is looked up: a function, else the module.
Owner = Function | ast.Module

_MAX_NAME_HOPS = 4
_NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv)


def literal_value(expression: ast.expr) -> object:
    """The value of a literal expression (names not followed), or ``UNKNOWN``."""
    return _evaluate(expression, None, None, 0)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _evaluate(
    expression: ast.expr, constants: ScopedConstants | None, owner: Owner | None, hops: int
) -> object:
    if isinstance(expression, ast.Constant):
        value = expression.value
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        return UNKNOWN
    if isinstance(expression, ast.Name):
        if constants is None or owner is None or hops >= _MAX_NAME_HOPS:
            return UNKNOWN
        found = constants.single_assignment(owner, expression.id)
        if found is None:
            return UNKNOWN
        bound, bound_in = found
        return _evaluate(bound, constants, bound_in, hops + 1)
    if isinstance(expression, ast.UnaryOp) and isinstance(expression.op, (ast.USub, ast.UAdd)):
        operand = _evaluate(expression.operand, constants, owner, hops)
        if not _is_number(operand):
            return UNKNOWN
        return -operand if isinstance(expression.op, ast.USub) else operand  # type: ignore[operator]
    if isinstance(expression, ast.BinOp) and isinstance(expression.op, _ARITHMETIC):
        left = _evaluate(expression.left, constants, owner, hops)
        right = _evaluate(expression.right, constants, owner, hops)
        if not (_is_number(left) and _is_number(right)):
            return UNKNOWN
        return _arithmetic(expression.op, left, right)  # type: ignore[arg-type]
    return UNKNOWN


def _arithmetic(operator: ast.operator, left: float, right: float) -> object:
    if isinstance(operator, ast.Add):
        return left + right
    if isinstance(operator, ast.Sub):
        return left - right
    if isinstance(operator, ast.Mult):
        return left * right
    if isinstance(operator, ast.Div) and right != 0:
        return left / right
    if isinstance(operator, ast.FloorDiv) and right != 0:
        return left // right
    return UNKNOWN


def scope_nodes(owner: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``owner``'s own code in no particular order: nested functions,
    lambdas and classes are yielded (their name is a binding) but not entered;
    comprehensions are entered. (``control_flow.own_nodes`` leaves nested scopes out.)"""
    pending = list(ast.iter_child_nodes(owner))
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, _NESTED_SCOPES):
            pending.extend(ast.iter_child_nodes(node))


def nodes_within(statements: list[ast.stmt]) -> Iterator[ast.AST]:
    """The statements and every node of their code, nested functions, lambdas and
    classes yielded but not entered."""
    for statement in statements:
        yield statement
        if not isinstance(statement, _NESTED_SCOPES):
            yield from scope_nodes(statement)


def _binds(target: ast.AST, name: str) -> bool:
    if isinstance(target, ast.Name):
        return target.id == name
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_binds(element, name) for element in target.elts)
    if isinstance(target, ast.Starred):
        return _binds(target.value, name)
    return False


def _other_binding(node: ast.AST, name: str) -> bool:
    """Whether ``node`` binds ``name`` other than by a plain assignment: a loop or
    comprehension target, ``+=``, ``:=``, an ``as`` name, a ``def`` or ``class``."""
    if isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor, ast.comprehension, ast.NamedExpr)):
        return _binds(node.target, name)
    if isinstance(node, ast.withitem):
        return node.optional_vars is not None and _binds(node.optional_vars, name)
    if isinstance(node, ast.alias):
        return node.asname == name
    if isinstance(node, ast.ExceptHandler):
        return node.name == name
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == name
    return False


def call_parameters(function: Function) -> list[ast.arg]:
    """The parameters a call fills by position (a method's ``self`` / ``cls`` not
    counted: a first parameter so named without a default, as a plain function's
    ``def register(cls=None)`` is not a method's)."""
    positional = [*function.args.posonlyargs, *function.args.args]
    bound = len(function.args.defaults) < len(positional)
    if positional and positional[0].arg in ("self", "cls") and bound:
        positional = positional[1:]
    return positional


def parameter_names(function: Function) -> set[str]:
    """Every parameter of ``function``, ``*args`` and ``**kwargs`` included."""
    arguments = function.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    return {a.arg for a in every}


class ScopedConstants:
    """Constant values of one module's expressions, each read looked up in its own
    function (``scope`` is the innermost scope that holds the read, as
    ``ModuleNodes.calls_by_scope`` keys calls)."""

    def __init__(self, nodes: ModuleNodes) -> None:
        self._nodes = nodes
        self._assigned: dict[tuple[int, str], list[ast.expr] | None] = {}

    def owner_of(self, scope: ast.AST) -> Owner:
        """The innermost function holding ``scope`` (lambdas, comprehensions and class
        bodies do not count), else the module."""
        current: ast.AST | None = scope
        while current is not None and not isinstance(current, ast.Module):
            if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return current
            current = self._nodes.scope_of.get(current)
        return self._nodes.module

    def value(self, expression: ast.expr, scope: ast.AST) -> object:
        """The value of ``expression`` read in ``scope``, following names bound once;
        or ``UNKNOWN``."""
        return _evaluate(expression, self, self.owner_of(scope), 0)

    def single_assignment(self, owner: Owner, name: str) -> tuple[ast.expr, Owner] | None:
        """The value ``name`` is bound to, and where, when ``owner`` (a function, else
        the module) binds it exactly once by a plain assignment; a name the function
        does not bind at all is looked up at module level."""
        if not isinstance(owner, ast.Module):
            if name in parameter_names(owner):
                return None
            values = self._assignments(owner, name)
            if values is None or len(values) > 1:
                return None
            if values:
                return values[0], owner
        module = self._nodes.module
        values = self._assignments(module, name)
        return (values[0], module) if values is not None and len(values) == 1 else None

    def spread_keywords(self, call: ast.Call, scope: ast.AST) -> dict[str, ast.expr]:
        """The keyword values ``call`` receives through ``**name`` when ``name`` is bound
        once to ``dict(key=...)`` or a display with literal string keys:
        ``common = dict(num_workers=w, persistent_workers=True); DataLoader(ds, **common)``."""
        found: dict[str, ast.expr] = {}
        owner = self.owner_of(scope)
        for keyword in call.keywords:
            if keyword.arg is not None or not isinstance(keyword.value, ast.Name):
                continue
            bound = self.single_assignment(owner, keyword.value.id)
            value = bound[0] if bound is not None else None
            if (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name)
                and value.func.id == "dict"
            ):
                found.update((k.arg, k.value) for k in value.keywords if k.arg is not None)
            elif isinstance(value, ast.Dict):
                for key, item in zip(value.keys, value.values, strict=True):
                    if isinstance(key, ast.Constant) and isinstance(key.value, str):
                        found[key.value] = item
        return found

    def _assignments(self, owner: Owner, name: str) -> list[ast.expr] | None:
        key = (id(owner), name)
        if key not in self._assigned:
            self._assigned[key] = _assignments(owner, name)
        return self._assigned[key]


def _assignments(owner: Owner, name: str) -> list[ast.expr] | None:
    """The values of every ``name = value`` in ``owner``'s own code, in source order;
    None when ``name`` is also bound another way."""
    found: list[tuple[tuple[int, int], ast.expr]] = []
    for node in scope_nodes(owner):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id == name:
                    found.append(((node.lineno, node.col_offset), node.value))
                elif _binds(target, name):
                    return None
        elif isinstance(node, ast.AnnAssign) and _binds(node.target, name):
            if node.value is None or not isinstance(node.target, ast.Name):
                return None
            found.append(((node.lineno, node.col_offset), node.value))
        elif _other_binding(node, name):
            return None
    return [value for _, value in sorted(found, key=lambda pair: pair[0])]


def is_zero(value: object) -> bool:
    """Whether ``value`` is the number 0 (not ``False``)."""
    return value == 0 and not isinstance(value, bool)
