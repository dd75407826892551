"""Find and kill every process of one verify run, whatever process group or session it
moved to: each carries the run folder in its environment (``DDPLINT_VERIFY_DIR``, set by
the launcher and inherited by the ranks' children). Linux (``/proc``) only; elsewhere
nothing is found. Standard library only: the rank side uses it too."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable

from .layout import ENV_DIR

#: Scans after a kill: a process may fork while the previous scan runs.
SWEEPS = 5


def is_alive(pid: int) -> bool:
    """Running (a zombie, dead but not yet reaped, is not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False
    except OSError:  # no /proc (macOS): ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def marked_processes(run_dir: str) -> list[int]:
    """Live processes (zombies excluded) whose environment names ``run_dir``."""
    marker = f"{ENV_DIR}={run_dir}".encode()
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                environment = handle.read()
        except OSError:  # gone, or another user's
            continue
        if marker in environment.split(b"\0"):
            found.append(int(name))
    return found


def kill_marked(run_dir: str, spare: Iterable[int] = ()) -> list[int]:
    """SIGKILL every process of the run (but ``spare``) until none is left; the pids."""
    keep = {os.getpid(), *spare}
    killed: list[int] = []
    for _ in range(SWEEPS):
        found = [pid for pid in marked_processes(run_dir) if pid not in keep]
        if not found:
            break
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        killed.extend(found)
        time.sleep(0.05)
    return killed
