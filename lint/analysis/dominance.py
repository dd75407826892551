"""Post-dominators and control dependence over a control-flow graph.

Decisions are read without ``EXCEPTION`` edges (an exception any statement may raise
decides nothing the code spells); ``RAISE`` edges count, except those that end the job
loudly (an uncaught ``raise``, a failing ``assert``, ``sys.exit(1)``): under a launcher
the failing rank stops every other one, so a way that ends so decides nothing (a check
that raises inside a loop does not make what follows the loop depend on it). Nodes from
which every way ends loudly are *doomed* and left out. Both exits flow into one virtual
end; a node that cannot reach it (an endless loop) is tied to it too, so every node has
an immediate post-dominator.

A node is *control-dependent* on an edge ``T -> S`` when it post-dominates ``S`` but not
``T``: whether it runs is decided at ``T``. With back edges this covers loop-carried
exits: after a ``break`` taken on one rank, the statements of later iterations depend on
the test that took it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from ddplint.analysis.control_flow import EdgeKind, Graph, Node, NodeKind, ends_loudly

_END = -1


@dataclass(frozen=True)
class Dependence:
    """``node`` runs only when ``test`` goes along ``edge``."""

    test: Node
    edge: EdgeKind


def decision_successors(node: Node) -> Iterator[tuple[Node, EdgeKind]]:
    """The successors the code decides between (no ``EXCEPTION`` edges)."""
    for successor, edge in node.successors:
        if edge is not EdgeKind.EXCEPTION:
            yield successor, edge


def avoids(
    start: Node,
    target: Node,
    stop: Node | AbstractSet[int],
    closed: Callable[[Node], EdgeKind | None] | None = None,
) -> bool:
    """Whether no way from ``start`` reaches ``target`` before the function ends or
    ``stop`` comes (a test asked again: a jump that avoids the collective, and is not
    taken after it; a later meeting point; or any of a set of node indices: the
    collectives that synchronise the ranks), exception edges left out; ``closed``
    names the edge out of a node that no way of interest takes (the branch a job of
    one process takes)."""
    seen: set[int] = {stop.index} if isinstance(stop, Node) else set(stop)
    pending = [start]
    while pending:
        node = pending.pop()
        if node is target:
            return False
        if node.index in seen:
            continue
        seen.add(node.index)
        shut = closed(node) if closed is not None else None
        pending.extend(s for s, edge in decision_successors(node) if edge is not shut)
    return True


def ends_the_job(node: Node, successor: Node, edge: EdgeKind) -> bool:
    """Whether ``node -> successor`` ends the job loudly: a ``RAISE`` edge of a statement
    that ends with an error (``ends_loudly``) that no handler of the function may catch
    (a ``try``'s handlers may go on; a ``with`` exit or a ``finally`` re-raises)."""
    return (
        edge is EdgeKind.RAISE
        and successor.kind is not NodeKind.DISPATCH
        and ends_loudly(node.statement)
    )


def doomed_nodes(graph: Graph) -> set[int]:
    """The nodes from which every decided way ends the job loudly (a ``raise`` and the
    statements that lead only to it); nodes with no decided way on are not."""
    doomed: set[int] = set()
    changed = True
    while changed:
        changed = False
        for node in graph.nodes:
            if node.index in doomed:
                continue
            ways = list(decision_successors(node))
            if ways and all(ends_the_job(node, s, e) or s.index in doomed for s, e in ways):
                doomed.add(node.index)
                changed = True
    return doomed


class PostDominance:
    """Immediate post-dominators (Cooper, Harvey and Kennedy's iteration on the reverse
    graph, ways that end the job loudly left out) and the control dependences they
    give."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self._doomed = doomed_nodes(graph)
        self._ipdom = self._compute()
        self._dependences: dict[int, list[Dependence]] | None = None

    def successors(self, node: Node) -> list[tuple[Node, EdgeKind]]:
        """The decision successors that do not end the job loudly."""
        return [
            (successor, edge)
            for successor, edge in decision_successors(node)
            if successor.index not in self._doomed and not ends_the_job(node, successor, edge)
        ]

    def ends_some_ways(self, node: Node) -> bool:
        """Whether some decided way from ``node`` ends the job loudly (a failing
        ``assert``, an arm that raises): which way a rank takes there still matters."""
        return len(self.successors(node)) < len(list(decision_successors(node)))

    def _reverse_order(self) -> list[int]:
        """Nodes in reverse post-order of the reverse graph, from the virtual end; a
        node of an endless loop not yet reached is tied to the end as a root of its own
        (the first one in graph order, so a ``while True:`` test roots its body)."""
        exits = [self.graph.exit, self.graph.raise_exit]
        reaches_end = self._reaching(exits)
        stuck = [n for n in self.graph.nodes if n.index not in reaches_end]
        self._roots: list[int] = []
        seen: set[int] = set()
        order: list[int] = []
        for root in [n.index for n in exits] + [n.index for n in stuck]:
            if root in seen:
                continue
            self._roots.append(root)
            seen.add(root)
            stack = [(root, iter(self._sources(root)))]
            while stack:
                current, children = stack[-1]
                for child in children:
                    if child not in seen:
                        seen.add(child)
                        stack.append((child, iter(self._sources(child))))
                        break
                else:
                    stack.pop()
                    order.append(current)
        return list(reversed(order))

    def _reaching(self, targets: list[Node]) -> set[int]:
        seen = {t.index for t in targets}
        pending = list(targets)
        while pending:
            node = pending.pop()
            for source, edge in node.predecessors:
                if source.index not in seen and self._kept(source, node, edge):
                    seen.add(source.index)
                    pending.append(source)
        return seen

    def _kept(self, source: Node, target: Node, edge: EdgeKind) -> bool:
        """Whether the edge ``source -> target`` is a decided way that goes on."""
        return (
            edge is not EdgeKind.EXCEPTION
            and target.index not in self._doomed
            and not ends_the_job(source, target, edge)
        )

    def _predecessors(self, index: int) -> list[int]:
        """Predecessors in the reverse graph: the node's kept successors."""
        return [s.index for s, _ in self.successors(self.graph.nodes[index])]

    def _sources(self, index: int) -> list[int]:
        """Successors in the reverse graph: the node's predecessors, by kept edges."""
        node = self.graph.nodes[index]
        return [s.index for s, edge in node.predecessors if self._kept(s, node, edge)]

    def _compute(self) -> dict[int, int]:
        order = self._reverse_order()
        position = {index: i for i, index in enumerate(order)}
        ipdom: dict[int, int] = {root: _END for root in self._roots}

        def intersect(a: int, b: int) -> int:
            while a != b:
                while a != _END and (b == _END or position[a] > position[b]):
                    a = ipdom[a]
                while b != _END and (a == _END or position[b] > position[a]):
                    b = ipdom[b]
            return a

        changed = True
        while changed:
            changed = False
            for index in order:
                if index in self._roots:
                    continue
                candidates = [s for s in self._predecessors(index) if s in ipdom]
                if not candidates:
                    continue
                new = candidates[0]
                for other in candidates[1:]:
                    new = intersect(other, new)
                if ipdom.get(index) != new:
                    ipdom[index] = new
                    changed = True
        return ipdom

    def immediate(self, node: Node) -> Node | None:
        """The immediate post-dominator (None: the virtual end)."""
        index = self._ipdom.get(node.index, _END)
        return None if index == _END else self.graph.nodes[index]

    def post_dominates(self, a: Node, b: Node) -> bool:
        """Whether every way from ``b`` to the end passes ``a``."""
        index: int | None = b.index
        while index is not None and index != _END:
            if index == a.index:
                return True
            index = self._ipdom.get(index, _END)
        return False

    def dependences(self, node: Node) -> list[Dependence]:
        """The tests (and their edges) that decide whether ``node`` runs."""
        if self._dependences is None:
            self._dependences = self._control_dependences()
        return self._dependences.get(node.index, [])

    def all_dependences(self, node: Node) -> list[Dependence]:
        """The tests that decide whether ``node`` runs, directly or through the tests
        that decide those (nearest first)."""
        found: list[Dependence] = []
        seen: set[int] = set()
        pending = [node]
        while pending:
            current = pending.pop(0)
            for dependence in self.dependences(current):
                if dependence.test.index not in seen:
                    seen.add(dependence.test.index)
                    found.append(dependence)
                    pending.append(dependence.test)
        return found

    def _control_dependences(self) -> dict[int, list[Dependence]]:
        found: dict[int, list[Dependence]] = {}
        for test in self.graph.nodes:
            successors = self.successors(test)
            if len(successors) < 2:
                continue
            stop = self._ipdom.get(test.index, _END)
            for successor, edge in successors:
                index = successor.index
                while index != stop and index != _END:
                    found.setdefault(index, []).append(Dependence(test, edge))
                    index = self._ipdom.get(index, _END)
        return found

    def region(self, test: Node) -> list[Node]:
        """The nodes between ``test`` and its immediate post-dominator: what the test
        decides, directly or through tests nested in it."""
        stop = self._ipdom.get(test.index, _END)
        seen: set[int] = set()
        pending = [s for s, _ in self.successors(test)]
        region: list[Node] = []
        while pending:
            node = pending.pop()
            if node.index in seen or node.index == stop:
                continue
            seen.add(node.index)
            region.append(node)
            pending.extend(s for s, _ in self.successors(node))
        return region
