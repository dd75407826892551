"""Run a function where deep recursion ends in RecursionError, never in a segfault.

LibCST recurses once per nesting level: natively while parsing (past a few thousand
levels that overflows the default 8 MiB thread stack and kills the process) and in
Python while printing code or resolving positions (past ~300 levels that exceeds
Python's default recursion limit of 1,000). Linting a file runs on a thread with a
large stack and a raised recursion limit, so every tree the nesting guard lets through
(``ddplint.code.syntax.safe_parse``) is handled in full.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")

#: Stack of the thread; only the pages touched are ever committed.
STACK_BYTES = 256 * 1024 * 1024
#: Python frames allowed on that thread: 32 KiB of stack each. LibCST's native code
#: between Python frames takes up to 16 KiB a frame (measured on a 50,000-part dotted
#: name); the deepest tree the nesting guard admits needs fewer than 4,000 frames.
RECURSION_LIMIT = 8_000

_lock = threading.Lock()
_active = 0  # deep-stack calls running; the first raises the limit, the last restores it
_saved_limit = 0


def call_with_deep_stack(function: Callable[..., T], *args: object) -> T:
    """``function(*args)`` on a thread with ``STACK_BYTES`` of stack and a recursion
    limit of ``RECURSION_LIMIT``; its exception, if any, is raised here. Runs in the
    calling thread, as usual, where no such thread can be started."""
    results: list[T] = []
    failures: list[BaseException] = []

    def run() -> None:
        try:
            results.append(function(*args))
        except BaseException as exc:  # handed to the calling thread, raised there
            failures.append(exc)

    thread = threading.Thread(target=run, name="ddplint-deep-stack", daemon=True)
    with _raised_recursion_limit():
        started = _start_with_large_stack(thread)
        if started:
            thread.join()
    if not started:
        return function(*args)
    if failures:
        raise failures[0]
    return results[0]


def _start_with_large_stack(thread: threading.Thread) -> bool:
    """Start ``thread`` with ``STACK_BYTES`` of stack (the size applies at start);
    False where the platform cannot give it one."""
    with _lock:
        try:
            previous = threading.stack_size(STACK_BYTES)
        except ValueError:
            return False
        try:
            thread.start()
        except RuntimeError:  # the stack could not be mapped
            return False
        finally:
            threading.stack_size(previous)
    return True


@contextmanager
def _raised_recursion_limit() -> Iterator[None]:
    """The limit is per interpreter: raise it while any deep-stack call runs."""
    global _active, _saved_limit
    with _lock:
        if _active == 0:
            _saved_limit = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_saved_limit, RECURSION_LIMIT))
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                sys.setrecursionlimit(_saved_limit)
