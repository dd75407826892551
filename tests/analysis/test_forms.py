"""``analysis.forms``: the forms a module holds, read off its ``ast`` (the screens that
spare a file its LibCST parse), each both ways."""

from __future__ import annotations

import ast
import textwrap

import pytest

from ddplint.analysis.forms import (
    caught_exception_names,
    defines,
    loops_over_selected_values,
    may_iterate_a_set,
    may_shard_by_rank,
    mentions,
    passes_true,
)


def _module(code: str) -> ast.Module:
    return ast.parse(textwrap.dedent(code))


@pytest.mark.parametrize(
    "code",
    [
        "for k in {'a', 'b'}:\n    f(k)",
        "xs = [k for k in set(names)]",
        "names = frozenset(x)\nfor n in names:\n    pass",
        "def f(keys: set[str]):\n    for k in keys:\n        pass",
        "def f(keys: typing.AbstractSet):\n    return [k for k in keys]",
        "seen: Set[str]\nasync def g():\n    async for k in seen:\n        pass",
        "for k in sorted(x):\n    pass\nlookup = {k for k in y}",
    ],
)
def test_a_loop_and_a_set_may_iterate_a_set(code: str) -> None:
    assert may_iterate_a_set(_module(code))


@pytest.mark.parametrize(
    "code",
    [
        "for k in ['a', 'b']:\n    f(k)",  # a list, no set anywhere
        "xs = {'a': 1}\nfor k in xs:\n    pass",  # a dict
        "names = {'a', 'b'}\nprint(names)",  # a set, but nothing loops
        "def f(keys: list[str]):\n    for k in keys:\n        pass",
        "for k in my.set_of_keys():\n    pass",  # a method, not the builtin
    ],
)
def test_no_loop_or_no_set_iterates_no_set(code: str) -> None:
    assert not may_iterate_a_set(_module(code))


@pytest.mark.parametrize(
    "code",
    [
        "for c in labels.unique():\n    log(c)",
        "for c in torch.unique(y):\n    log(c)",
        "for lang in set(batch['lang']):\n    log(lang)",
        "acc = {f'acc/{c}': 1 for c in y.tolist()}",
        "for i, c in enumerate(y.nonzero()):\n    pass",
        "xs = [c for c in sorted(y.bincount())]",
    ],
)
def test_a_loop_over_selected_values(code: str) -> None:
    assert loops_over_selected_values(_module(code))


@pytest.mark.parametrize(
    "code",
    [
        "for c in range(num_classes):\n    log(c)",
        "for c in labels:\n    log(c)",
        "classes = y.unique()\nprint(classes)",  # selected, but not looped over here
        "for c in self.classes:\n    y.unique()",  # the selection is in the body
    ],
)
def test_no_loop_over_selected_values(code: str) -> None:
    assert not loops_over_selected_values(_module(code))


@pytest.mark.parametrize(
    "code",
    [
        "part = files[rank::world_size]",
        "part = files[rank * k + w::world * k]",
        "part = data[rank * n // w:(rank + 1) * n // w]",
        "import numpy as np\npart = np.array_split(data, w)[rank]",
        "from numpy import array_split as cut\npart = cut(data, w)[rank]",
        "part = torch.chunk(data, w)[rank]",
        "import itertools\nstream = itertools.islice(items, rank, None, world)",
        "from itertools import islice as take\nstream = take(items, rank, None, world)",
        "keep = [x for i, x in enumerate(xs) if i % world == rank]",
        "if rank != i % world:\n    pass",
    ],
)
def test_a_rank_shard_form(code: str) -> None:
    assert may_shard_by_rank(_module(code))


@pytest.mark.parametrize(
    "code",
    [
        "part = files[rank:]",  # no step
        "part = files[::2]",  # a step, no start
        "part = data[start:end]",  # bounds that are not floor divisions
        "name = path.split('.')[0]",  # an index into a call that splits no array
        "stream = itertools.islice(items, 10)",  # islice with two arguments
        "last = (i % world) + 1 == rank",  # a remainder inside a longer side
        "if i % world < rank:\n    pass",
    ],
)
def test_not_a_rank_shard_form(code: str) -> None:
    assert not may_shard_by_rank(_module(code))


@pytest.mark.parametrize(
    ("code", "passes"),
    [
        ("self.log('loss', x, sync_dist=True)", True),
        ("rank_zero_only(self.log)('loss', x, sync_dist=True)", True),
        ("def f():\n    return g(sync_dist=True, on_step=False)", True),
        ("self.log('loss', x, sync_dist=False)", False),
        ("self.log('loss', x, sync_dist=flag)", False),  # not a literal True
        ("self.log('loss', x, on_step=True)", False),
        ("sync_dist = True\nself.log('loss', x)", False),  # a name, not a keyword
    ],
)
def test_passes_true(code: str, passes: bool) -> None:
    assert passes_true(_module(code), "sync_dist") is passes


@pytest.mark.parametrize(
    ("code", "found"),
    [
        ("class M:\n    def training_step(self, batch):\n        pass", True),
        ("class M:\n    async def training_step(self, batch):\n        pass", True),
        ("def outer():\n    def training_step(batch):\n        pass", True),
        ("out = self.training_step(batch)", False),  # called, not defined
        ("def training_step_end(self, out):\n    pass", False),
    ],
)
def test_defines(code: str, found: bool) -> None:
    assert defines(_module(code), "training_step") is found


def test_caught_exception_names() -> None:
    code = """
    try:
        f()
    except (ValueError, errors.DataError):
        pass
    except getattr(m, "E"):
        pass
    except:
        pass
    try:
        g()
    except* KeyError:
        pass
    """
    assert caught_exception_names(_module(code)) == [
        ["ValueError", "DataError"],
        [""],
        ["KeyError"],
    ]


@pytest.mark.parametrize(
    ("code", "found"),
    [
        ("dist.new_group([0, 1])", True),
        ("from torch.distributed import new_group as make\nmake([0])", True),
        ("make = dist.new_group", True),
        ("new_group([0])", True),
        ("dist.all_reduce(x)", False),
        ("groups = 'new_group'", False),  # a string is not a name
    ],
)
def test_mentions(code: str, found: bool) -> None:
    assert mentions(_module(code), frozenset({"new_group"})) is found
