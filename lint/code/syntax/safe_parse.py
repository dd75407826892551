"""Parse Python with LibCST without crashing or hanging on pathological nesting.

LibCST's native parser recurses once per nesting level (a few thousand levels overflow
the default 8 MiB stack: a segfault, not an exception) and takes time quadratic in the
nesting depth of a statement (``f(f(f(...)))`` 200 deep: about 0.6 s; ``a[0][0]...``
1,000 long: about 3 s). So before LibCST sees a file, CPython's own parser (C, runs no
code) checks it and the nesting of every statement is measured. The engine runs LibCST
on a large stack (``ddplint.deep_stack``) for what is let through.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ddplint.analysis.children import child_nodes
from ddplint.code.syntax.pieces import split
from ddplint.code.syntax.python_ast import parse_python
from ddplint.source import SourceError

if TYPE_CHECKING:  # the bounds (``too_large``) are asked of files no rule parses
    import libcst as cst

    from ddplint.code.syntax.incremental_parse import IncrementalParser

#: The sum over statements of (nesting depth)^2. LibCST costs about 0.02 ms per unit
#: in its worst shapes, so this bounds a file's parse at about 10 s. The real corpus
#: (Lightning, NeMo, transformers, accelerate, DeepSpeed: 6,022 files) peaks at 50,250
#: (deepspeed/runtime/engine.py); its deepest statement nests 22 levels.
MAX_NESTING_COST = 500_000

#: Files above this many ``syntax_units`` are not parsed: LibCST needs about 3 KB per
#: node (a 2 MB table literal took 59 s and 4.4 GB). The largest file of the real corpus
#: (11,000 library and research files) has 25,720.
MAX_SYNTAX_UNITS = 150_000

#: CPython's parser refuses these outright; Python could not run such a file either.
_CPYTHON_NESTING_LIMITS = ("too many nested parentheses", "too many levels of indentation")
_BRACKETS_OPEN, _BRACKETS_CLOSE = frozenset("([{"), frozenset(")]}")
#: Tokens after which LibCST nests one level deeper (operators, attribute access,
#: keywords of expressions, adjacent strings).
_CHAIN_WORDS = frozenset({"and", "or", "not", "lambda", "if", "else", "await", "in", "is", "for"})
_SEPARATORS = frozenset({",", ";", ":"})


class ParseLimitExceeded(Exception):
    """Valid code nested too deeply to parse in bounded time; the file is skipped."""


def parse_module(text: str) -> cst.Module:
    """``libcst.parse_module(text)``, after the nesting checks.

    Raises ``SourceError`` when Python's own parser rejects the nesting,
    ``ParseLimitExceeded`` when the nesting is beyond ``MAX_NESTING_COST`` or the file
    beyond ``MAX_SYNTAX_UNITS``, and
    ``libcst.ParserSyntaxError`` for invalid code.
    """
    import libcst as cst

    from ddplint.code.syntax import incremental_parse

    parser = incremental_parse.active()
    if parser is not None:
        module = _parse_in_pieces(text, parser)
        if module is not None:
            return module
    check_nesting(text)
    return cst.parse_module(text)


def _parse_in_pieces(text: str, parser: IncrementalParser) -> cst.Module | None:
    """The module from pieces (``ddplint.code.syntax.incremental_parse``), each piece's
    nesting checked before LibCST sees it; None where the whole file must be parsed
    (``check_nesting`` then says why a file cannot be)."""
    if syntax_units(text) > MAX_SYNTAX_UNITS:
        return None
    try:
        tree = parse_python(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    pieces = split(text, tree)
    _check_cost(parser.nesting(pieces, statement_nesting))
    return parser.assemble(pieces)


def syntax_units(source: str | bytes) -> int:
    """A cheap estimate of a file's size in syntax nodes (separators, lines, calls,
    assignments, attribute accesses), counted without tokenizing (on its text, or on
    its bytes: the marks are ASCII)."""
    if isinstance(source, bytes):
        return sum(source.count(mark.encode()) for mark in _UNIT_MARKS)
    return sum(source.count(mark) for mark in _UNIT_MARKS)


_UNIT_MARKS = (",", "\n", "(", "=", ".")


def too_large(source: str | bytes) -> str | None:
    """Why a file is too large to analyse in bounded memory (beyond
    ``MAX_SYNTAX_UNITS``), or None. Cheap: decided before any parse (a 2 MB generated
    table is skipped in well under a second, where parsing it took 25 s and 1 GB)."""
    units = syntax_units(source)
    if units <= MAX_SYNTAX_UNITS:
        return None
    return (
        f"too large to analyse in bounded memory (about {units:,} syntax units, "
        f"limit {MAX_SYNTAX_UNITS:,}: a generated table or vocabulary?)"
    )


def check_nesting(text: str) -> None:
    """Raise when ``text`` is too large or nested too deeply for LibCST (see
    ``parse_module``)."""
    problem = too_large(text)
    if problem is not None:
        raise ParseLimitExceeded(problem)
    try:
        tree = parse_python(text)
    except (RecursionError, MemoryError):
        raise SourceError("cannot parse: nested too deeply for Python's own parser") from None
    except SyntaxError as exc:
        if exc.msg in _CPYTHON_NESTING_LIMITS:
            raise SourceError(f"cannot parse: {exc.msg}", exc.lineno, exc.offset) from None
        # Newer syntax than this Python knows (LibCST may still parse it), or invalid
        # code: estimate the nesting from the tokens instead.
        _check_cost(_token_nesting(text))
        return
    check_tree_nesting(tree)


def check_tree_nesting(tree: ast.AST) -> None:
    """Raise ``ParseLimitExceeded`` when the statements of a tree CPython parsed nest
    beyond ``MAX_NESTING_COST``: the analysis core walks such a file's expressions as
    LibCST would parse them, so the same bound keeps its time bounded."""
    _check_cost(statement_nesting(tree))


def _check_cost(depths: Iterator[tuple[int, int]]) -> None:
    cost = 0
    deepest = (0, 0)  # (depth, -line): the first of the deepest statements
    for line, depth in depths:
        cost += depth * depth
        deepest = max(deepest, (depth, -line))
    if cost > MAX_NESTING_COST:
        depth, line = deepest[0], -deepest[1]
        raise ParseLimitExceeded(
            f"expressions nested too deeply to parse in bounded time (line {line} nests "
            f"{depth} levels; nesting cost above the limit of {MAX_NESTING_COST:,})"
        )


def statement_nesting(tree: ast.AST) -> Iterator[tuple[int, int]]:
    """(line, depth) of every statement: how deep the expressions below it nest, in
    LibCST's shape (``a and b and c`` and dotted import names nest there). Nested
    statements count on their own."""
    statements: list[ast.AST] = [tree]
    while statements:
        statement = statements.pop()
        deepest = 0
        stack: list[tuple[ast.AST, int]] = [(statement, 0)]
        while stack:
            node, depth = stack.pop()
            if isinstance(node, ast.BoolOp):
                depth += len(node.values) - 2
            elif isinstance(node, (ast.alias, ast.ImportFrom)):
                depth += (node.name if isinstance(node, ast.alias) else node.module or "").count(
                    "."
                )
            deepest = max(deepest, depth)
            for child in child_nodes(node):
                if isinstance(child, ast.stmt):
                    statements.append(child)
                else:
                    stack.append((child, depth + 1))
        yield getattr(statement, "lineno", 1), deepest


def _token_nesting(text: str) -> Iterator[tuple[int, int]]:
    """(line, estimated depth) of each logical line, from tokens: open brackets plus the
    operators chained at each open level. Used when Python's own parser rejects the file."""
    chained = [0]  # operators chained since the last separator, per open bracket level
    total = 0
    worst, start = 0, 1
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            kind, string = token.type, token.string
            if kind == tokenize.OP and string in _BRACKETS_OPEN:
                chained.append(0)
            elif kind == tokenize.OP and string in _BRACKETS_CLOSE and len(chained) > 1:
                total -= chained.pop()
                chained[-1] += 1
                total += 1
            elif kind == tokenize.OP and string in _SEPARATORS:
                total -= chained[-1]
                chained[-1] = 0
            elif kind in (tokenize.OP, tokenize.STRING) or string in _CHAIN_WORDS:
                chained[-1] += 1
                total += 1
            elif kind == tokenize.NEWLINE:
                yield start, worst
                chained, total, worst, start = [0], 0, 0, token.end[0] + 1
            worst = max(worst, len(chained) + total)
    except (tokenize.TokenError, SyntaxError):
        pass  # the file is invalid: LibCST will say where
    yield start, worst
