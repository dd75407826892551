"""CPython's ``ast`` of a module, parsed once for every reader of the same text.

Linting one file reads its ``ast`` up to four times: the nesting guard, the module
summary, the code-fact collectors and the statement positions. The last few texts
parsed are remembered (by value), so a file costs one parse; the trees are shared and
must be treated as read-only. A tree takes tens of times its text's size in memory, so
only ``KEPT_CHARACTERS`` of text in all are kept.
"""

from __future__ import annotations

import ast
import threading
import warnings
from collections import OrderedDict

#: Texts whose trees are kept: the file being linted, and a few an editor switches to.
KEPT_TREES = 4
#: Characters of text, in all, whose trees are kept (a larger text's tree is not).
KEPT_CHARACTERS = 1_000_000

_trees: OrderedDict[str, ast.Module] = OrderedDict()
_lock = threading.Lock()


def parse_python(text: str) -> ast.Module:
    """``ast.parse(text)`` without its warnings (``SyntaxWarning``,
    ``DeprecationWarning``); raises what ``ast.parse`` raises (``SyntaxError``,
    ``ValueError``, ``RecursionError``, ``MemoryError``), and caches no failure."""
    with _lock:
        tree = _trees.get(text)
        if tree is not None:
            _trees.move_to_end(text)
            return tree
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(text)
    if len(text) > KEPT_CHARACTERS:
        return tree
    with _lock:
        _trees[text] = tree
        while len(_trees) > KEPT_TREES or sum(map(len, _trees)) > KEPT_CHARACTERS:
            _trees.popitem(last=False)
    return tree


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
