"""Ctrl-C and SIGTERM end a run at once: no worker left, exit status 130 / 143.

``check`` runs under ``ending_on_signals``: SIGINT and SIGTERM raise ``Interrupted``, the
engine stops its pool (``stop_pool``: workers killed, queued work dropped), and the
process then ends by the same signal with its default action, so a shell sees 130 / 143
and a parent sees a process killed by SIGINT / SIGTERM (never 1, the findings code).

Pool workers ignore SIGINT (the terminal sends it to the whole process group: only the
main process decides) and die with the main process, however it ends (Linux).

LibCST parses natively without releasing the GIL, so a Python handler cannot run during
a long parse in the main process; while such work runs in-process
(``native_work_ends_on_signals``), SIGINT and SIGTERM take their default action and end
the process at once. Nothing is written during that work. A fix's write of one file
holds the signals until its rename is done (``signals_held``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

F = TypeVar("F", bound=Callable[..., Any])

#: The signals that end a run: Ctrl-C, and CI cancellation / ``timeout`` / ``docker stop``.
ENDING_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: How long a terminated worker gets to exit before it is killed.
WORKER_EXIT_SECONDS = 1.0
_PR_SET_PDEATHSIG = 1


class Interrupted(KeyboardInterrupt):
    """The run was asked to stop by signal ``signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_interrupted(signum: int, _frame: FrameType | None) -> None:
    raise Interrupted(signum)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def ending_on_signals(command: F) -> F:
    """Run ``command`` so that SIGINT / SIGTERM stop it, say so, and end the process by
    that signal. Outside the main thread (handlers cannot be set) it runs unchanged."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        if not _in_main_thread():
            return command(*args, **kwargs)
        # A signal the caller ignores (a background job's SIGINT) stays ignored.
        previous = {
            signum: signal.signal(signum, _raise_interrupted)
            for signum in ENDING_SIGNALS
            if signal.getsignal(signum) is not signal.SIG_IGN
        }
        try:
            return command(*args, **kwargs)
        except Interrupted as stop:
            _end_by_signal(stop.signum)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    return run  # type: ignore[return-value]


def _end_by_signal(signum: int) -> None:
    """Say the run stopped, then end the process by ``signum``'s default action."""
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
    with contextlib.suppress(OSError, ValueError):
        name = signal.Signals(signum).name
        sys.stderr.write(f"ddplint: interrupted ({name}); nothing more was linted or written\n")
        sys.stderr.flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    sys.exit(128 + signum)  # where the default action does not end the process


@contextlib.contextmanager
def native_work_ends_on_signals() -> Iterator[None]:
    """While the body runs, SIGINT / SIGTERM end the process at once (default action),
    where ``ending_on_signals`` handles them now; otherwise nothing changes."""
    ours = (
        [s for s in ENDING_SIGNALS if signal.getsignal(s) is _raise_interrupted]
        if _in_main_thread()
        else []
    )
    previous = {signum: signal.signal(signum, signal.SIG_DFL) for signum in ours}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT / SIGTERM arriving while the body runs take effect when it ends (a fix's
    write and rename of one file: the file is whole, no temporary file stays)."""
    if not hasattr(signal, "pthread_sigmask"):  # Windows: no signal masks
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, ENDING_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def quiet_worker(parent: int) -> None:
    """Pool worker initializer: ignore SIGINT, die of SIGTERM, die with ``parent``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        import ctypes  # a worker's only: the parent's start-up does without it

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent ended before the request took effect
        os._exit(1)


def stop_pool(pool: ProcessPoolExecutor) -> None:
    """Drop ``pool``'s queued work and end its workers now (terminate, then kill)."""
    workers = list((getattr(pool, "_processes", None) or {}).values())
    for worker in workers:
        with contextlib.suppress(OSError, ValueError):
            worker.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    for worker in workers:
        with contextlib.suppress(OSError, ValueError, AssertionError):
            worker.join(WORKER_EXIT_SECONDS)
            if worker.is_alive():
                worker.kill()
                worker.join(WORKER_EXIT_SECONDS)
