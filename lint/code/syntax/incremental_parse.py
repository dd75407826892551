"""Parse a module again after an edit: only the top-level statements whose text changed.

An editor re-lints a file on every change; LibCST takes about 170 ms for 2,000 lines,
and an edit seldom touches more than one top-level statement. The file is cut into
*pieces* where a top-level statement starts (CPython's ``ast`` says where: its first
decorator's line, or its own); each piece (a statement and the blank and comment lines
after it; the first piece also holds the file's header) is parsed alone and kept by its
text, and the module is put together from the pieces' statements.

Putting it together: the lines a piece parsed alone leaves in its module's footer are
the leading lines of the next piece's first statement (LibCST gives a statement the
lines above it); the module's header, indentation, line end and trailing newline are
those of the whole file. Where a piece alone does not regenerate its own text, pieces
disagree on the indentation or the line end, or LibCST rejects a piece, the caller
parses the whole file instead (``assemble`` returns None). ``tests/test_incremental_parse``
compares the result with a whole-file parse node for node.

Used by the language server only (``enable``); a one-off run parses each file whole.
"""

from __future__ import annotations

import ast
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import libcst as cst

from ddplint.code.syntax.pieces import Piece
from ddplint.code.syntax.pieces import split as split

#: Characters of piece text whose trees are kept between runs: about 40 files of 2,000
#: lines (their trees and walks take about 110 MB per million characters, measured).
KEPT_CHARACTERS = 2_000_000
#: LibCST's indentation when a module has no indented block.
_DEFAULT_INDENT = " " * 4
#: Clauses whose bodies are a top-level compound statement's own blocks.
_CLAUSES = (
    cst.Else,
    cst.If,
    cst.ExceptHandler,
    cst.ExceptStarHandler,
    cst.Finally,
    cst.MatchCase,
)

#: The fields of a compound statement or clause that hold blocks or further clauses.
_BLOCK_FIELDS = ("body", "orelse", "handlers", "finalbody", "cases")

Nesting = tuple[tuple[int, int], ...]
#: A statement of a module's body.
Statement = cst.SimpleStatementLine | cst.BaseCompoundStatement


@dataclass
class _Parsed:
    """What one piece text gave, alone: its nesting (line within the piece, depth) and,
    once asked, its module (None: the piece cannot stand alone)."""

    nesting: Nesting
    module: cst.Module | None = None
    parsed: bool = False
    #: The first statement given the lines of the piece before it, and that piece's text.
    joined: tuple[str, Statement] | None = None


class IncrementalParser:
    """Pieces parsed alone, by text, the least recently used dropped past
    ``KEPT_CHARACTERS``. One file is parsed at a time (a lock guards the pieces)."""

    def __init__(self, kept_characters: int = KEPT_CHARACTERS) -> None:
        self._kept = kept_characters
        self._pieces: OrderedDict[str, _Parsed] = OrderedDict()
        self._characters = 0
        self._lock = threading.Lock()

    def nesting(
        self, pieces: Sequence[Piece], measure: Callable[[ast.stmt], Iterator[tuple[int, int]]]
    ) -> Iterator[tuple[int, int]]:
        """(line, depth) of every statement of the file, by ``measure`` (the nesting
        guard's measure of one top-level statement), remembered per piece text."""
        for piece in pieces:
            parsed = self._entry(piece, measure)
            shift = piece.line - 1
            for line, depth in parsed.nesting:
                yield line + shift, depth

    def assemble(self, pieces: Sequence[Piece]) -> cst.Module | None:
        """The module put together from its pieces, parsing only pieces not seen before;
        None where the whole file must be parsed instead. Call after ``nesting``
        accepted every piece; raises nothing LibCST's parser raises."""
        if len(pieces) < 2:
            return None
        parts: list[tuple[cst.Module, _Parsed | None]] = []
        used: set[int] = set()
        for piece in pieces:
            entry = self._parsed(piece)
            module = entry.module if entry is not None else _parse_alone(piece.text)
            if module is not None and id(module) in used:
                # The same text twice: each place needs nodes of its own.
                entry, module = None, _parse_alone(piece.text)
            if module is None:
                return None
            used.add(id(module))
            parts.append((module, entry))
        return _put_together(parts, [piece.text for piece in pieces])

    def _entry(
        self, piece: Piece, measure: Callable[[ast.stmt], Iterator[tuple[int, int]]]
    ) -> _Parsed:
        with self._lock:
            parsed = self._pieces.get(piece.text)
            if parsed is not None:
                self._pieces.move_to_end(piece.text)
                return parsed
        shift = piece.line - 1
        nesting = tuple(
            (line - shift, depth)
            for statement in piece.statements
            for line, depth in measure(statement)
        )
        parsed = _Parsed(nesting)
        with self._lock:
            self._pieces[piece.text] = parsed
            self._characters += len(piece.text)
            while self._characters > self._kept and len(self._pieces) > 1:
                text, _ = self._pieces.popitem(last=False)
                self._characters -= len(text)
        return parsed

    def _parsed(self, piece: Piece) -> _Parsed | None:
        """The piece's entry, parsed; None when it was dropped since ``nesting``."""
        with self._lock:
            entry = self._pieces.get(piece.text)
        if entry is not None and not entry.parsed:
            entry.module = _parse_alone(piece.text)
            entry.parsed = True
        return entry


def _parse_alone(text: str) -> cst.Module | None:
    """The piece parsed as a module of its own; None when that does not give back its
    exact text (LibCST drops a whitespace-only line at the end of a file, a form feed)
    or LibCST rejects it."""
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError:
        return None
    return module if module.code == text else None


def _put_together(
    parts: list[tuple[cst.Module, _Parsed | None]], texts: list[str]
) -> cst.Module | None:
    """One module from pieces parsed alone (with their entries, where kept); None when
    they disagree on the indentation or the line end (a file that mixes them is parsed
    whole)."""
    modules = [module for module, _ in parts]
    indents = {m.default_indent for m in modules if any(map(_has_indented_block, m.body))}
    newlines = {m.default_newline for m in modules}
    if len(indents) > 1 or len(newlines) > 1:
        return None
    body: list[Statement] = []
    for position, (module, entry) in enumerate(parts):
        statements = list(module.body)
        carried = modules[position - 1].footer if position else ()
        if carried:
            statements[0] = _joined(statements[0], carried, entry, texts[position - 1])
        body.extend(statements)
    first, last = modules[0], modules[-1]
    return cst.Module(
        body=body,
        header=first.header,
        footer=last.footer,
        encoding=first.encoding,
        default_indent=indents.pop() if indents else _DEFAULT_INDENT,
        default_newline=first.default_newline,
        has_trailing_newline=last.has_trailing_newline,
    )


def _joined(
    statement: Statement,
    carried: Sequence[cst.EmptyLine],
    entry: _Parsed | None,
    previous: str,
) -> Statement:
    """``statement`` with the lines the piece before left as its own leading lines; the
    same node as last time when the piece before is the same text (analyses that
    remember nodes between runs keep what they know)."""
    if entry is not None and entry.joined is not None and entry.joined[0] == previous:
        return entry.joined[1]
    joined = statement.with_changes(leading_lines=[*carried, *statement.leading_lines])
    if entry is not None:
        entry.joined = (previous, joined)
    return joined


def _has_indented_block(node: cst.CSTNode) -> bool:
    """Whether a top-level statement (or one of its clauses) has an indented body."""
    if not isinstance(node, (cst.BaseCompoundStatement, *_CLAUSES)):
        return False
    for name in _BLOCK_FIELDS:
        value = getattr(node, name, None)
        items = value if isinstance(value, (tuple, list)) else (value,)
        for item in items:
            if isinstance(item, cst.IndentedBlock):
                return True
            if isinstance(item, _CLAUSES) and _has_indented_block(item):
                return True
    return False


_active: IncrementalParser | None = None


def enable() -> IncrementalParser:
    """Parse files incrementally in this process from now on (the language server)."""
    global _active
    if _active is None:
        _active = IncrementalParser()
    return _active


def active() -> IncrementalParser | None:
    """The process's incremental parser, or None when files are parsed whole."""
    return _active
