"""Which bindings of a name reach a point of its function: a walk back over the
control-flow graph from the point to the nearest nodes that bind the name again.

A name bound again is a new value (``model = DDP(model)`` ... ``model =
Net.from_pretrained(path)``): what a later statement reads is what the bindings that
reach it hold, not what the name held anywhere in the function.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from ddplint.analysis.control_flow import Graph, Node, NodeKind
from ddplint.analysis.names import bound_names


@dataclass(frozen=True)
class Reaching:
    """The bindings of a name that reach a node: each binding node with the value it
    gives the name (None: a value no expression spells alone, as a loop's target or
    an item unpacked from a tuple), and whether the value the function started with
    (a parameter, a global, a field) reaches too."""

    bindings: tuple[tuple[Node, ast.expr | None], ...]
    from_entry: bool


def bindings_reaching(graph: Graph, node: Node, name: str) -> Reaching:
    """The bindings of ``name`` (a plain or dotted name) that reach ``node`` before it
    runs: walking back from ``node``, each way stops at the first node that binds it."""
    found: dict[int, tuple[Node, ast.expr | None]] = {}
    from_entry = False
    seen: set[int] = set()
    pending = [source for source, _ in node.predecessors]
    while pending:
        current = pending.pop()
        if current.index in seen:
            continue
        seen.add(current.index)
        bound = [value for bound_name, value in node_bindings(current) if bound_name == name]
        if bound:
            found[current.index] = (current, bound[-1])
            continue
        if current is graph.entry:
            from_entry = True
            continue
        pending.extend(source for source, _ in current.predecessors)
    return Reaching(tuple(found[index] for index in sorted(found)), from_entry)


def node_bindings(node: Node) -> Iterator[tuple[str, ast.expr | None]]:
    """The names a node binds, each with the value it gives them when one expression
    spells it (``name = value``, ``name: T = value``), else None (``+=``, a loop's
    target, ``with ... as name``, an unpacked item, an import, a ``del``)."""
    statement = node.statement
    if node.kind is NodeKind.STEP and isinstance(statement, (ast.For, ast.AsyncFor)):
        yield from ((bound, None) for bound in bound_names(statement.target))
        return
    if node.kind is not NodeKind.STATEMENT or not isinstance(statement, ast.stmt):
        return
    if isinstance(statement, ast.Assign):
        for target in statement.targets:
            alone = isinstance(target, (ast.Name, ast.Attribute))
            value = statement.value if alone else None
            yield from ((bound, value) for bound in bound_names(target))
    elif isinstance(statement, ast.AnnAssign):
        yield from ((bound, statement.value) for bound in bound_names(statement.target))
    elif isinstance(statement, ast.AugAssign):
        yield from ((bound, None) for bound in bound_names(statement.target))
    elif isinstance(statement, (ast.With, ast.AsyncWith)):
        for item in statement.items:
            if item.optional_vars is not None:
                yield from ((bound, None) for bound in bound_names(item.optional_vars))
    elif isinstance(statement, ast.Delete):
        for target in statement.targets:
            yield from ((bound, None) for bound in bound_names(target))
    elif isinstance(statement, (ast.Import, ast.ImportFrom)):
        for alias in statement.names:
            yield (alias.asname or alias.name).split(".")[0], None
