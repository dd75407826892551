"""Declared defaults on LibCST (the ``ast`` ones, and run-order traces, are tested in
``analysis/test_timeouts_and_order.py``)."""

from __future__ import annotations

import libcst as cst
import pytest

from ddplint.code.context import CodeContext
from ddplint.code.values.fallback_defaults import fallback_default
from ddplint.settings import LintOptions
from ddplint.source import SourceFile

OPTIONS = LintOptions(selected=(), project_root=".")


def context(code: str) -> CodeContext:
    return CodeContext.parse(SourceFile.decode("t.py", code.encode()), OPTIONS)


def last_call_argument(ctx: CodeContext) -> cst.BaseExpression:
    """The argument of the last ``g(...)`` call of the snippet."""
    calls = [c for c in ctx.index.nodes(cst.Call) if ctx.node_text(c.func) == "g"]
    return calls[-1].args[0].value


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("def f(n=0):\n    g(n)", 0),
        ("def f(n=0):\n    n = max(n, 1)\n    g(n)", None),
        ("def f(n):\n    g(n)", None),
        (
            "import argparse\np = argparse.ArgumentParser()\n"
            "p.add_argument('--num-workers', type=int, default=2)\n"
            "def f(args):\n    g(args.num_workers)",
            2,
        ),
        (
            "p.add_argument('-w', dest='workers', default=0)\ndef f(args):\n    g(args.workers)",
            0,
        ),
        ("p.add_argument('--shuffle', action='store_true')\ndef f(a):\n    g(a.shuffle)", False),
        ("p.add_argument('--no-sort', action='store_false')\ndef f(a):\n    g(a.no_sort)", True),
        ("p.add_argument('--verbose', action='count')\ndef f(a):\n    g(a.verbose)", None),
        ("class C:\n    workers: int = 0\ndef f(cfg):\n    g(cfg.workers)", 0),
        (
            "class C:\n    workers: int = 0\nclass D:\n    workers: int = 4\n"
            "def f(cfg):\n    g(cfg.workers)",
            None,
        ),
        (
            "class M:\n    def __init__(self, k=0):\n        self.k = k\n"
            "    def run(self):\n        g(self.k)",
            0,
        ),
    ],
)
def test_fallback_default(code: str, expected: object) -> None:
    ctx = context(code)
    found = fallback_default(ctx.index, last_call_argument(ctx))
    assert (found.value if found is not None else None) == expected
