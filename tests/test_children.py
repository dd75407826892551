"""``ddplint.analysis.children``: the compiled children listers give what
``ast.iter_child_nodes`` and ``ast.walk`` give, node for node, on every fixture and on
modules of the standard library (every statement and expression form among them)."""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import inspect
import sys
import typing
from pathlib import Path

import pytest

from ddplint.analysis.children import _children_by_fields, child_nodes, walk

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
#: Leaves: what ``leaves=False`` leaves out.
LEAVES = (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop)
#: Every form of the grammar at once, the rare ones among them (``match``, ``**`` in a
#: dict display, keyword-only parameters without defaults, async comprehensions).
FORMS = """
import a.b as c
from .x import (y as z, w)
@deco(1)
async def f(p, /, q: int = 1, *args, r, s=2, **kw) -> "T":
    global g
    x: list[int] = [i async for i in q if i]
    y = {**kw, "k": 1, **{}}
    z = {i: j for i, j in kw.items()}
    w = (lambda u=1, *, v: u + v)(1, v=2)
    del x[0], y["k"]
    async with a as (b, c), d:
        await b
    async for e in c:
        e += 1; e @= 2
    try:
        pass
    except ValueError as err:
        raise RuntimeError() from err
    else:
        pass
    finally:
        assert x, "m"
    match p:
        case {"k": 1, **rest} | [1, *_, 2] if rest:
            pass
        case Point(x=0, y=_) | None | 1.5 as pt:
            pass
    while not x:
        break
    return f"{x!r:>{y}}" if x < y <= z else x[1:2:3], (yield), (yield from q)
class K(B, metaclass=M):
    def m(self):
        nonlocal_name = 1
        return [*self, *()], {1, 2}, not -~1
"""
#: ``except*`` (Python 3.11 on).
GROUPS = """
try:
    pass
except* ValueError as err:
    raise RuntimeError() from err
"""


def _trees() -> list[ast.AST]:
    sources = [FORMS, *(inspect.getsource(m) for m in (ast, asyncio.tasks, dataclasses, typing))]
    if sys.version_info >= (3, 11):
        sources.append(GROUPS)
    sources += [p.read_text(encoding="utf-8") for p in sorted(FIXTURES.rglob("*.py"))]
    trees = []
    for source in sources:
        try:
            trees.append(ast.parse(source))
        except SyntaxError:
            continue  # fixtures of unreadable files
    return trees


@pytest.fixture(scope="module")
def nodes() -> list[ast.AST]:
    return [node for tree in _trees() for node in ast.walk(tree)]


def test_children_are_ast_children(nodes: list[ast.AST]) -> None:
    assert len({type(node) for node in nodes}) > 90
    for node in nodes:
        plain = list(ast.iter_child_nodes(node))
        assert child_nodes(node) == plain
        assert child_nodes(node, leaves=False) == [n for n in plain if not isinstance(n, LEAVES)]
        assert child_nodes(node) == _children_by_fields(node, True)


def test_walk_is_ast_walk() -> None:
    for tree in _trees()[:40]:
        plain = list(ast.walk(tree))
        assert list(walk(tree)) == plain
        assert list(walk(tree, leaves=False)) == [n for n in plain if not isinstance(n, LEAVES)]


def test_nodes_built_without_fields() -> None:
    """A node made by hand without its context, or with a ``None`` where a list item
    may be one, is read field by field."""
    name = ast.Name(id="x")
    attribute = ast.Attribute(value=name, attr="a")
    assert child_nodes(attribute) == [name]
    assert child_nodes(name) == []
    empty = ast.Return()
    assert child_nodes(empty) == list(ast.iter_child_nodes(empty))
    display = ast.Dict(keys=[None, name], values=[name, name])
    assert child_nodes(display) == [name, name, name]
