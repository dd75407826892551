"""Reading a call's arguments by keyword or position, as Python would bind them."""

from __future__ import annotations

import libcst as cst

from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import dotted_name


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


def parameter_filled(call: cst.Call, callee: cst.FunctionDef, arg: cst.Arg) -> str | None:
    """The parameter of ``callee`` that ``arg`` of ``call`` fills: its keyword, or the
    parameter at its position (a leading ``self`` / ``cls`` left out); None for
    ``*args`` / ``**kwargs`` and for a position past the parameters."""
    if arg.keyword is not None:
        return arg.keyword.value
    if arg.star:
        return None
    listed = [p.name.value for p in (*callee.params.posonly_params, *callee.params.params)]
    if listed and listed[0] in ("self", "cls"):
        listed = listed[1:]
    positional = [a for a in call.args if a.keyword is None and not a.star]
    index = next((i for i, a in enumerate(positional) if a is arg), None)
    return listed[index] if index is not None and index < len(listed) else None


def has_star_arguments(call: cst.Call) -> bool:
    """Whether ``*args`` or ``**kwargs`` may supply arguments we cannot see."""
    return any(arg.star in ("*", "**") for arg in call.args)


_FALSY = frozenset({"False", "None"})


def switched_off_parameters(call: cst.Call, callee: cst.FunctionDef) -> set[str]:
    """Parameters of ``callee`` that are off in this call: passed a literal ``False`` /
    ``None`` / ``0`` (``save_state_dict(..., synchronize=False)``), or not passed and off
    by default (``barrier_after=False``)."""
    listed = [*callee.params.posonly_params, *callee.params.params]
    if listed and listed[0].name.value in ("self", "cls") and isinstance(call.func, cst.Attribute):
        listed = listed[1:]
    parameters = [p.name.value for p in listed]
    if any(a.star for a in call.args):
        return set()  # ``*args`` / ``**kwargs``: what is passed is not known
    off = {
        p.name.value
        for p in (*listed, *callee.params.kwonly_params)
        if p.default is not None and _is_falsy(p.default)
    }
    for position, argument in enumerate(call.args):
        name = (
            argument.keyword.value
            if argument.keyword is not None
            else parameters[position]
            if position < len(parameters)
            else None
        )
        if name is None:
            continue
        if _is_falsy(argument.value):
            off.add(name)
        else:
            off.discard(name)
    return off


def _is_falsy(value: cst.BaseExpression) -> bool:
    """A literal ``False`` / ``None`` / ``0``."""
    return (isinstance(value, cst.Name) and value.value in _FALSY) or (
        isinstance(value, cst.Integer) and value.value == "0"
    )


def runs_only_if(
    index: ModuleIndex, node: cst.CSTNode, function: cst.FunctionDef, names: set[str]
) -> bool:
    """``node`` runs only under ``if <name>:`` (or ``if <name> and ...:``) inside
    ``function``, ``name`` one of ``names`` (parameters a call switches off, or dotted
    ``self.`` attributes known false where the call is made)."""
    if not names:
        return False
    child = node
    for ancestor in index.ancestors(node):
        if ancestor is function:
            return False
        if isinstance(ancestor, cst.If) and child is ancestor.body:
            test = ancestor.test
            conjuncts = (
                [test.left, test.right]
                if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And)
                else [test]
            )
            if any(dotted_name(c) in names for c in conjuncts):
                return True
        child = ancestor
    return False


def false_self_conditions(index: ModuleIndex, call: cst.Call) -> set[str]:
    """``self.`` attributes (dotted) known false where ``call`` runs, inside its own
    function: it sits in the ``else`` of ``if self.x.flag:`` or under ``if not
    self.x.flag:``. A method of the same object called there does not run what it keeps
    under ``if self.x.flag:`` (path sensitivity, for the same-object case only)."""
    found: set[str] = set()
    child: cst.CSTNode = call
    for ancestor in index.ancestors(call):
        if isinstance(ancestor, cst.FunctionDef):
            break
        if isinstance(ancestor, cst.If):
            test = ancestor.test
            if child is ancestor.orelse:
                name = dotted_name(test)
            elif (
                child is ancestor.body
                and isinstance(test, cst.UnaryOperation)
                and isinstance(test.operator, cst.Not)
            ):
                name = dotted_name(test.expression)
            else:
                name = None
            if name is not None and name.startswith("self."):
                found.add(name)
        child = ancestor
    return found
