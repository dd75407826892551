"""Calls that take a process-group ``timeout`` asked of LibCST nodes (the table is the
core's, ``analysis/timeouts``), and how long a ``timedelta(...)`` timeout is."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ddplint.analysis.timeouts import TimeoutParameter, timeout_parameter
from ddplint.code.syntax.call_args import argument
from ddplint.code.syntax.constants import UNKNOWN, constant_value, single_assignment
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import ImportTable
from ddplint.code.values.fallback_defaults import FallbackDefault, fallback_default


def timeout_argument(
    names: ImportTable, call: cst.Call
) -> tuple[TimeoutParameter, cst.Arg | None] | None:
    """For a known timeout-taking call: its parameter and the argument passed (None when
    the call leaves the default); ``analysis.timeouts.timeout_argument`` on ``ast``."""
    parameter = timeout_parameter(names.qualified_name(call.func))
    if parameter is None:
        return None
    return parameter, argument(call, "timeout", parameter.position)


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
    """How long a ``timedelta(...)`` timeout is; ``default`` says where a part came from
    when it is a parameter's, option's or field's declared default."""

    seconds: float
    default: FallbackDefault | None = None


def timedelta_length(
    index: ModuleIndex, names: ImportTable, expr: cst.BaseExpression
) -> TimeoutLength | None:
    """The length of ``timedelta(minutes=5)`` (or a name bound once to one, or parts
    that are declared defaults: ``timedelta(seconds=args.timeout)`` with the option's
    ``default=60``); None when any part is unknown."""
    if isinstance(expr, cst.Name):
        bound = single_assignment(index, expr, expr.value)
        if bound is None:
            return None
        expr = bound
    if not isinstance(expr, cst.Call) or names.qualified_name(expr.func) not in _TIMEDELTAS:
        return None
    seconds = 0.0
    default: FallbackDefault | None = None
    for position, arg in enumerate(expr.args):
        unit = arg.keyword.value if arg.keyword is not None else None
        if arg.star or (unit is None and position >= len(_TIMEDELTA_POSITIONS)):
            return None
        unit = unit or _TIMEDELTA_POSITIONS[position]
        value = constant_value(index, arg.value)
        if value is UNKNOWN:
            default = fallback_default(index, arg.value)
            value = default.value if default is not None else UNKNOWN
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        if unit not in _SECONDS_PER_UNIT:
            return None
        seconds += value * _SECONDS_PER_UNIT[unit]
    return TimeoutLength(seconds, default)


def describe_seconds(seconds: float) -> str:
    """``90 s``, ``5 min``, ``2 h``: a length for messages."""
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g} h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"
