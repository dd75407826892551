"""What a program runs: the closure of the project's import graph from one module, as a
bit set, shared between programs.

Every module's closure over its imports from no folder is found once, by strongly
connected parts (Tarjan's algorithm: a part's closure is its modules and the closures of
the parts it imports, which are done before it). A program run from a folder reads some
modules' imports differently (``programs.FolderSpans``: those modules are the folder's
*candidates*); its closure follows the imports module by module only where a module's
closure from no folder holds a candidate, and takes that closure whole elsewhere (no
module in it reads its imports otherwise from that folder)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator


class Closures:
    """Closures of the import graph ``imports_of(module, folder)`` as bit sets over the
    modules met (``bit``, ``names``)."""

    def __init__(self, imports_of: Callable[[str, str], Iterable[str]]) -> None:
        self._imports_of = imports_of
        self._bits: dict[str, int] = {}
        self._names: list[str] = []
        #: Each module's closure from no folder (its own bit included).
        self._plain: dict[str, int] = {}

    def bit(self, module: str) -> int:
        """The module's bit (given when first asked)."""
        found = self._bits.get(module)
        if found is None:
            found = self._bits[module] = 1 << len(self._names)
            self._names.append(module)
        return found

    def bits(self, modules: Iterable[str]) -> int:
        """The bit set of ``modules``."""
        found = 0
        for module in modules:
            found |= self.bit(module)
        return found

    def names(self, bits: int) -> Iterator[str]:
        """The modules of a bit set."""
        set_bits = bin(bits)[:1:-1]  # lowest bit first
        position = set_bits.find("1")
        while position != -1:
            yield self._names[position]
            position = set_bits.find("1", position + 1)

    def of(self, start: str, folder: str, candidates: int) -> int:
        """The closure from ``start`` in a program run from ``folder``, whose
        ``candidates`` (a bit set) may read their imports otherwise from it."""
        found = 0
        pending = [start]
        while pending:
            module = pending.pop()
            bit = self.bit(module)
            if found & bit:
                continue
            plain = self.plain(module)
            if not plain & candidates:
                found |= plain
                continue
            found |= bit
            pending.extend(m for m in self._imports_of(module, folder) if not found & self.bit(m))
        return found

    def plain(self, start: str) -> int:
        """The closure from ``start`` over the imports from no folder."""
        done = self._plain.get(start)
        if done is not None:
            return done
        order: dict[str, int] = {start: 0}
        low: dict[str, int] = {start: 0}
        stack, on_stack = [start], {start}
        work = [(start, iter(self._imports_of(start, "")))]
        while work:
            module, following = work[-1]
            for imported in following:
                if imported in self._plain:
                    continue
                if imported not in order:
                    order[imported] = low[imported] = len(order)
                    stack.append(imported)
                    on_stack.add(imported)
                    work.append((imported, iter(self._imports_of(imported, ""))))
                    break
                if imported in on_stack:
                    low[module] = min(low[module], order[imported])
            else:
                work.pop()
                if work:
                    caller = work[-1][0]
                    low[caller] = min(low[caller], low[module])
                if low[module] == order[module]:
                    self._close(stack, on_stack, module)
        return self._plain[start]

    def _close(self, stack: list[str], on_stack: set[str], root: str) -> None:
        """Take the strongly connected part rooted at ``root`` off the stack and give
        each of its modules the part's closure."""
        members: list[str] = []
        while True:
            member = stack.pop()
            on_stack.discard(member)
            members.append(member)
            if member == root:
                break
        closure = self.bits(members)
        for member in members:
            for imported in self._imports_of(member, ""):
                closure |= self._plain.get(imported, 0)
        for member in members:
            self._plain[member] = closure
