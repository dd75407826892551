"""A one-line progress indicator on stderr for long runs on a terminal.

It stays silent for the first ``DDPLINT_PROGRESS_DELAY`` seconds (default 0.5) so
quick runs print nothing, redraws at most ten times a second, and erases itself when
the run is done. It is never shown when stderr is not a terminal (pipes, files, CI
logs); the CLI also leaves it off for machine formats and ``--quiet``.
"""

from __future__ import annotations

import os
import time
from typing import TextIO

DEFAULT_DELAY_S = 0.5
REDRAW_INTERVAL_S = 0.1


def _delay_from_environment() -> float:
    value = os.environ.get("DDPLINT_PROGRESS_DELAY")
    try:
        return max(0.0, float(value)) if value else DEFAULT_DELAY_S
    except ValueError:
        return DEFAULT_DELAY_S


class Progress:
    """``update(done, total)`` as files finish; ``finish()`` when the run is over."""

    def __init__(self, stream: TextIO, enabled: bool, delay: float | None = None) -> None:
        self.stream = stream
        self.enabled = enabled and _is_terminal(stream)
        self.delay = _delay_from_environment() if delay is None else delay
        self.started = time.monotonic()
        self._last_draw = 0.0
        self._width = 0

    def update(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.started < self.delay:
            return
        if done < total and now - self._last_draw < REDRAW_INTERVAL_S:
            return
        self._last_draw = now
        text = f"ddplint: {done}/{total} files ({100 * done // max(total, 1)}%)"
        padding = " " * max(0, self._width - len(text))
        self.stream.write(f"\r{text}{padding}")
        self.stream.flush()
        self._width = len(text)

    def finish(self) -> None:
        """Erase the line, so the report starts on a clean one."""
        if self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0


def _is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and os.environ.get("TERM") != "dumb"
