"""Parsing in pieces (the language server's re-parse after an edit) gives the tree a
whole-file parse gives, node for node, and reuses the statements an edit left alone."""

from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst
import pytest

from ddplint.analysis.children import child_nodes
from ddplint.code.syntax import incremental_parse, safe_parse
from ddplint.code.syntax.incremental_parse import IncrementalParser, split
from ddplint.code.syntax.python_ast import parse_python
from ddplint.code.syntax.safe_parse import ParseLimitExceeded, statement_nesting

ROOT = Path(__file__).resolve().parents[1]

TRICKY = """#!/usr/bin/env python
# header comment

# attached to the import
import os  # trailing
# c1

# c2
@decorator(
    1,
)
@other
def f():
    pass
    # indented comment after the block
# at column 0

  # odd indent
a = 1; b = 2
c = (1,
     2); d = 3
class A:
    def g(self):
        return 1
        # deep

    # class level
if a: b
else:
    c
try:
    pass
except ValueError:
    pass
finally:
    pass

# the end
"""


def _pieces_parse(parser: IncrementalParser, text: str) -> cst.Module | None:
    pieces = split(text, parse_python(text))
    list(parser.nesting(pieces, statement_nesting))
    return parser.assemble(pieces)


def _assert_same_tree(text: str, module: cst.Module) -> None:
    whole = cst.parse_module(text)
    assert module.deep_equals(whole)
    assert module.code == text
    for attribute in ("default_indent", "default_newline", "has_trailing_newline", "encoding"):
        assert getattr(module, attribute) == getattr(whole, attribute), attribute


def test_tricky_layout_matches_a_whole_parse() -> None:
    module = _pieces_parse(IncrementalParser(), TRICKY)
    assert module is not None
    _assert_same_tree(TRICKY, module)


@pytest.mark.parametrize(
    "text",
    [
        "def f():\n  return 1\n\nx = 1\n",  # two-space indentation, first block later
        "x = 1\n\ndef f():\n\treturn 1\n",  # tabs
        "import os\r\n\r\ndef f():\r\n    pass\r\n",  # CRLF
        "import os\nx = 1",  # no trailing newline
        "def f():\n    pass\n\x0c\nx = 1\n",  # a form feed on a line of its own
    ],
)
def test_indentation_and_line_ends_are_the_files(text: str) -> None:
    module = _pieces_parse(IncrementalParser(), text)
    assert module is not None
    _assert_same_tree(text, module)


@pytest.mark.parametrize(
    "text",
    [
        "def f():\n    return 1\n\ndef g():\n\treturn 2\n",  # mixed indentation
        "x = 1\n\n   \n\ny = 2\n",  # LibCST drops a blank line ending a piece
        "x = 1\n\x0cy = 2\n",  # a form feed LibCST leaves out of its code
        "x = 1\n",  # a single piece: nothing to gain
    ],
)
def test_pieces_that_cannot_stand_alone_mean_a_whole_parse(text: str) -> None:
    assert _pieces_parse(IncrementalParser(), text) is None


def test_an_edit_reparses_only_the_statement_it_changed() -> None:
    parser = IncrementalParser()
    before = _pieces_parse(parser, TRICKY)
    edited = TRICKY.replace("    pass\n    # indented", "    return 0\n    # indented")
    after = _pieces_parse(parser, edited)
    assert before is not None and after is not None
    _assert_same_tree(edited, after)
    pairs = zip(before.body, after.body, strict=True)
    changed = [position for position, (old, new) in enumerate(pairs) if old is not new]
    # The edited def, and the line after it: it owns the comment lines below the edit.
    assert changed == [1, 2]
    assert isinstance(after.body[1], cst.FunctionDef)
    again = _pieces_parse(parser, edited)
    assert again is not None
    assert all(old is new for old, new in zip(after.body, again.body, strict=True))


def test_repeated_statements_get_nodes_of_their_own() -> None:
    text = "import os\nprint(1)\nprint(1)\nprint(1)\n"
    module = _pieces_parse(IncrementalParser(), text)
    assert module is not None
    _assert_same_tree(text, module)
    calls = [s.body[0] for s in module.body[1:]]  # type: ignore[attr-defined]
    assert len({id(c) for c in calls}) == 3


def test_nesting_guard_runs_before_a_new_piece_is_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A deeply nested piece is refused by its ``ast`` nesting, LibCST never sees it."""
    parser = IncrementalParser()
    monkeypatch.setattr(incremental_parse, "_active", parser)
    parsed: list[str] = []
    real = incremental_parse._parse_alone
    monkeypatch.setattr(
        incremental_parse, "_parse_alone", lambda text: parsed.append(text) or real(text)
    )
    deep = "import os\nx = " + " and ".join(["a"] * 800) + "\n"
    with pytest.raises(ParseLimitExceeded, match="line 2 nests"):
        safe_parse.parse_module(deep)
    assert parsed == []


def test_parse_module_uses_pieces_when_enabled(monkeypatch: pytest.MonkeyPatch) -> None:
    parser = IncrementalParser()
    monkeypatch.setattr(incremental_parse, "_active", parser)
    first = safe_parse.parse_module(TRICKY)
    again = safe_parse.parse_module(TRICKY.replace("return 1", "return 2"))
    _assert_same_tree(TRICKY, first)
    assert first.body[1] is again.body[1]  # the decorated def, untouched
    bad = "import os\ndef f(:\n"
    with pytest.raises(cst.ParserSyntaxError):
        safe_parse.parse_module(bad)


@pytest.mark.slow
def test_every_python_file_of_this_repository_matches_a_whole_parse() -> None:
    """Our own sources, tests and fixtures (the real-code corpora are checked by
    ``bench/incremental_parse_check.py``)."""
    parser = IncrementalParser()
    assembled = 0
    for folder in ("lint", "rules", "tests", "fixtures", "bench", "scripts"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            try:
                parse_python(text)
                cst.parse_module(text)
            except (SyntaxError, ValueError, cst.ParserSyntaxError):
                continue  # fixtures of broken files
            module = _pieces_parse(parser, text)
            if module is not None:
                _assert_same_tree(text, module)
                assembled += 1
    assert assembled > 300


def test_pieces_past_the_limit_are_dropped_oldest_first_and_parsing_stays_right() -> None:
    parser = IncrementalParser(kept_characters=len(TRICKY))
    first = _pieces_parse(parser, TRICKY)
    other = "import sys\n\n\ndef main():\n    return sys.argv\n"
    _pieces_parse(parser, other)  # the tricky file's oldest pieces make room
    assert parser._characters <= len(TRICKY)
    assert "import sys\n\n\n" in parser._pieces
    again = _pieces_parse(parser, TRICKY)
    assert first is not None and again is not None
    _assert_same_tree(TRICKY, again)
    assert again.body[0] is not first.body[0]  # parsed anew: it had been dropped


def test_child_nodes_are_ast_iter_child_nodes_in_order() -> None:
    """The fast child list of the summaries and the nesting guard, on the engine's own
    sources: every node's children as ``ast`` lists them; without leaves, the same less
    the contexts and operators."""
    leaves = (ast.expr_context, ast.operator, ast.cmpop, ast.boolop, ast.unaryop)
    compared = 0
    for path in sorted((ROOT / "lint" / "engine").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            expected = list(ast.iter_child_nodes(node))
            assert child_nodes(node) == expected
            assert child_nodes(node, leaves=False) == [
                child for child in expected if not isinstance(child, leaves)
            ]
            compared += 1
    assert compared > 5_000


# Node kinds whose fields hold identifiers, numbers or flags, not nodes: what the fast
# child list and the import walk leave unread must hold no node.
PLAIN_FIELDS = """
from ..pkg import name as alias
import a.b as c
x: int = 1
def f(a, *args, b=2, **kw):  # type: (int) -> None
    global g
    def h():
        nonlocal a
    return f"{a!r:>{b}}"
async def k(xs):
    return [y async for y in xs]
match x:
    case {"k": 1, **rest}: pass
    case P(a, key=[1, *others]) | (q as r): pass
try:
    import d
except E as err:
    import e
else:
    from . import z
finally:
    import w
"""


def test_child_nodes_read_no_plain_field() -> None:
    """Every node's children as ``ast`` lists them, on node kinds the engine's sources
    lack (``global``, ``match`` patterns, conversions, type comments); the import walk
    reads the statements inside a statement as ``ast`` lists them."""
    from ddplint.analysis.names import _STATEMENT_HOLDERS, _statements_in

    leaves = (ast.expr_context, ast.operator, ast.cmpop, ast.boolop, ast.unaryop)
    kinds = set()
    for node in ast.walk(ast.parse(PLAIN_FIELDS, type_comments=True)):
        expected = list(ast.iter_child_nodes(node))
        assert child_nodes(node) == expected
        assert child_nodes(node, leaves=False) == [c for c in expected if not isinstance(c, leaves)]
        if isinstance(node, _STATEMENT_HOLDERS):
            holders = [c for c in expected if isinstance(c, _STATEMENT_HOLDERS)]
            assert _statements_in(node) == holders
        kinds.add(type(node).__name__)
    assert {"Global", "Nonlocal", "MatchMapping", "MatchClass", "MatchStar", "MatchAs"} <= kinds
    assert {"FormattedValue", "AnnAssign", "comprehension", "ExceptHandler", "alias"} <= kinds
