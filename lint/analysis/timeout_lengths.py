"""How long a ``timedelta(...)`` timeout is, on CPython's ``ast``: its parts read as
constants (``constants``: literals, names bound once) or, where a part is a run-time
value, as the declared default of the parameter, option or config field it is read
from (``fallback_defaults``). Nothing is executed.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ddplint.analysis.fallback_defaults import FallbackDefault
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.literal_values import UNKNOWN

_TIMEDELTAS = frozenset({"datetime.timedelta"})
_SECONDS_PER_UNIT = {
    "weeks": 604800.0,
    "days": 86400.0,
    "hours": 3600.0,
    "minutes": 60.0,
    "seconds": 1.0,
    "milliseconds": 1e-3,
    "microseconds": 1e-6,
}
#: ``timedelta``'s positional parameters, in order.
_TIMEDELTA_POSITIONS = (
    "days",
    "seconds",
    "microseconds",
    "milliseconds",
    "minutes",
    "hours",
    "weeks",
)


@dataclass(frozen=True)
class TimeoutLength:
    """How long a timeout is; ``default`` says where a part came from when it is a
    parameter's, option's or field's declared default."""

    seconds: float
    default: FallbackDefault | None = None


def number_or_default(
    analysis: ModuleAnalysis, expression: ast.expr, scope: ast.AST
) -> tuple[float, FallbackDefault | None] | None:
    """A number ``expression`` comes to: its constant value, else its declared default
    (and what declares it); None when neither is a number."""
    value = analysis.constants.value(expression, scope)
    default = None
    if value is UNKNOWN:
        default = analysis.fallback_defaults.of(expression, scope)
        value = default.value if default is not None else UNKNOWN
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value), default


def timedelta_length(
    analysis: ModuleAnalysis, expression: ast.expr, scope: ast.AST
) -> TimeoutLength | None:
    """The length of ``timedelta(minutes=5)`` read in ``scope`` (or of a name bound once
    to one, or with parts that are declared defaults: ``timedelta(seconds=args.timeout)``
    with the option's ``default=60``); None when any part is unknown."""
    if isinstance(expression, ast.Name):
        constants = analysis.constants
        bound = constants.single_assignment(constants.owner_of(scope), expression.id)
        if bound is None:
            return None
        expression, scope = bound
    if (
        not isinstance(expression, ast.Call)
        or analysis.names.resolve(expression.func) not in _TIMEDELTAS
    ):
        return None
    parts: list[tuple[str | None, ast.expr]] = [(None, a) for a in expression.args]
    if any(keyword.arg is None for keyword in expression.keywords):
        return None  # ``**parts``: unknown
    parts += [(k.arg, k.value) for k in expression.keywords]
    seconds = 0.0
    default: FallbackDefault | None = None
    for position, (unit, value) in enumerate(parts):
        if isinstance(value, ast.Starred) or (
            unit is None and position >= len(_TIMEDELTA_POSITIONS)
        ):
            return None
        unit = unit or _TIMEDELTA_POSITIONS[position]
        found = number_or_default(analysis, value, scope)
        if found is None or unit not in _SECONDS_PER_UNIT:
            return None
        seconds += found[0] * _SECONDS_PER_UNIT[unit]
        default = default or found[1]
    return TimeoutLength(seconds, default)


def describe_seconds(seconds: float) -> str:
    """``90 s``, ``5 min``, ``2 h``: a length for messages."""
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g} h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"
