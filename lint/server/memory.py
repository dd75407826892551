"""Garbage collection for a server that keeps large caches.

Between edits the server keeps the parsed pieces of open files, their walks and summary
parts, and the result cache. Python starts a full collection every few runs, in the
middle of a lint, and it visits all of that: 95-160 ms of a 2,000-line file's 170 ms
run. So what a run leaves is frozen when it ends (``gc.freeze``, no work: automatic
collections then visit only what later runs allocate), and when the server is idle
everything is unfrozen and collected once (a run leaves about 2,000 objects in garbage
cycles, which wait until then), and the survivors frozen again. Edits that never leave
the server idle still get a collection every ``COLLECT_AFTER_RUNS`` runs, so what waits
is bounded.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import TypeVar

S = TypeVar("S")
T = TypeVar("T")

#: Quiet seconds after a published run before collecting.
IDLE_SECONDS = 1.0
#: Runs whose garbage may wait frozen before a collection runs anyway. A run of a
#: 900-line file leaves about 1.4 MB in garbage cycles: 1,000 edits without a second's
#: pause grew the server by 1.3 GB before this bound (``bench/server_memory.py``).
COLLECT_AFTER_RUNS = 20

_runs_frozen = 0


def collect_and_freeze() -> None:
    """Collect every generation, then keep the survivors out of automatic collections."""
    global _runs_frozen
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    _runs_frozen = 0


def frozen_after(work: Callable[[S], T]) -> Callable[[S], T]:
    """``work``, followed by freezing whatever it left, or by a collection every
    ``COLLECT_AFTER_RUNS`` runs (see the module docstring)."""

    def run(snapshot: S) -> T:
        global _runs_frozen
        try:
            return work(snapshot)
        finally:
            _runs_frozen += 1
            if _runs_frozen >= COLLECT_AFTER_RUNS:
                collect_and_freeze()
            else:
                gc.freeze()

    return run
