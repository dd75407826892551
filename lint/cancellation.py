"""Stopping a run that a newer one has made useless (the language server's edits).

The server lints in one worker thread; when a newer edit arrives, the run in progress
is told to stop (``cancel``) and stops at its next check: before each file of a batch
and before each rule of a file (``check``). ``Cancelled`` derives from
``BaseException`` so that the guards that turn a rule's crash into an error entry let it
through; nothing half-done is kept (a file's result is cached only once it is whole).
A run started outside ``cancellable`` is never stopped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class Cancelled(BaseException):
    """The run was cancelled: a newer one replaces it."""


_current: threading.Event | None = None


def check() -> None:
    """Raise ``Cancelled`` when the run in progress was cancelled."""
    event = _current
    if event is not None and event.is_set():
        raise Cancelled


def cancellable(event: threading.Event, work: Callable[[], T]) -> T:
    """``work()``, stopped with ``Cancelled`` at a check after ``event`` is set. One
    cancellable run at a time per process (the server's worker thread)."""
    global _current
    _current = event
    try:
        check()
        return work()
    finally:
        _current = None
