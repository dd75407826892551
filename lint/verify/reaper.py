"""Find and kill every process of one verify run, whatever process group or session it
moved to. Two marks it cannot shed together: the run folder in its environment
(``DDPLINT_VERIFY_DIR``, set by the launcher and inherited by the ranks' children), and
ancestry: the verifier makes itself the *child subreaper* of the run (Linux), so a
process orphaned under it (a double-fork daemon, a child of a killed rank, one that
cleared its environment and left its session) is re-parented to the verifier, not to
init, and stays in its process tree. Linux (``/proc``, ``prctl``) only; elsewhere
nothing is found. Standard library only: the rank side uses it too."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass

from .layout import ENV_DIR

#: Scans after a kill: a process may fork while the previous scan runs.
SWEEPS = 5
#: The command line of a process that has none left (it is exiting).
UNKNOWN_COMMAND = "?"
#: ``prctl`` option that makes orphaned descendants re-parent to the caller.
PR_SET_CHILD_SUBREAPER = 36


@dataclass(frozen=True)
class Leftover:
    """A process of the run that outlived it and was killed."""

    pid: int
    command: str


def set_subreaper(on: bool) -> bool:
    """Make this process the subreaper of its descendants (Linux); True when it is."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def descendants(root: int, spare: Iterable[int] = ()) -> list[int]:
    """Live processes below ``root`` in the process tree, but ``spare`` and their own
    descendants."""
    try:
        entries = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []
    children: dict[int, list[int]] = {}
    for pid in entries:
        parent = _parent(pid)
        if parent is not None:
            children.setdefault(parent, []).append(pid)
    skip = set(spare)
    found: list[int] = []
    todo = [c for c in children.get(root, []) if c not in skip]
    while todo:
        pid = todo.pop()
        if is_alive(pid):
            found.append(pid)
        todo.extend(c for c in children.get(pid, []) if c not in skip)
    return found


def command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            raw = handle.read(4096)
    except OSError:
        return UNKNOWN_COMMAND
    text = raw.replace(b"\0", b" ").decode("utf-8", errors="replace").strip()
    return text or UNKNOWN_COMMAND


def _reap_adopted(spare: set[int]) -> None:
    """Collect the exit status of this process's children that came from the run (dead
    ones included), so none stays a zombie; children it had before are left alone."""
    try:
        entries = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return
    for pid in entries:
        if pid not in spare and _parent(pid) == os.getpid():
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)


def sweep(run_dir: str, spare: Iterable[int] = ()) -> list[Leftover]:
    """Kill what is left of the run: every process marked with ``run_dir`` and every
    process in this one's tree (but ``spare``: children it had before the run, with
    their descendants). Returns what had to be killed."""
    keep = {os.getpid(), *spare}
    killed: dict[int, Leftover] = {}
    for _ in range(SWEEPS):
        found = {pid for pid in marked_processes(run_dir) if pid not in keep}
        found.update(descendants(os.getpid(), keep))
        if not found:
            break
        for pid in found:
            killed.setdefault(pid, Leftover(pid, command_line(pid)))
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
        _reap_adopted(keep)
    _reap_adopted(keep)
    return sorted(killed.values(), key=lambda leftover: leftover.pid)


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
