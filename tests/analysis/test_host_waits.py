"""A call that runs only while a cache of the object is empty (``analysis.host_waits``)."""

from __future__ import annotations

import ast
import textwrap

from ddplint.analysis.host_waits import HostWaits


def _waits_and_calls(source: str) -> tuple[HostWaits, dict[int, list[ast.Call]]]:
    module = ast.parse(textwrap.dedent(source))
    by_line: dict[int, list[ast.Call]] = {}
    for node in ast.walk(module):
        if isinstance(node, ast.Call):
            by_line.setdefault(node.lineno, []).append(node)
    return HostWaits(module), by_line


def _read_on(by_line: dict[int, list[ast.Call]], line: int) -> ast.Call:
    reads = [
        c
        for c in by_line[line]
        if isinstance(c.func, ast.Attribute) and c.func.attr in ("item", "cpu")
    ]
    assert len(reads) == 1
    return reads[0]


def test_cache_fill_runs_once() -> None:
    waits, calls = _waits_and_calls(
        """
        class Loss:
            def forward(self, x, key, mask=None):
                if self.scale is None:
                    self.scale = x.max().item()
                cached = self._table.get(key)
                if cached is None:
                    cached = x.sum().item()
                    self._table[key] = cached
                if key not in self._seen:
                    self._seen[key] = x.cpu()
                if mask is None:
                    mask = x.cpu()
                return x
        """
    )
    assert waits.filled_once(_read_on(calls, 5))
    assert waits.filled_once(_read_on(calls, 8))
    assert waits.filled_once(_read_on(calls, 11))
    assert not waits.filled_once(_read_on(calls, 13))
