"""A call that runs only while a cache of the object is empty (``analysis.host_waits``)."""

from __future__ import annotations

import ast
import textwrap

from ddplint.analysis.host_waits import HostWaits, is_host_read


def _waits_and_reads(source: str) -> tuple[HostWaits, dict[int, ast.Call]]:
    """The module's waits and its one host read per line, by line."""
    module = ast.parse(textwrap.dedent(source))
    reads = {n.lineno: n for n in ast.walk(module) if isinstance(n, ast.Call) and is_host_read(n)}
    return HostWaits(module), reads


def test_cache_fill_runs_once() -> None:
    waits, reads = _waits_and_reads(
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
    assert waits.filled_once(reads[5])
    assert waits.filled_once(reads[8])
    assert waits.filled_once(reads[11])
    assert not waits.filled_once(reads[13])
