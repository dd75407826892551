"""Which parts of a generator's yielded tuples carry this rank's batch."""

from __future__ import annotations

import ast
import textwrap

import pytest

from ddplint.analysis.batches import yielded_parts


def _parts(source: str) -> tuple[bool, ...] | None:
    module = ast.parse(textwrap.dedent(source))
    function = module.body[0]
    return yielded_parts(function, None)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (  # a counter beside each batch
            """
            def walk(loader, accumulation):
                step = 0
                for batch in loader:
                    yield {"step": step // accumulation + 1}, batch
                    step += 1
            """,
            (False, True),
        ),
        (  # a turn number of a counted loop, and len() of a parameter
            """
            def walk(dataset, size):
                for index in range(len(dataset) // size):
                    yield index, dataset[index]
            """,
            (False, True),
        ),
        (  # a parameter handed out as it is may be the data
            """
            def walk(loader, extra):
                for step in range(3):
                    yield step, extra
            """,
            (False, True),
        ),
        (  # a value read from the batch, through a local name
            """
            def walk(loader):
                for batch in loader:
                    size = len(batch)
                    yield size, batch
            """,
            (True, True),
        ),
        (  # any other call's result may be data
            """
            def walk(paths):
                for step in range(3):
                    yield step, load(step)
            """,
            (False, True),
        ),
    ],
)
def test_parts(source: str, expected: tuple[bool, ...]) -> None:
    assert _parts(source) == expected


@pytest.mark.parametrize(
    "source",
    [
        "def f(loader):\n    for b in loader:\n        yield b\n",
        "def f(loader):\n    for b in loader:\n        yield 1, b\n    yield 1, 2, 3\n",
        "def f(loader):\n    return loader\n",
    ],
)
def test_not_tuples_of_one_width(source: str) -> None:
    assert _parts(source) is None
