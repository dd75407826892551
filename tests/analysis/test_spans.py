"""The length of a span read from its two ends (``analysis.spans``)."""

from __future__ import annotations

import ast

from ddplint.analysis.control_flow import single_bindings
from ddplint.analysis.spans import span_length_reads


def _reads(source: str, start: str, end: str) -> list[str]:
    scope = ast.parse(source)
    single = single_bindings(scope)
    found = span_length_reads(
        ast.parse(start, mode="eval").body, ast.parse(end, mode="eval").body, single
    )
    return [ast.unparse(read) for read in found]


def test_ends_that_move_alike_leave_the_block_size() -> None:
    source = "n = total // world\na, b = rank * n, (rank + 1) * n\n"
    assert _reads(source, "a", "b") == ["total // world"]


def test_an_offset_cancels_out() -> None:
    assert _reads("s = 3 + rank * k\n", "s", "s + k") == ["k"]


def test_a_constant_length_reads_nothing() -> None:
    assert _reads("", "rank", "rank + 4") == []


def test_a_cut_end_is_a_value_of_its_own() -> None:
    source = "s = rank * n\ne = min(total, s + n)\n"
    assert _reads(source, "s", "e") == ["min(total, s + n)", "n", "rank"]


def test_a_name_bound_twice_is_not_followed() -> None:
    source = "s = rank * n\ns = 0\n"
    assert _reads(source, "s", "s + n") == ["n"]
    assert _reads("s = rank * n\n", "rank * n", "s + rank") == ["rank"]
