"""Dominators over a control-flow graph: the nodes every path from the entry passes.

Read without ``EXCEPTION`` edges, like the decisions (``dominance``): a statement that
may raise does not make the statements after it optional.
"""

from __future__ import annotations

from ddplint.analysis.control_flow import EdgeKind, Graph, Node


class Dominators:
    """Each node's dominators (itself included), for the nodes the entry reaches."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self._order = self._reverse_postorder()
        self._dominators = self._compute()

    def _reverse_postorder(self) -> list[Node]:
        seen: set[int] = set()
        order: list[Node] = []
        stack: list[tuple[Node, int]] = [(self.graph.entry, 0)]
        seen.add(self.graph.entry.index)
        while stack:
            node, position = stack.pop()
            successors = [s for s, kind in node.successors if kind is not EdgeKind.EXCEPTION]
            if position < len(successors):
                stack.append((node, position + 1))
                successor = successors[position]
                if successor.index not in seen:
                    seen.add(successor.index)
                    stack.append((successor, 0))
            else:
                order.append(node)
        order.reverse()
        return order

    def _compute(self) -> dict[int, frozenset[int]]:
        reached = {node.index for node in self._order}
        everything = frozenset(reached)
        found: dict[int, frozenset[int]] = {n.index: everything for n in self._order}
        found[self.graph.entry.index] = frozenset({self.graph.entry.index})
        changed = True
        while changed:
            changed = False
            for node in self._order[1:]:
                incoming = [
                    found[p.index]
                    for p, kind in node.predecessors
                    if kind is not EdgeKind.EXCEPTION and p.index in reached
                ]
                meet = frozenset.intersection(*incoming) if incoming else frozenset()
                new = meet | {node.index}
                if new != found[node.index]:
                    found[node.index] = new
                    changed = True
        return found

    def dominates(self, a: Node, b: Node) -> bool:
        """Whether every path from the entry to ``b`` passes ``a``."""
        return a.index in self._dominators.get(b.index, frozenset())

    def strict_dominators(self, node: Node) -> list[Node]:
        """The nodes that dominate ``node``, itself left out."""
        found = self._dominators.get(node.index, frozenset())
        return [self.graph.nodes[i] for i in sorted(found) if i != node.index]

    def between(self, a: Node, b: Node) -> list[Node]:
        """The nodes on some path from ``a`` to ``b`` that passes neither again (both
        left out): what may run after ``a`` and before ``b`` in one pass."""
        forward = _reach(a, b, backwards=False)
        backward = _reach(b, a, backwards=True)
        return [self.graph.nodes[i] for i in sorted(forward & backward)]


def _reach(start: Node, stop: Node, *, backwards: bool) -> set[int]:
    """Nodes reached from ``start`` (left out) without passing ``stop`` or ``start``."""
    found: set[int] = set()
    pending = [start]
    while pending:
        node = pending.pop()
        edges = node.predecessors if backwards else node.successors
        for other, kind in edges:
            if kind is EdgeKind.EXCEPTION or other is stop or other is start:
                continue
            if other.index not in found:
                found.add(other.index)
                pending.append(other)
    return found
