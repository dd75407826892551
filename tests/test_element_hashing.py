"""Whether a set's elements hash alike in every process (``code/values/element_hashing``):
ints, bools, floats and tuples of them are hashed by value; strings are salted per
process; what nothing shows counts as neither."""

from __future__ import annotations

import libcst as cst
import pytest

from ddplint.code.context import CodeContext
from ddplint.code.values.set_iteration import SetValues
from ddplint.settings import LintOptions
from ddplint.source import SourceFile

OPTIONS = LintOptions(selected=(), project_root=".")

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
    source = FUNCTION.replace("{iterable}", iterable)
    ctx = CodeContext.parse(SourceFile.decode("t.py", source.encode()), OPTIONS)
    loop = ctx.index.nodes(cst.For)[0]
    return SetValues(ctx.index, ctx.names).set_iteration(loop.iter) is None


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
    ctx = CodeContext.parse(SourceFile.decode("t.py", source.encode()), OPTIONS)
    loop = ctx.index.nodes(cst.For)[0]
    assert SetValues(ctx.index, ctx.names).set_iteration(loop.iter) is not None
