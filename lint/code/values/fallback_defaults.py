"""The default a run-time value falls back to, when the module declares one: the
default of a function parameter, of an ``argparse`` option, or of a config class field
(``num_workers: int = 0``). For questions such as "can ``num_workers`` be 0 when the
user does not say otherwise?"; nothing is executed.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ddplint.code.syntax.constants import UNKNOWN, constant_value, literal_value, single_assignment
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import dotted_name


@dataclass(frozen=True)
class FallbackDefault:
    """A declared default (``value``) and what declares it, for messages (``where``)."""

    value: object
    where: str


def fallback_default(index: ModuleIndex, expr: cst.BaseExpression) -> FallbackDefault | None:
    """The default ``expr`` takes when the user passes nothing: ``n`` a parameter of the
    enclosing function with a default (and never rebound), ``args.n`` / ``cfg.n`` /
    ``self.args.n`` an argparse option or class field of this module named ``n``,
    ``self.n`` set in ``__init__`` from a parameter with a default. None when no default
    is declared, or the module declares different ones."""
    if isinstance(expr, cst.Name):
        parameter = _parameter_default(index, expr)
        if parameter is not None:
            return parameter
        bound = single_assignment(index, expr, expr.value)
        if isinstance(bound, cst.Attribute):
            return _attribute_default(index, bound)
        return None
    if isinstance(expr, cst.Attribute):
        return _attribute_default(index, expr)
    return None


def _parameter_default(index: ModuleIndex, name: cst.Name) -> FallbackDefault | None:
    function = index.enclosing_function(name)
    if function is None:
        return None
    for param in (*function.params.params, *function.params.kwonly_params):
        if param.name.value == name.value and param.default is not None:
            if _rebound(index, function, name.value):
                return None
            value = literal_value(param.default)
            if value is UNKNOWN:
                return None
            return FallbackDefault(
                value, f"the parameter `{name.value}` of `{function.name.value}()` defaults to"
            )
    return None


def _rebound(index: ModuleIndex, function: cst.FunctionDef, name: str) -> bool:
    for node in index.walk_within(function.body):
        targets: list[cst.BaseExpression] = []
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For)):
            targets = [node.target]
        if any(isinstance(t, cst.Name) and t.value == name for t in targets):
            return True
    return False


def _attribute_default(index: ModuleIndex, expr: cst.Attribute) -> FallbackDefault | None:
    field = expr.attr.value
    receiver = dotted_name(expr.value)
    found: list[FallbackDefault] = []
    if receiver == "self":
        found.extend(_init_parameter_defaults(index, expr, field))
    found.extend(_option_defaults(index, field))
    found.extend(_field_defaults(index, field))
    values = {repr(f.value) for f in found}
    return found[0] if len(values) == 1 else None


def _init_parameter_defaults(
    index: ModuleIndex, site: cst.Attribute, field: str
) -> list[FallbackDefault]:
    """``self.n = n`` in the enclosing class's ``__init__`` where ``n`` has a default."""
    function = index.enclosing_function(site)
    owner = index.enclosing_class(function) if function is not None else None
    if owner is None or not isinstance(owner.body, cst.IndentedBlock):
        return []
    found = []
    for statement in owner.body.body:
        if not (isinstance(statement, cst.FunctionDef) and statement.name.value == "__init__"):
            continue
        for node in index.walk_within(statement.body):
            if (
                isinstance(node, cst.Assign)
                and len(node.targets) == 1
                and dotted_name(node.targets[0].target) == f"self.{field}"
                and isinstance(node.value, cst.Name)
            ):
                default = _parameter_default(index, node.value)
                if default is not None:
                    found.append(default)
    return found


#: The default argparse gives an option of these actions when it names none.
_IMPLIED_DEFAULTS: dict[object, bool] = {"store_true": False, "store_false": True}


def _option_defaults(index: ModuleIndex, field: str) -> list[FallbackDefault]:
    """``parser.add_argument("--num-workers", default=0)`` (``dest`` taken into account;
    ``action="store_true"`` defaults to False)."""
    found = []
    for call in index.nodes(cst.Call):
        if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "add_argument"):
            continue
        flags = [
            value
            for arg in call.args
            if arg.keyword is None and isinstance(value := literal_value(arg.value), str)
        ]
        keywords = {arg.keyword.value: arg.value for arg in call.args if arg.keyword is not None}
        dest = literal_value(keywords["dest"]) if "dest" in keywords else None
        if not isinstance(dest, str):
            long_flags = [f for f in flags if f.startswith("--")] or flags
            dest = long_flags[0].lstrip("-").replace("-", "_") if long_flags else None
        if dest != field:
            continue
        if "default" in keywords:
            value = constant_value(index, keywords["default"])
        elif "action" in keywords and literal_value(keywords["action"]) in _IMPLIED_DEFAULTS:
            value = _IMPLIED_DEFAULTS[str(literal_value(keywords["action"]))]
        else:
            continue
        if value is not UNKNOWN:
            flag = flags[0] if flags else dest
            found.append(FallbackDefault(value, f"the option `{flag}` defaults to"))
    return found


def _field_defaults(index: ModuleIndex, field: str) -> list[FallbackDefault]:
    """``num_workers: int = 0`` in the body of a class of this module."""
    found = []
    for cls in index.nodes(cst.ClassDef):
        if not isinstance(cls.body, cst.IndentedBlock):
            continue
        for statement in cls.body.body:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                if (
                    isinstance(small, cst.AnnAssign)
                    and isinstance(small.target, cst.Name)
                    and small.target.value == field
                    and small.value is not None
                ):
                    value = literal_value(small.value)
                    if value is not UNKNOWN:
                        found.append(
                            FallbackDefault(
                                value, f"the field `{cls.name.value}.{field}` defaults to"
                            )
                        )
    return found
