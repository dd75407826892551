"""Module globals bound once to the rank: the module is solved once for them, however
many module-level calls of its functions (each asking the function's summary, which
asks the globals again) it holds."""

from __future__ import annotations

import ast

import pytest

from ddplint.analysis.functions import ModuleAnalysis


def _script(calls: int) -> str:
    lines = ["import os", "RANK = int(os.environ['RANK'])"]
    lines += [f"def h{i}(r):\n    return r, r + 1" for i in range(calls)]
    lines += [f"a{i}, b{i} = h{i}(RANK)" for i in range(calls)]
    return "\n".join(lines) + "\n"


def test_many_module_level_calls_solve_the_module_once(monkeypatch: pytest.MonkeyPatch) -> None:
    solved: list[int] = []
    solve = ModuleAnalysis._solve_rank_globals

    def counting(self: ModuleAnalysis) -> object:
        solved.append(1)
        return solve(self)

    monkeypatch.setattr(ModuleAnalysis, "_solve_rank_globals", counting)
    analysis = ModuleAnalysis(ast.parse(_script(200)))
    h0 = next(f for f in analysis.nodes.functions() if f.name == "h0")
    analysis.function(h0)
    assert len(solved) == 1
