"""Garbage collection for a server that keeps large caches.

Between edits the server keeps the parsed pieces of open files, their walks and summary
parts, and the result cache. Python starts a full collection every few runs, in the
middle of a lint, and it visits all of that: 95-160 ms of a 2,000-line file's 170 ms
run. So what a run leaves is frozen when it ends (``gc.freeze``, no work: automatic
collections then visit only what later runs allocate), and when the server is idle
everything is unfrozen and collected once (a run leaves about 2,000 objects in garbage
cycles, which wait until then), and the survivors frozen again.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import TypeVar

S = TypeVar("S")
T = TypeVar("T")

#: Quiet seconds after a published run before collecting.
IDLE_SECONDS = 1.0


def collect_and_freeze() -> None:
    """Collect every generation, then keep the survivors out of automatic collections."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


def frozen_after(work: Callable[[S], T]) -> Callable[[S], T]:
    """``work``, followed by freezing whatever it left (see the module docstring)."""

    def run(snapshot: S) -> T:
        try:
            return work(snapshot)
        finally:
            gc.freeze()

    return run
