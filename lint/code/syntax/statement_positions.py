"""Positions of nodes, computed one top-level statement at a time.

LibCST's ``PositionProvider`` regenerates the code of the whole module; a file with one
finding needs the positions of one statement (an editor re-lints the file on every
change). Each top-level statement asked about is regenerated alone, in a module with
the file's indentation and line end, and its lines are shifted to where the statement
starts in the file, as CPython's ``ast`` says (a line of ``a; b`` is one LibCST
statement and two ``ast`` ones). Where ``ast`` and LibCST do not pair up (``ast`` cannot
parse the text), the whole module's positions are used, as before.
"""

from __future__ import annotations

from collections.abc import Mapping

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider

from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.python_ast import parse_python


class StatementPositions:
    """``positions[node]``: the node's ``CodeRange`` in the module's regenerated code."""

    def __init__(self, module: cst.Module, text: str, index: ModuleIndex) -> None:
        self._module = module
        self._index = index
        self._starts = _statement_lines(module, text)
        self._known: dict[cst.CSTNode, CodeRange] = {}
        self._whole: Mapping[cst.CSTNode, CodeRange] | None = None

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        found = self._known.get(node)
        if found is not None:
            return found
        statement = self._top_statement(node)
        if statement is None or self._starts is None:
            return self._whole_module()[node]
        self._known.update(self._positions_in(statement, self._starts[statement]))
        return self._known[node]

    def _top_statement(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The statement of the module's body that holds ``node`` (or is it)."""
        current: cst.CSTNode | None = node
        while current is not None:
            parent = self._index.parent.get(current)
            if parent is self._module:
                return current if current in (self._starts or {}) else None
            current = parent
        return None

    def _positions_in(self, statement: cst.CSTNode, line: int) -> dict[cst.CSTNode, CodeRange]:
        alone = self._module.with_changes(body=[statement], header=[], footer=[])
        found = MetadataWrapper(alone, unsafe_skip_copy=True).resolve(PositionProvider)
        shift = line - found[statement].start.line
        return {
            node: CodeRange(
                CodePosition(where.start.line + shift, where.start.column),
                CodePosition(where.end.line + shift, where.end.column),
            )
            for node, where in found.items()
            if node is not alone
        }

    def _whole_module(self) -> Mapping[cst.CSTNode, CodeRange]:
        if self._whole is None:
            wrapper = MetadataWrapper(self._module, unsafe_skip_copy=True)
            self._whole = wrapper.resolve(PositionProvider)
        return self._whole


def _statement_lines(module: cst.Module, text: str) -> dict[cst.CSTNode, int] | None:
    """The line each top-level statement starts on, or None when ``ast`` and LibCST do
    not pair up."""
    try:
        body = parse_python(text).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    starts: dict[cst.CSTNode, int] = {}
    position = 0
    for statement in module.body:
        if position >= len(body):
            return None
        starts[statement] = body[position].lineno
        position += len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
    return starts if position == len(body) else None
