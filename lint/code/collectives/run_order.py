"""The calls a piece of code makes in the order they run, entering the functions of the
same module it calls: for questions about order ("is a barrier issued before the GPU is
chosen?"). Source order stands for run order; branches and loops are flattened."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from ddplint.code.syntax.call_graph import LocalFunctions
from ddplint.code.syntax.module_index import ModuleIndex

#: How many same-module calls deep a trace follows (each hop is a guess about order).
MAX_DEPTH = 3


@dataclass(frozen=True)
class TracedCall:
    """One call in run order; ``chain`` names the same-module functions entered to
    reach it (outermost first; empty for the root's own calls)."""

    call: cst.Call
    chain: tuple[str, ...] = ()


class RunOrder:
    """Run-order traces of one module's entry points."""

    def __init__(self, index: ModuleIndex) -> None:
        self._index = index
        self.local = LocalFunctions(index)

    def entry_points(self) -> list[cst.CSTNode]:
        """The module itself and each function no code of the module calls (a worker
        handed to ``mp.spawn``, a ``main`` run from elsewhere)."""
        called: set[cst.FunctionDef] = set()
        for call in self._index.nodes(cst.Call):
            callee = self.local.callee(call)
            if callee is not None and self._index.enclosing_function(call) is not callee:
                called.add(callee)
        functions = [f for f in self._index.nodes(cst.FunctionDef) if f not in called]
        return [self._index.module, *functions]

    def trace(self, root: cst.CSTNode) -> list[TracedCall]:
        """The calls ``root`` (a module or a ``def``) makes, in source order, with each
        call of a same-module function followed by that function's own calls."""
        return list(self._trace(root, (), frozenset()))

    def _trace(
        self, root: cst.CSTNode, chain: tuple[str, ...], entered: frozenset[cst.CSTNode]
    ) -> Iterator[TracedCall]:
        body = root.body if isinstance(root, cst.FunctionDef) else root
        for node in self._index.walk_within(body):
            if not isinstance(node, cst.Call):
                continue
            yield TracedCall(node, chain)
            callee = self.local.callee(node)
            if callee is None or callee in entered or len(chain) >= MAX_DEPTH:
                continue
            yield from self._trace(
                callee, (*chain, self.local.label(callee)), entered | {root, callee}
            )
