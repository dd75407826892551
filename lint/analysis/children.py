"""A node's children, faster than ``ast.iter_child_nodes``, and the walks built on
them: whole-tree walks spend most of their time listing children.

The bottom floor of the analysis core with ``names``, shared with the project
summaries and the syntax layer. ``child_nodes`` gives what ``ast.iter_child_nodes``
gives, in the same order; ``walk`` what ``ast.walk`` gives, in the same order.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

#: Fields that hold only leaves (``Load``, ``Add``, ``Eq``): nodes without children.
_LEAF_FIELDS = frozenset({"ctx", "op", "ops"})
#: Fields that never hold a node in any node type (identifiers, numbers, flags, comments).
_PLAIN_FIELDS = frozenset(
    {
        *("id", "attr", "arg", "name", "asname", "module", "level", "type_comment"),
        *("conversion", "simple", "is_async", "kwd_attrs", "rest"),
    }
)
#: Fields that hold no node in these node types: a constant's value and kind, the
#: names a ``global`` or ``nonlocal`` lists.
_PLAIN_IN = {
    ast.Constant: frozenset({"value", "kind"}),
    ast.Global: frozenset({"names"}),
    ast.Nonlocal: frozenset({"names"}),
}
_NODE_FIELDS: dict[tuple[type[ast.AST], bool], tuple[str, ...]] = {}
#: A node type's children lister, with and without leaves (``_lister``).
_LISTERS: tuple[dict[type[ast.AST], Callable[[Any], list[ast.AST]]], ...] = ({}, {})
#: One field of an ``ast`` class's signature in its docstring: ``expr* args``.
_SIGNATURE_FIELD = re.compile(r"(\w+)([?*]?) (\w+)")
#: Signature types that are no node: identifiers, strings, numbers, constants.
_PLAIN_TYPES = frozenset({"identifier", "string", "int", "constant"})
#: List fields whose items may be None (``{**d}``'s key, a keyword-only parameter
#: without a default).
_HOLEY_LISTS = frozenset({("Dict", "keys"), ("arguments", "kw_defaults")})


def _node_fields(node_type: type[ast.AST], leaves: bool) -> tuple[str, ...]:
    """The fields of ``node_type`` that may hold a node, in ``_fields`` order."""
    plain = _PLAIN_FIELDS | _PLAIN_IN.get(node_type, frozenset())
    return tuple(
        field
        for field in node_type._fields
        if field not in plain and (leaves or field not in _LEAF_FIELDS)
    )


def _children_by_fields(node: ast.AST, leaves: bool) -> list[ast.AST]:
    """``child_nodes`` field by field (one ``getattr`` per field): any node, a node
    built without some of its fields among them."""
    fields = _NODE_FIELDS.get((type(node), leaves))
    if fields is None:
        fields = _NODE_FIELDS[type(node), leaves] = _node_fields(type(node), leaves)
    found: list[ast.AST] = []
    for field in fields:
        value = getattr(node, field, None)
        if isinstance(value, ast.AST):
            found.append(value)
        elif value.__class__ is list:  # ``ast`` builds plain lists; a test is cheaper
            for item in value:
                if isinstance(item, ast.AST):
                    found.append(item)
    return found


def _compiled_lister(
    node_type: type[ast.AST], leaves: bool
) -> Callable[[Any], list[ast.AST]] | None:
    """One list display of the node fields of an ``ast`` class, read from the signature
    in its docstring (``Call(expr func, expr* args, keyword* keywords)`` ->
    ``[n.func, *n.args, *n.keywords]``, an optional field only when set); None where the
    signature does not name exactly its ``_fields`` (a subclass, another Python)."""
    match = re.fullmatch(r"(\w+)\((.*)\)", node_type.__doc__ or "")
    signature = _SIGNATURE_FIELD.findall(match.group(2)) if match else []
    if match is None or tuple(field for _, _, field in signature) != node_type._fields:
        return None
    if match.group(1) != node_type.__name__ or node_type.__module__ != "ast":
        return None
    kept = set(_node_fields(node_type, leaves))
    parts = []
    for kind, mark, field in signature:
        if kind in _PLAIN_TYPES or field not in kept:
            continue
        if (node_type.__name__, field) in _HOLEY_LISTS:
            parts.append(f"*[x for x in n.{field} if x is not None]")
        elif mark == "*":
            parts.append(f"*n.{field}")
        elif mark == "?":
            parts.append(f"*((n.{field},) if n.{field} is not None else ())")
        else:
            parts.append(f"n.{field}")
    lister: Callable[[Any], list[ast.AST]] = eval(f"lambda n: [{', '.join(parts)}]")
    return lister


def _lister(node_type: type[ast.AST], leaves: bool) -> Callable[[Any], list[ast.AST]]:
    """The children lister of a node type: its compiled list display where its
    signature reads, else the field-by-field reading."""
    compiled = _compiled_lister(node_type, leaves)
    if compiled is not None:
        return compiled
    return lambda node: _children_by_fields(node, leaves)


def child_nodes(node: ast.AST, leaves: bool = True) -> list[ast.AST]:
    """``list(ast.iter_child_nodes(node))``, faster (each node type's fields read by one
    compiled list display, no generators: whole-tree walks spend most of their time
    here); without ``leaves``, the contexts and operators are left out. A node built
    without some of its fields is read field by field. A new list each call (the
    caller may change it)."""
    listers = _LISTERS[leaves]
    lister = listers.get(type(node))
    if lister is None:
        lister = listers[type(node)] = _lister(type(node), leaves)
    try:
        return lister(node)
    except AttributeError:
        return _children_by_fields(node, leaves)


def walk(node: ast.AST, leaves: bool = True) -> Iterator[ast.AST]:
    """``ast.walk(node)``: every node under ``node`` (itself included), breadth first,
    in the same order; without ``leaves``, the contexts and operators left out (the
    others in the same order)."""
    listers = _LISTERS[leaves]
    pending = deque([node])
    while pending:
        node = pending.popleft()
        lister = listers.get(type(node))
        try:
            pending.extend(lister(node) if lister else child_nodes(node, leaves))
        except AttributeError:
            pending.extend(_children_by_fields(node, leaves))
        yield node
