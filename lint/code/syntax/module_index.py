"""One walk over a LibCST module: parent links, source order, nodes by type.

LibCST's own visitor rebuilds every node it leaves, which dominates lint time on large
trees; this walk only reads dataclass fields. Whitespace and operator tokens are
skipped: no rule looks at them (suppression comments are read from the text).
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import libcst as cst

N = TypeVar("N", bound=cst.CSTNode)

_SKIP_MODULES = ("libcst._nodes.whitespace", "libcst._nodes.op")
# Fields visited first so that the walk order is the source order.
_FIELD_ORDER_OVERRIDES: dict[type, tuple[str, ...]] = {
    cst.FunctionDef: ("decorators", "name", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "name", "bases", "keywords", "body"),
    cst.IfExp: ("body", "test", "orelse"),
}
_FIELDS: dict[type, tuple[str, ...] | None] = {}


# Fields that only ever hold whitespace, comments or punctuation: never visited.
_TOKEN_FIELDS = (
    "whitespace",
    "lpar",
    "rpar",
    "comma",
    "semicolon",
    "colon",
    "equal",
    "leading_lines",
    "lines_after_decorators",
    "header",
    "footer",
    "newline",
    "trailing_whitespace",
    "default_indent",
    "default_newline",
)
_SKIP, _NODE, _SEQUENCE = 0, 1, 2
_KINDS: dict[type, int] = {tuple: _SEQUENCE, list: _SEQUENCE}


def _fields_of(node_type: type) -> tuple[str, ...] | None:
    """The child-bearing fields of a node type, or None to skip the node entirely."""
    if node_type in _FIELDS:
        return _FIELDS[node_type]
    fields: tuple[str, ...] | None
    if node_type.__module__ in _SKIP_MODULES:
        fields = None
    else:
        fields = _FIELD_ORDER_OVERRIDES.get(node_type) or tuple(
            f.name for f in dataclasses.fields(node_type) if not f.name.startswith(_TOKEN_FIELDS)
        )
    _FIELDS[node_type] = fields
    return fields


def _kind(value_type: type) -> int:
    """Whether a field value of this type is a node to visit, a sequence, or neither
    (decided once per type: ``isinstance`` on LibCST's abstract base is slow)."""
    kind = _KINDS.get(value_type)
    if kind is None:
        visitable = issubclass(value_type, cst.CSTNode) and _fields_of(value_type) is not None
        kind = _NODE if visitable else _SKIP
        _KINDS[value_type] = kind
    return kind


def children_of(node: cst.CSTNode) -> list[cst.CSTNode]:
    """Direct children in source order, tokens and whitespace left out."""
    fields = _fields_of(type(node))
    if not fields:
        return []
    children: list[cst.CSTNode] = []
    for name in fields:
        value: Any = getattr(node, name, None)
        kind = _kind(type(value))
        if kind == _NODE:
            children.append(value)
        elif kind == _SEQUENCE:
            children.extend(item for item in value if _kind(type(item)) == _NODE)
    return children


@dataclass(frozen=True)
class _Walk:
    """One top-level statement's part of the index: its nodes in pre-order (the
    statement first), the parent of each node below it, its nodes by type."""

    nodes: list[cst.CSTNode]
    parent: dict[cst.CSTNode, cst.CSTNode]
    by_type: dict[type, list[cst.CSTNode]]


def _walk(root: cst.CSTNode) -> _Walk:
    nodes: list[cst.CSTNode] = []
    parent_map: dict[cst.CSTNode, cst.CSTNode] = {}
    by_type: defaultdict[type, list[cst.CSTNode]] = defaultdict(list)
    stack: list[tuple[cst.CSTNode, cst.CSTNode | None]] = [(root, None)]
    while stack:
        node, parent = stack.pop()
        if parent is not None:
            parent_map[node] = parent
        nodes.append(node)
        by_type[type(node)].append(node)
        for child in reversed(children_of(node)):
            stack.append((child, node))
    return _Walk(nodes, parent_map, dict(by_type))


class _Walks:
    """Statements' walks kept between indexes of successive versions of a file, by
    node identity (an incremental parse reuses the statements an edit left alone);
    the least recently used dropped past ``limit``."""

    def __init__(self, limit: int = 20_000) -> None:
        self._limit = limit
        self._kept: OrderedDict[int, tuple[cst.CSTNode, _Walk]] = OrderedDict()
        self._lock = threading.Lock()

    def walk(self, statement: cst.CSTNode) -> _Walk:
        key = id(statement)
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
                return found[1]
        walked = _walk(statement)
        with self._lock:
            self._kept[key] = (statement, walked)  # the node is held: its id stays its own
            while len(self._kept) > self._limit:
                self._kept.popitem(last=False)
        return walked


_kept_walks: _Walks | None = None


def keep_walks() -> None:
    """Keep statements' walks between indexes in this process (the language server)."""
    global _kept_walks
    if _kept_walks is None:
        _kept_walks = _Walks()


class ModuleIndex:
    """Parents, pre-order position and a by-type list of every non-token node."""

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self.parent: dict[cst.CSTNode, cst.CSTNode] = {}
        self.order: dict[cst.CSTNode, int] = {module: 0}
        self.by_type: defaultdict[type, list[cst.CSTNode]] = defaultdict(list)
        self.by_type[type(module)].append(module)
        self._functions: dict[cst.CSTNode, cst.FunctionDef | None] = {}
        kept = _kept_walks
        for statement in children_of(module):
            walked = kept.walk(statement) if kept is not None else _walk(statement)
            self.parent[statement] = module
            self.parent.update(walked.parent)
            start = len(self.order)
            self.order.update(
                zip(walked.nodes, range(start, start + len(walked.nodes)), strict=True)
            )
            for node_type, nodes in walked.by_type.items():
                self.by_type[node_type].extend(nodes)

    def nodes(self, node_type: type[N]) -> list[N]:
        """All nodes of exactly this type, in source order."""
        return self.by_type.get(node_type, [])  # type: ignore[return-value]

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        """Parent, grandparent, ... up to the module."""
        current = self.parent.get(node)
        while current is not None:
            yield current
            current = self.parent.get(current)

    def enclosing(self, node: cst.CSTNode, *types: type[N]) -> N | None:
        """The nearest ancestor of one of ``types``."""
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, types):
                return ancestor
        return None

    def enclosing_function(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        """The innermost ``def`` holding ``node`` (lambdas do not count). Remembered for
        every node on the way up: rules ask it of most calls of the module."""
        parent = self.parent.get(node)
        return None if parent is None else self._function_at(parent)

    def _function_at(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        """``node`` if it is a ``def``, else the innermost ``def`` holding it."""
        known = self._functions
        climbed: list[cst.CSTNode] = []
        current: cst.CSTNode | None = node
        found: cst.FunctionDef | None = None
        while current is not None:
            if current in known:
                found = known[current]
                break
            if isinstance(current, cst.FunctionDef):
                found = current
                break
            climbed.append(current)
            current = self.parent.get(current)
        for passed in climbed:
            known[passed] = found
        return found

    def enclosing_class(self, function: cst.FunctionDef) -> cst.ClassDef | None:
        """The class whose body defines ``function`` directly, if any."""
        parent = self.parent.get(function)
        if isinstance(parent, cst.IndentedBlock):
            owner = self.parent.get(parent)
            if isinstance(owner, cst.ClassDef):
                return owner
        return None

    def enclosing_statement(self, node: cst.CSTNode) -> cst.CSTNode:
        """The smallest statement (simple line or compound) that holds ``node``."""
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            return node
        for ancestor in self.ancestors(node):
            if isinstance(
                ancestor,
                (cst.SimpleStatementLine, cst.BaseCompoundStatement, cst.SimpleStatementSuite),
            ):
                return ancestor
        return self.module
