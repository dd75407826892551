"""The module summary's walks: the one walk of a piece that reads both its dotted names
(``module_summary._uses``) and what it says about reaching code by name
(``ReachReader``) gives what ``reach_names``' own breadth-first walk gives, on every
fixture and where the two walks meet nodes in different orders."""

from __future__ import annotations

import ast
from pathlib import Path

from ddplint.code.project.module_summary import _names, _uses
from ddplint.code.project.reach_names import ReachReader, reach_names
from ddplint.code.syntax.pieces import split

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

#: Loads by computed names at different depths, star imports, a load whose result is
#: read, ``__all__``, ``getattr`` by a computed name, inside a class and at the top.
LOADS = """
import importlib
from .a import *
class Registry:
    def load(self, name):
        if name:
            return importlib.import_module(f"models.{name}").Net
        return getattr(self.table, name)
from .b import *
plugin = importlib.import_module("plugins." + kind)
__all__ = ["Registry", "load"]
def run():
    runpy.run_module("pkg.tool:main")
"""


def _pieces(text: str) -> list[list[ast.stmt]]:
    return [list(piece.statements) for piece in split(text, ast.parse(text))]


def _fixture_pieces() -> list[list[ast.stmt]]:
    found = []
    for path in sorted(FIXTURES.rglob("*.py")):
        try:
            found.extend(_pieces(path.read_text(encoding="utf-8")))
        except (SyntaxError, ValueError):
            continue
    return found


def test_one_walk_reads_what_reach_names_reads() -> None:
    read = 0
    for statements in _fixture_pieces():
        expected = reach_names(statements)
        assert _names(statements).reach == expected
        read += bool(expected)
    assert read > 100


def test_walk_orders_that_differ_fall_back_to_the_breadth_first_part() -> None:
    """One piece whose loads the summary's walk meets out of ``ast.walk``'s order: the
    reader says so, and the piece's part is ``reach_names``'."""
    module = ast.parse(LOADS)
    statements = list(module.body)
    reader = ReachReader()
    _uses(statements, reader)
    assert not reader.ordered()
    expected = reach_names(statements)
    assert [load[0] for load in expected["loads"]] == ["plugins.", "models."]
    assert expected["star"] == [".a", ".b"]
    assert reader.part(statements) != expected  # the walk's own order differs
    assert _names(statements).reach == expected
    assert expected["strings"] == ["Registry", "load", "pkg.tool:main"]
    assert expected["lookups"] == ["self.table"]


def test_one_load_takes_the_one_walk() -> None:
    statements = _pieces(LOADS)[2]  # the class: one load, its attribute read
    reader = ReachReader()
    _uses(statements, reader)
    assert reader.ordered()
    assert reader.part(statements) == reach_names(statements)
    assert reach_names(statements)["loads"] == [["models.", "Net"]]
