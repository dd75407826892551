"""Reading a call's arguments by keyword or position, as Python would bind them."""

from __future__ import annotations

import libcst as cst


def keyword_argument(call: cst.Call, name: str) -> cst.Arg | None:
    """The ``name=...`` argument of ``call``."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def positional_argument(call: cst.Call, position: int) -> cst.Arg | None:
    """The argument bound to 0-based ``position``; None when absent or when a ``*args``
    before it makes the position unknowable."""
    for seen, arg in enumerate(call.args):
        if arg.keyword is not None or arg.star == "**":
            return None
        if arg.star == "*":
            return None
        if seen == position:
            return arg
    return None


def argument(call: cst.Call, name: str, position: int | None = None) -> cst.Arg | None:
    """The argument for parameter ``name`` (keyword, or positional at ``position``)."""
    found = keyword_argument(call, name)
    if found is None and position is not None:
        found = positional_argument(call, position)
    return found


def has_star_arguments(call: cst.Call) -> bool:
    """Whether ``*args`` or ``**kwargs`` may supply arguments we cannot see."""
    return any(arg.star in ("*", "**") for arg in call.args)
