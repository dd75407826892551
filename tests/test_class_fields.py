"""The class-fields fixed point (``ModuleAnalysis._fields_of``): a later round solves
again only the methods that read a field that changed, with the same answers as
solving every method every round."""

from __future__ import annotations

import ast

import pytest

from ddplint.analysis import functions
from ddplint.analysis.functions import ModuleAnalysis

# Three rounds before the fields settle: ``mine`` in the first, ``shard`` (read from
# ``mine``) in the second, ``flag`` (read from ``shard``) in the third; ``reset``
# reads no field that changes.
CHAINED = """
import torch.distributed as dist


class Trainer:
    def __init__(self):
        self.mine = dist.get_rank()

    def setup(self):
        self.shard = self.mine * 2

    def reset(self):
        self.count = 0

    def step(self):
        self.flag = self.shard > 1
"""


def _solve(code: str, every_round: bool) -> tuple[dict, list[str]]:
    """The fields of the module's first class, and the methods solved, in order."""
    tree = ast.parse(code)
    owner = next(node for node in tree.body if isinstance(node, ast.ClassDef))
    analysis = ModuleAnalysis(tree)
    solved: list[str] = []
    divergence = ModuleAnalysis._divergence

    def counted(self: ModuleAnalysis, scope: ast.AST, *args: object, **kwargs: object) -> object:
        solved.append(getattr(scope, "name", ""))
        return divergence(self, scope, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ModuleAnalysis, "_divergence", counted)
        if every_round:  # the fixed point before the worklist: every method every round
            patch.setattr(functions, "_fields_read", lambda method: None)
        return analysis._fields_of(owner), solved


def test_a_later_round_solves_only_methods_reading_a_changed_field() -> None:
    fields, solved = _solve(CHAINED, every_round=False)
    every, solved_every = _solve(CHAINED, every_round=True)
    assert set(fields) == {"self.mine", "self.shard", "self.flag"}
    assert fields == every
    # Every round solves all four methods (four rounds: the last finds no change);
    # the worklist solves each once, then only the methods that spell a field that
    # changed since they were last solved: ``__init__`` and ``setup`` after ``mine``
    # changes, ``setup`` and ``step`` after ``shard``, ``step`` after ``flag``.
    assert solved_every == ["__init__", "setup", "reset", "step"] * 4
    first = ["__init__", "setup", "reset", "step"]
    assert solved == [*first, "__init__", "setup", "setup", "step", "step"]


def test_a_method_binding_self_is_solved_every_round() -> None:
    rebinding = (
        CHAINED + "\n    def swap(self, other):\n        self = other\n        self.count = 1\n"
    )
    fields, solved = _solve(rebinding, every_round=False)
    every, _ = _solve(rebinding, every_round=True)
    assert fields == every
    assert solved.count("reset") == 1
    assert solved.count("swap") == 4  # every round: a rebinding drops any field


def test_fields_read_are_the_self_fields_spelled() -> None:
    method = ast.parse(
        "def f(self):\n    x = self.a.b\n    def g():\n        return self.c\n    self.d = x\n"
    ).body[0]
    assert isinstance(method, ast.FunctionDef)
    assert functions._fields_read(method) == {"self.a", "self.c", "self.d"}
    rebinding = ast.parse("def f(self):\n    self = None\n").body[0]
    assert isinstance(rebinding, ast.FunctionDef)
    assert functions._fields_read(rebinding) is None
