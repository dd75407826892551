"""``check --watch``: lint, then lint again whenever a file to lint changes, is added or
is removed (ruff's flag of the same name). Polls file stamps: no extra dependency."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from datetime import datetime
from typing import NoReturn

from ddplint.discover import discover
from ddplint.settings import Settings

#: Seconds between two looks at the files.
POLL_INTERVAL = 0.5

#: A file's stamp: modification time (ns) and size; None when it cannot be read.
Stamp = tuple[int, int] | None


def stamps(paths: list[str], settings: Settings) -> dict[str, Stamp]:
    """The stamp of every file a run over ``paths`` would lint."""
    found: dict[str, Stamp] = {}
    for target in discover(paths, settings).targets:
        try:
            info = os.stat(target.path)
            found[target.display] = (info.st_mtime_ns, info.st_size)
        except OSError:
            found[target.display] = None
    return found


def watch(
    run: Callable[[], object],
    paths: list[str],
    settings: Settings,
    say: Callable[[str], None],
    sleep: Callable[[float], None] = time.sleep,
) -> NoReturn:
    """Call ``run`` now and after every change to the files under ``paths``; ends only
    by a signal (Ctrl-C)."""
    say(_stamped("Starting ddplint in watch mode..."))
    seen = stamps(paths, settings)
    run()
    while True:
        sleep(POLL_INTERVAL)
        now = stamps(paths, settings)
        if now != seen:
            seen = now
            say(_stamped("File change detected..."))
            run()


def _stamped(message: str) -> str:
    return f"[{datetime.now():%H:%M:%S}] {message}"
