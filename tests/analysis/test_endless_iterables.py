"""Generators that never run out (``analysis.endless_iterables``)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from ddplint.analysis.endless_iterables import is_endless_generator


def _function(source: str) -> ast.FunctionDef:
    node = ast.parse(textwrap.dedent(source)).body[0]
    assert isinstance(node, ast.FunctionDef)
    return node


@pytest.mark.parametrize(
    "source",
    [
        "def f(xs):\n    while True:\n        yield from xs\n",
        "def f(xs):\n    while 1:\n        for x in xs:\n            if x:\n                break\n"
        "            yield x\n",
        "def f(q):\n    with q:\n        while True:\n            try:\n"
        "                yield q.get()\n"
        "            except KeyError:\n                continue\n",
        "def f(xs):\n    while True:\n        def inner():\n            return 1\n"
        "        yield inner()\n",
    ],
)
def test_endless(source: str) -> None:
    assert is_endless_generator(_function(source))


@pytest.mark.parametrize(
    "source",
    [
        "def f(xs):\n    for x in xs:\n        yield x\n",
        "def f(q):\n    while True:\n        x = q.get()\n        if x is None:\n"
        "            break\n        yield x\n",
        "def f(xs):\n    while True:\n        for x in xs:\n            yield x\n"
        "        else:\n            break\n",
        "def f(q):\n    while True:\n        try:\n            yield q.get()\n"
        "        except KeyError:\n            break\n",
        "def f(xs):\n    while True:\n        yield xs\n        return\n",
        "def f(flag, xs):\n    if flag:\n        while True:\n            yield xs\n",
        "def f(xs):\n    while True:\n        pass\n",
        "def f(xs):\n    while xs:\n        yield xs.pop()\n",
    ],
)
def test_not_endless(source: str) -> None:
    assert not is_endless_generator(_function(source))
