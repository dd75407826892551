"""Constant values and declared defaults on ``ast`` (``analysis.constants``,
``analysis.fallback_defaults``)."""

from __future__ import annotations

import ast

import pytest

from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.literal_values import UNKNOWN


def last_g_argument(analysis: ModuleAnalysis) -> tuple[ast.expr, ast.AST]:
    """The argument of the last ``g(...)`` call of the snippet, and the call's scope."""
    found = [
        (call.args[0], scope)
        for scope, calls in analysis.nodes.calls_by_scope.items()
        for call in calls
        if isinstance(call.func, ast.Name) and call.func.id == "g"
    ]
    return max(found, key=lambda pair: (pair[0].lineno, pair[0].col_offset))


CONSTANTS = [
    ("g(30 * 60)", 1800),
    ("g(-2.5)", -2.5),
    ("g('a' 'b')", "ab"),
    ("g(True)", True),
    ("g(None)", None),
    ("g(not True)", UNKNOWN),
    ("g(1 / 0)", UNKNOWN),
    ("g(b'x')", UNKNOWN),
    ("TIMEOUT = 30 * 60\ndef f():\n    g(TIMEOUT)", 1800),
    ("N = 2\nM = N * 3\ng(M)", 6),
    ("def f():\n    n = 4\n    g(n)", 4),
    ("def f():\n    n = 4\n    n = 5\n    g(n)", UNKNOWN),
    ("def f():\n    n = 4\n    n += 1\n    g(n)", UNKNOWN),
    ("def f():\n    for n in range(3):\n        pass\n    n = 1\n    g(n)", UNKNOWN),
    ("def f(n=3):\n    g(n)", UNKNOWN),
    ("n = 1\ndef f():\n    g(n)", 1),
    ("n = 1\ndef f():\n    n, m = 2, 3\n    g(n)", UNKNOWN),
    ("n = 1\ndef f():\n    g([n for n in range(2)][0])", UNKNOWN),
    ("def f():\n    n = 1\n    h = lambda: g(n)", 1),
    ("def f():\n    n = 1\n    def n():\n        pass\n    g(n)", UNKNOWN),
    ("import os as n\ng(n)", UNKNOWN),
]


@pytest.mark.parametrize(("code", "expected"), CONSTANTS)
def test_constant_value(code: str, expected: object) -> None:
    analysis = ModuleAnalysis(ast.parse(code))
    expression, scope = last_g_argument(analysis)
    assert analysis.constants.value(expression, scope) == expected


DEFAULTS = [
    ("def f(n=0):\n    g(n)", 0, "the parameter `n` of `f()` defaults to"),
    ("def f(*, n=2):\n    g(n)", 2, "the parameter `n` of `f()` defaults to"),
    ("def f(n=0, /):\n    g(n)", None, None),
    ("def f(n=0):\n    n = max(n, 1)\n    g(n)", None, None),
    ("def f(n):\n    g(n)", None, None),
    (
        "import argparse\np = argparse.ArgumentParser()\n"
        "p.add_argument('--num-workers', type=int, default=2)\n"
        "def f(args):\n    g(args.num_workers)",
        2,
        "the option `--num-workers` defaults to",
    ),
    (
        "W = 3\np.add_argument('-w', dest='workers', default=W)\ndef f(args):\n    g(args.workers)",
        3,
        "the option `-w` defaults to",
    ),
    ("p.add_argument('--shuffle', action='store_true')\ndef f(a):\n    g(a.shuffle)", False, ""),
    ("p.add_argument('--no-sort', action='store_false')\ndef f(a):\n    g(a.no_sort)", True, ""),
    ("p.add_argument('--verbose', action='count')\ndef f(a):\n    g(a.verbose)", None, None),
    ("class C:\n    workers: int = 0\ndef f(cfg):\n    g(cfg.workers)", 0, "the field `C.workers`"),
    (
        "class C:\n    workers: int = 0\nclass D:\n    workers: int = 4\n"
        "def f(cfg):\n    g(cfg.workers)",
        None,
        None,
    ),
    (
        "class M:\n    def __init__(self, k=0):\n        self.k = k\n"
        "    def run(self):\n        g(self.k)",
        0,
        "the parameter `k` of `__init__()`",
    ),
    (
        "class M:\n    def __init__(self, k=0):\n        self.k = k\ndef run(self):\n    g(self.k)",
        None,
        None,
    ),
    ("class C:\n    w: int = 0\ndef f(cfg):\n    w = cfg.w\n    g(w)", 0, "the field `C.w`"),
]


@pytest.mark.parametrize(("code", "expected", "where"), DEFAULTS)
def test_fallback_default(code: str, expected: object, where: str | None) -> None:
    analysis = ModuleAnalysis(ast.parse(code))
    found = analysis.fallback_defaults.of(*last_g_argument(analysis))
    assert (found.value if found is not None else None) == expected
    if where is not None:
        assert found is not None and found.where.startswith(where)


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("common = dict(a=1, b=x)\ng(**common)", {"a": "1", "b": "x"}),
        ("common = {'a': 1, k: 2}\ng(**common)", {"a": "1"}),
        ("common = dict(a=1)\ncommon = dict(a=2)\ng(**common)", {}),
        ("common = make()\ng(**common)", {}),
        ("SETTINGS = {'a': 1}\ndef f():\n    g(**SETTINGS)", {"a": "1"}),
        ("def f(common):\n    g(**common)", {}),
    ],
)
def test_spread_keywords(code: str, expected: dict[str, str]) -> None:
    analysis = ModuleAnalysis(ast.parse(code))
    ((scope, call),) = [
        (s, c)
        for s, calls in analysis.nodes.calls_by_scope.items()
        for c in calls
        if isinstance(c.func, ast.Name) and c.func.id == "g"
    ]
    found = analysis.constants.spread_keywords(call, scope)
    assert {k: ast.unparse(v) for k, v in found.items()} == expected
