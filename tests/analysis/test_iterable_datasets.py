"""Iterable datasets, their loaders and enumerate loops on ``ast``
(``analysis.iterable_datasets``, ``analysis.enumerate_loops``)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from ddplint.analysis.enumerate_loops import EnumerateLoops
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.iterable_datasets import IterableDatasets

HEAD = (
    "import itertools\nfrom torch.utils.data import DataLoader, IterableDataset, get_worker_info\n"
)


def datasets(code: str) -> IterableDatasets:
    analysis = ModuleAnalysis(ast.parse(HEAD + textwrap.dedent(code)))
    return IterableDatasets(analysis.nodes, analysis.names, analysis.constants)


@pytest.mark.parametrize(
    ("body", "splits"),
    [
        ("def __iter__(self):\n    yield from self.items", False),
        ("def __iter__(self):\n    yield from self.items[self.rank :: self.world]", True),
        ("def __iter__(self):\n    yield from self.items[self.k :: self.n]", True),
        ("def __iter__(self):\n    yield from self.items[0::2]", False),
        ("def __iter__(self):\n    yield from self.items[1 :: -1]", False),
        (
            "def __iter__(self):\n    info = get_worker_info()\n"
            "    yield from self.items[info.id :: info.num_workers]",
            False,
        ),
        (
            "def __iter__(self):\n    return itertools.islice(self.items, self.k, None, self.n)",
            True,
        ),
        ("def __iter__(self):\n    return itertools.islice(self.items, 0, None, 3)", False),
        (
            "def __iter__(self):\n    for i, x in enumerate(self.items):\n"
            "        if i % self.n == self.k:\n            yield x",
            True,
        ),
        ("def __iter__(self):\n    me = int(os.environ['RANK'])\n    yield me", True),
        ("def __init__(self, node_count, partition):\n    self.shards = partition", False),
        ("def __init__(self, rank):\n    pass", True),
        ("def __iter__(self):\n    return self.stream.sharding_filter()", True),
    ],
)
def test_splits_by_rank(body: str, splits: bool) -> None:
    code = "class S(IterableDataset):\n" + textwrap.indent(body, "    ") + "\n"
    found = datasets(code)
    assert found.splits_by_rank(found.classes["S"]) is splits


def test_classes_through_local_bases_and_their_length() -> None:
    found = datasets(
        """
        class Base(IterableDataset):
            def __len__(self):
                return 3
        class Child(Base):
            pass
        class Plain:
            pass
        class Unrelated(Plain):
            pass
        """
    )
    assert sorted(found.classes) == ["Base", "Child"]
    assert found.defines_len(found.classes["Child"])


def test_loaders_bound_names_and_datasets_through_a_name() -> None:
    found = datasets(
        """
        class S(IterableDataset):
            pass
        def build(paths):
            dataset = S(paths)
            loader = DataLoader(dataset)
            return DataLoader(S(paths)), DataLoader(list(paths))
        class M:
            def setup(self):
                self.loader = DataLoader(dataset=S([]))
        def twice(paths):
            dataset = S(paths)
            dataset = S(paths[1:])
            return DataLoader(dataset)
        """
    )
    assert [(loader.call.lineno, loader.name) for loader in found.loaders] == [
        (8, "loader"),
        (9, None),
        (12, "self.loader"),
    ]


def loops(code: str) -> list:
    analysis = ModuleAnalysis(ast.parse(textwrap.dedent(code)))
    return list(EnumerateLoops(analysis.nodes, analysis.names, analysis.constants))


def last_batch_tests(code: str) -> list[bool]:
    (loop,) = loops(code)
    tests = [node.test for node in ast.walk(loop.loop) if isinstance(node, ast.If)]
    return [loop.is_last_batch(t) for t in sorted(tests, key=lambda t: t.lineno)]


def test_last_batch_tests_of_an_enumerate_loop() -> None:
    code = """
    from tqdm import tqdm
    def train(loader):
        steps = len(loader)
        for i, batch in enumerate(tqdm(loader)):
            if i == len(loader) - 1:
                pass
            if i + 1 == steps:
                pass
            if steps - 1 != i:
                pass
            if ready and 1 + i == len(loader):
                pass
            if i == len(other) - 1:
                pass
            if i % 10 == 0:
                pass
            if i < steps - 1:
                pass
    """
    assert last_batch_tests(code) == [True, True, True, True, False, False, False]


def test_length_names_need_one_binding_and_an_unchanged_iterable() -> None:
    code = """
    def train(loader):
        steps = len(loader)
        loader.append(None)
        for i, batch in enumerate(loader):
            if i == steps - 1:
                pass
    """
    assert last_batch_tests(code) == [False]


def test_a_counter_bound_again_in_the_body_is_not_enumerate_s() -> None:
    code = """
    def train(loader):
        for i, batch in enumerate(loader):
            i = 0
        for j, batch in enumerate(loader):
            def inner():
                j = 1
        for (k, batch) in enumerate(iterable=loader):
            pass
    """
    assert [(loop.counter, loop.iterable_name) for loop in loops(code)] == [
        ("j", "loader"),
        ("k", "loader"),
    ]


@pytest.mark.parametrize(
    ("start", "test", "past"),
    [
        ("", "i == len(loader) - 1", 0),
        ("", "i == len(loader)", 1),
        ("", "i + 1 == len(loader)", 0),
        (", start=1", "i == len(loader)", 0),
        (", start=1", "i == len(loader) - 1", -1),
        (", start=START", "i == len(loader) - 1", -1),  # START = 1, a module constant
        (", start=ONE + 1", "i == len(loader) + 1", 0),
    ],
)
def test_how_far_a_last_batch_test_is_from_the_last_batch(start: str, test: str, past: int) -> None:
    code = (
        f"START = 1\nONE = 1\nfor i, b in enumerate(loader{start}):\n    if {test}:\n        pass\n"
    )
    (loop,) = loops(code)
    branch = next(n for n in ast.walk(loop.loop) if isinstance(n, ast.If))
    found = loop.last_batch_test(branch.test)
    assert found is not None and loop.start is not None
    assert found.batches_past_last(loop.start) == past


@pytest.mark.parametrize(
    ("start", "test", "off_by"),
    [
        ("", "(i + 1) % k == 0", 0),
        ("", "i % k == 0", 1),
        ("", "not (i + 1) % k", 0),
        (", start=1", "i % k == 0", 0),
        (", start=1", "(i + 1) % k == 0", -1),
        ("", "0 == i % ACCUM", 1),  # ACCUM = 4
        ("", "i % ONE == 0", None),  # a period of 1 steps after every batch
        ("", "i % k == 1", None),
        ("", "(j + 1) % k == 0", None),
    ],
)
def test_how_far_a_periodic_test_is_from_counting_from_one(
    start: str, test: str, off_by: int | None
) -> None:
    code = (
        f"ACCUM = 4\nONE = 1\nfor i, b in enumerate(loader{start}):\n    if {test}:\n        pass\n"
    )
    (loop,) = loops(code)
    branch = next(n for n in ast.walk(loop.loop) if isinstance(n, ast.If))
    found = loop.periodic_test(branch.test)
    assert loop.start is not None
    assert (found.groups_off_by(loop.start) if found else None) == off_by


def test_a_start_that_is_not_a_constant_is_unknown() -> None:
    (loop,) = loops(
        "def f(offset):\n    for i, b in enumerate(loader, start=offset):\n        pass\n"
    )
    assert loop.start is None
