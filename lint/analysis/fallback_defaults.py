"""The default a run-time value falls back to when the module declares one, on CPython's
``ast``: the default of a function parameter, of an ``argparse`` option, or of a config
class field (``num_workers: int = 0``). For questions such as "can ``num_workers`` be 0
when the user does not say otherwise?"; nothing is executed.

The ``ast`` counterpart of the LibCST layer's ``code/values/fallback_defaults`` (the same
answers and wording).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cached_property

from ddplint.analysis.constants import (
    Function,
    Owner,
    ScopedConstants,
    literal_value,
    scope_nodes,
)
from ddplint.analysis.literal_values import UNKNOWN
from ddplint.analysis.module_nodes import ModuleNodes
from ddplint.analysis.names import dotted_name

#: The default argparse gives an option of these actions when it names none.
_IMPLIED_DEFAULTS: dict[object, bool] = {"store_true": False, "store_false": True}


@dataclass(frozen=True)
class FallbackDefault:
    """A declared default (``value``) and what declares it, for messages (``where``)."""

    value: object
    where: str


class FallbackDefaults:
    """The declared defaults of one module's values."""

    def __init__(self, nodes: ModuleNodes, constants: ScopedConstants) -> None:
        self._nodes = nodes
        self._constants = constants

    def of(self, expression: ast.expr, scope: ast.AST) -> FallbackDefault | None:
        """The default ``expression`` (read in ``scope``) takes when the user passes
        nothing: ``n`` a parameter of the enclosing function with a default (and never
        rebound), ``args.n`` / ``cfg.n`` / ``self.args.n`` an argparse option or class
        field of this module named ``n``, ``self.n`` set in ``__init__`` from a
        parameter with a default. None when no default is declared, or the module
        declares different ones."""
        owner = self._constants.owner_of(scope)
        if isinstance(expression, ast.Name):
            parameter = _parameter_default(owner, expression.id)
            if parameter is not None:
                return parameter
            found = self._constants.single_assignment(owner, expression.id)
            if found is not None and isinstance(found[0], ast.Attribute):
                return self._attribute_default(found[0], found[1])
            return None
        if isinstance(expression, ast.Attribute):
            return self._attribute_default(expression, owner)
        return None

    def _attribute_default(self, expression: ast.Attribute, owner: Owner) -> FallbackDefault | None:
        field = expression.attr
        found: list[FallbackDefault] = []
        if dotted_name(expression.value) == "self":
            found.extend(self._init_parameter_defaults(owner, field))
        found.extend(self._option_defaults.get(field, ()))
        found.extend(self._field_defaults.get(field, ()))
        values = {repr(f.value) for f in found}
        return found[0] if len(values) == 1 else None

    def _init_parameter_defaults(self, owner: Owner, field: str) -> list[FallbackDefault]:
        """``self.n = n`` in the ``__init__`` of the class whose body defines ``owner``,
        where ``n`` has a default."""
        if isinstance(owner, ast.Module):
            return []
        cls = self._nodes.scope_of.get(owner)
        if not isinstance(cls, ast.ClassDef):
            return []
        found = []
        for statement in cls.body:
            if not (
                isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))
                and statement.name == "__init__"
            ):
                continue
            for node in scope_nodes(statement):
                if (
                    isinstance(node, ast.Assign)
                    and len(node.targets) == 1
                    and dotted_name(node.targets[0]) == f"self.{field}"
                    and isinstance(node.value, ast.Name)
                ):
                    default = _parameter_default(statement, node.value.id)
                    if default is not None:
                        found.append(default)
        return found

    @cached_property
    def _option_defaults(self) -> dict[str, list[FallbackDefault]]:
        """``parser.add_argument("--num-workers", default=0)`` by destination (``dest``
        taken into account; ``action="store_true"`` defaults to False)."""
        found: dict[str, list[FallbackDefault]] = {}
        for scope, calls in self._nodes.calls_by_scope.items():
            for call in calls:
                if isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument":
                    option = self._option_default(call, scope)
                    if option is not None:
                        found.setdefault(option[0], []).append(option[1])
        return found

    def _option_default(self, call: ast.Call, scope: ast.AST) -> tuple[str, FallbackDefault] | None:
        flags = [
            value
            for argument in call.args
            if not isinstance(argument, ast.Starred)
            and isinstance(value := literal_value(argument), str)
        ]
        keywords = {k.arg: k.value for k in call.keywords if k.arg is not None}
        dest = literal_value(keywords["dest"]) if "dest" in keywords else None
        if not isinstance(dest, str):
            long_flags = [f for f in flags if f.startswith("--")] or flags
            dest = long_flags[0].lstrip("-").replace("-", "_") if long_flags else None
        if dest is None:
            return None
        if "default" in keywords:
            value = self._constants.value(keywords["default"], scope)
        elif "action" in keywords and literal_value(keywords["action"]) in _IMPLIED_DEFAULTS:
            value = _IMPLIED_DEFAULTS[str(literal_value(keywords["action"]))]
        else:
            return None
        if value is UNKNOWN:
            return None
        flag = flags[0] if flags else dest
        return dest, FallbackDefault(value, f"the option `{flag}` defaults to")

    @cached_property
    def _field_defaults(self) -> dict[str, list[FallbackDefault]]:
        """``num_workers: int = 0`` in the body of a class of this module, by field."""
        found: dict[str, list[FallbackDefault]] = {}
        for cls in self._nodes.of_type(ast.ClassDef):
            for statement in cls.body:
                if (
                    isinstance(statement, ast.AnnAssign)
                    and isinstance(statement.target, ast.Name)
                    and statement.value is not None
                ):
                    value = literal_value(statement.value)
                    if value is not UNKNOWN:
                        field = statement.target.id
                        where = f"the field `{cls.name}.{field}` defaults to"
                        found.setdefault(field, []).append(FallbackDefault(value, where))
        return found


def _parameter_default(owner: Owner, name: str) -> FallbackDefault | None:
    """The literal default of the parameter ``name`` of ``owner`` (a plain or
    keyword-only parameter, never bound again in the function)."""
    if isinstance(owner, ast.Module):
        return None
    default = _declared_default(owner, name)
    if default is None or _rebound(owner, name):
        return None
    value = literal_value(default)
    if value is UNKNOWN:
        return None
    return FallbackDefault(value, f"the parameter `{name}` of `{owner.name}()` defaults to")


def _declared_default(function: Function, name: str) -> ast.expr | None:
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    first_default = len(positional) - len(arguments.defaults)
    for number, parameter in enumerate(arguments.args, start=len(arguments.posonlyargs)):
        if parameter.arg == name and number >= first_default:
            return arguments.defaults[number - first_default]
    for parameter, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
        if parameter.arg == name:
            return default
    return None


def _rebound(function: Function, name: str) -> bool:
    for node in scope_nodes(function):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return True
    return False
