"""Whether a set's elements hash alike in every process (``analysis/element_hashing``):
ints, bools, floats and tuples of them are hashed by value; strings are salted per
process; what nothing shows counts as neither."""

from __future__ import annotations

import ast

import pytest

from ddplint.analysis.names import Names
from ddplint.analysis.set_iteration import SetIteration, SetValues

FUNCTION = """
import torch

def f(ids, names, model, t: torch.Tensor, counts: list[int], tags: set[str], n):
    chosen = [0, 3, 7]
    words = ["a", "b"]
    for k in {iterable}:
        pass
"""


def _ordered_alike(iterable: str) -> bool:
    """Whether DDP209's question finds the loop's set walked alike on every rank."""
    return _first_loop_iteration(FUNCTION.replace("{iterable}", iterable)) is None


def _first_loop_iteration(source: str) -> SetIteration | None:
    """The set the first ``for`` loop of ``source`` walks, as DDP209 asks it."""
    module = ast.parse(source)
    loop = next(n for n in ast.walk(module) if isinstance(n, ast.For))
    return SetValues(module, Names(module)).set_iteration(loop.iter)


@pytest.mark.parametrize(
    "iterable",
    [
        "{0, 5, 10}",
        "{True, 2.5}",
        "{(0, 1), (2, 3)}",
        "set(range(n))",
        "frozenset(range(3))",
        "{i * 2 for i in range(n)}",
        "{-i for i in chosen}",
        "{i * 2 for i in chosen}",
        "set(chosen) | {1}",
        "{(i, j) for i in range(n) for j in range(i)}",
        "{i for i, _ in enumerate(model.layers)}",
        "{len(x) for x in names}",
        "{int(x) for x in names}",
        "{x.item() for x in model.parameters()}",
        "set(t.tolist())",
        "set(counts)",
        "set(zip(chosen, range(3)))",
        "{not x for x in names}",
    ],
)
def test_values_hashed_by_value_are_walked_alike(iterable: str) -> None:
    assert _ordered_alike(iterable)


@pytest.mark.parametrize(
    "iterable",
    [
        "{'encoder', 'decoder'}",
        "{0, 'bias'}",
        "set(words)",
        "{str(i) for i in range(n)}",
        "{f'layer{i}' for i in range(n)}",
        "{i * 2 for i in ids}",  # `ids` may hold strings: "ab" * 2
        "{i * n for i in range(3)}",  # 3 * "ab" is a string
        "{p.name for p in model.parameters()}",
        "set(model.state_dict().keys())",
        "{x for x in names}",
        "tags",
        "set(ids)",
        "{None, 0}",  # None hashed by address before Python 3.12
        "set(t)",  # a tensor's rows are tensors: hashed by address
        "{(i, name) for i, name in enumerate(names)}",
    ],
)
def test_strings_and_unknown_elements_are_not_walked_alike(iterable: str) -> None:
    assert not _ordered_alike(iterable)


def test_a_shadowed_builtin_counts_nothing() -> None:
    source = FUNCTION.replace("{iterable}", "{len(x) for x in names}").replace(
        "import torch", "import torch\nfrom textwrap import shorten as len"
    )
    assert _first_loop_iteration(source) is not None


@pytest.mark.parametrize(
    ("iterable", "orderable"),
    [
        ("{'a', 'b'}", True),
        ("{f'x{i}' for i in n}", True),
        ("set(x)", False),
        ("frozenset(x) | {'a'}", False),
        ("list(set(x))", False),
        ("enumerate(set(x))", False),
        ("names", False),
        ("self.tracked", False),
        ("set(x).union(y)", False),
    ],
)
def test_set_iterations(iterable: str, orderable: bool) -> None:
    iteration = _first_loop_iteration(
        "class C:\n    def __init__(self):\n        self.tracked = set()\n"
        "    def f(self, x, y, n, names: set[str]):\n"
        f"        for k in {iterable}:\n            pass\n"
    )
    assert iteration is not None and iteration.orderable is orderable


@pytest.mark.parametrize(
    "iterable",
    ["{1, 2}", "set(range(3))", "d.keys()", "sorted(set(x))", "mixed", "[1, 2]", "s - t"],
)
def test_not_set_iterations(iterable: str) -> None:
    source = (
        f"mixed = set()\nmixed = []\ndef f(d, x, s, t):\n    for k in {iterable}:\n        pass\n"
    )
    assert _first_loop_iteration(source) is None
