"""A module's text cut into *pieces* where its top-level statements start (CPython's
``ast`` says where): what the module summaries and the language server's incremental
parse (``incremental_parse``) keep per piece. No LibCST."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ddplint.source import split_lines


@dataclass(frozen=True)
class Piece:
    """A stretch of the file: its text and the line it starts on (1-based)."""

    text: str
    line: int
    statements: tuple[ast.stmt, ...]


def split(text: str, tree: ast.Module) -> list[Piece]:
    """The file's pieces, in order (one piece for a file without statements)."""
    lines = split_lines(text)
    starts: list[int] = []
    grouped: list[list[ast.stmt]] = []
    ended = 0  # the last line of the statement before
    for statement in tree.body:
        decorators = getattr(statement, "decorator_list", ())
        first = min([statement.lineno, *(d.lineno for d in decorators)])
        if first <= ended:  # ``a; b``: one LibCST statement line
            grouped[-1].append(statement)
        else:
            starts.append(first)
            grouped.append([statement])
        ended = max(ended, statement.end_lineno or statement.lineno)
    if not starts:
        return [Piece(text, 1, ())]
    cuts = [0, *(line - 1 for line in starts[1:]), len(lines)]
    return [
        Piece("".join(lines[begin:end]), begin + 1, tuple(statements))
        for begin, end, statements in zip(cuts[:-1], cuts[1:], grouped, strict=True)
    ]
