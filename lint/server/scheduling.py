"""When linting runs: debounced, one run at a time, stale results never published.

A change asks for a lint after a short pause (``DEBOUNCE_SECONDS``); a newer request
replaces one still waiting. The run lints a snapshot of the open documents in a worker
thread (the server keeps reading messages meanwhile); a run that a newer request
replaced is cancelled (it stops at its next check, ``ddplint.cancellation``: before the
next file or rule) and publishes nothing, and of a run's results only those of
documents still at the linted version are published. Once a run is published
and no request follows for a while, ``tidy`` runs in the worker thread (the server's
housekeeping: writing results to the cache, garbage collection), so that it need not run
during a lint.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Generic, TypeVar

from ddplint.cancellation import Cancelled, cancellable
from ddplint.server.memory import IDLE_SECONDS

#: The pause after a change before linting: typing bursts lint once.
DEBOUNCE_SECONDS = 0.05

S = TypeVar("S")
T = TypeVar("T")


class LintScheduler(Generic[S, T]):
    """Takes a ``snapshot`` (on the event loop), runs ``work`` on it (blocking) in one
    worker thread, debounced, and hands the result to ``publish`` unless a newer request
    came meanwhile (an exception to ``failed``)."""

    def __init__(
        self,
        snapshot: Callable[[], S],
        work: Callable[[S], T],
        publish: Callable[[T], None],
        failed: Callable[[Exception], None],
        delay: float = DEBOUNCE_SECONDS,
        tidy: Callable[[], None] | None = None,
        tidy_after: float = IDLE_SECONDS,
    ) -> None:
        self._snapshot = snapshot
        self._work = work
        self._publish = publish
        self._failed = failed
        self._delay = delay
        self._tidy = tidy
        self._tidy_after = tidy_after
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ddplint-lint")
        self._pending: asyncio.Task[None] | None = None
        self._tidying: asyncio.Task[None] | None = None
        #: Set to stop the run in the worker thread.
        self._stop_running: threading.Event | None = None
        #: Set while the worker thread lints (a cancelled run ends at its next check).
        self._working = threading.Event()
        self._lock = asyncio.Lock()

    def request(self, delay: float | None = None) -> None:
        """Lint after the pause; a run not yet finished is superseded (and cancelled)."""
        for task in (self._pending, self._tidying):
            if task is not None and not task.done():
                task.cancel()
        if self._stop_running is not None:
            self._stop_running.set()
        self._pending = asyncio.ensure_future(self._run(self._delay if delay is None else delay))

    async def _run(self, delay: float) -> None:
        await asyncio.sleep(delay)
        async with self._lock:  # the previous run's thread may still be busy
            taken = self._snapshot()
            loop = asyncio.get_running_loop()
            stop = self._stop_running = threading.Event()
            try:
                result = await loop.run_in_executor(
                    self._executor, self._work_in_thread, stop, taken
                )
            except Cancelled:
                return
            except Exception as exc:  # a bug of ours: said, and the server goes on
                self._failed(exc)
                return
            finally:
                if self._stop_running is stop:
                    self._stop_running = None
        self._publish(result)
        if self._tidy is not None:
            self._tidying = asyncio.ensure_future(self._tidy_when_idle(self._tidy))

    def _work_in_thread(self, stop: threading.Event, taken: S) -> T:
        self._working.set()
        try:
            return cancellable(stop, partial(self._work, taken))
        finally:
            self._working.clear()

    @property
    def working(self) -> bool:
        """Whether the worker thread is linting (after ``close``: a run not yet at its
        next cancellation check)."""
        return self._working.is_set()

    async def _tidy_when_idle(self, tidy: Callable[[], None]) -> None:
        """``tidy()`` in the worker thread after ``tidy_after`` quiet seconds (a request
        meanwhile cancels it; one arriving while it runs waits for it)."""
        await asyncio.sleep(self._tidy_after)
        async with self._lock:
            await asyncio.get_running_loop().run_in_executor(self._executor, tidy)

    def close(self) -> None:
        for task in (self._pending, self._tidying):
            if task is not None:
                task.cancel()
        if self._stop_running is not None:
            self._stop_running.set()
        self._executor.shutdown(wait=False, cancel_futures=True)
