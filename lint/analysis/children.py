"""A node's children, faster than ``ast.iter_child_nodes``, and the walks built on
them: whole-tree walks spend most of their time listing children.

The bottom floor of the analysis core with ``names``, shared with the project
summaries and the syntax layer. ``child_nodes`` gives what ``ast.iter_child_nodes``
gives, in the same order; ``walk`` what ``ast.walk`` gives, in the same order.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator

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


def _node_fields(node_type: type[ast.AST], leaves: bool) -> tuple[str, ...]:
    """The fields of ``node_type`` that may hold a node, in ``_fields`` order."""
    plain = _PLAIN_FIELDS | _PLAIN_IN.get(node_type, frozenset())
    return tuple(
        field
        for field in node_type._fields
        if field not in plain and (leaves or field not in _LEAF_FIELDS)
    )


def child_nodes(node: ast.AST, leaves: bool = True) -> list[ast.AST]:
    """``list(ast.iter_child_nodes(node))``, faster (one ``getattr`` per field, no
    generators: whole-tree walks spend most of their time here); without ``leaves``,
    the contexts and operators are left out."""
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


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk(node)``: every node under ``node`` (itself included), breadth first,
    in the same order."""
    pending = deque([node])
    while pending:
        node = pending.popleft()
        pending.extend(child_nodes(node))
        yield node
