"""Rank side: line probes. Record, once per line, when this rank first executed each
line that holds a static finding, so the report can tell "confirmed" (the flagged code
ran and explains the divergence) from "ran, not the cause" and "not reached".

Only code objects of the probed files whose lines overlap a probed line are traced:
on Python 3.12+ with ``sys.monitoring`` (each location reports once, then is disabled),
before that with a scoped trace function (every other frame returns at its ``call``
event). Forked children (DataLoader workers) stop probing: they are not the rank.
Standard library only: this module runs inside the user's processes."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import types
from collections.abc import Callable
from typing import Any

#: The probe file the verifier writes: ``{"/abs/file.py": [line, ...]}``.
PROBES_NAME = "probes.json"
#: ``sys.monitoring`` tool id (3.12+); ids 0-2 are taken by debuggers, coverage, profilers.
MONITORING_TOOL = 4

Record = Callable[[dict[str, Any]], None]


def load_targets(path: str) -> dict[str, frozenset[int]]:
    """The probed lines by real file path; empty when the verifier wrote none."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    targets: dict[str, frozenset[int]] = {}
    for file, lines in data.items():
        if isinstance(file, str) and isinstance(lines, list):
            targets[os.path.realpath(file)] = frozenset(n for n in lines if isinstance(n, int))
    return targets


def _code_lines(code: types.CodeType) -> frozenset[int]:
    return frozenset(line for _, _, line in code.co_lines() if line is not None)


class LineProbe:
    """Writes ``{"kind": "line", "file", "line", "t"}`` the first time a probed line runs."""

    def __init__(self, targets: dict[str, frozenset[int]], record: Record) -> None:
        self.targets = targets
        self.record = record
        self.seen: set[tuple[str | None, int]] = set()
        self._files: dict[str, str | None] = {}  # co_filename -> probed real path
        #: id(code) -> (code, its probed lines): by id, as hashing a code object hashes
        #: its whole body; the code is held so that its id is never reused.
        self._codes: dict[int, tuple[types.CodeType, frozenset[int]]] = {}
        #: ids of codes whose probed lines have all run: no more tracing there.
        self._done: set[int] = set()
        self._lock = threading.Lock()
        self._active = False

    # -- which code is probed -------------------------------------------------------
    def _file(self, filename: str) -> str | None:
        known = self._files.get(filename, "")
        if known == "":
            real = os.path.realpath(filename) if not filename.startswith("<") else filename
            known = real if real in self.targets else None
            self._files[filename] = known
        return known

    def _probed_lines(self, code: types.CodeType) -> frozenset[int]:
        known = self._codes.get(id(code))
        if known is None:
            file = self._file(code.co_filename)
            lines = self.targets[file] & _code_lines(code) if file else frozenset()
            known = self._codes[id(code)] = (code, lines)
        return known[1]

    def hit(self, code: types.CodeType, line: int) -> None:
        file = self._file(code.co_filename)
        if file is None or (file, line) in self.seen:
            return
        with self._lock:
            if (file, line) in self.seen:
                return
            self.seen.add((file, line))
        self.record({"kind": "line", "file": file, "line": line, "t": time.time()})

    # -- installing -----------------------------------------------------------------
    def install(self) -> str:
        """Start probing; the mechanism used (``sys.monitoring``, ``settrace`` or ``none``)."""
        if not self.targets:
            return "none"
        self._active = True
        os.register_at_fork(after_in_child=self.stop)
        monitoring = getattr(sys, "monitoring", None)
        if monitoring is not None:
            self._install_monitoring(monitoring)
            return "sys.monitoring"
        sys.settrace(self._global_trace)
        threading.settrace(self._global_trace)
        return "settrace"

    def stop(self) -> None:
        if not self._active:
            return
        self._active = False
        monitoring = getattr(sys, "monitoring", None)
        if monitoring is not None:
            monitoring.set_events(MONITORING_TOOL, 0)
            monitoring.register_callback(MONITORING_TOOL, monitoring.events.LINE, None)
            monitoring.free_tool_id(MONITORING_TOOL)
            return
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type,unused-ignore]

    def _install_monitoring(self, monitoring: Any) -> None:
        disable = monitoring.DISABLE

        def on_line(code: types.CodeType, line: int) -> object:
            if line in self._probed_lines(code):
                self.hit(code, line)
            return disable  # each location reports once

        monitoring.use_tool_id(MONITORING_TOOL, "ddplint-verify")
        monitoring.register_callback(MONITORING_TOOL, monitoring.events.LINE, on_line)
        monitoring.set_events(MONITORING_TOOL, monitoring.events.LINE)

    def _all_seen(self, code: types.CodeType, lines: frozenset[int]) -> bool:
        file = self._file(code.co_filename)
        if all((file, line) in self.seen for line in lines):
            self._done.add(id(code))
            return True
        return False

    def _global_trace(self, frame: types.FrameType, event: str, arg: object) -> Any:
        code = frame.f_code
        if id(code) in self._done or not self._active:
            return None
        lines = self._probed_lines(code)
        if not lines:
            self._done.add(id(code))
            return None

        def local_trace(frame: types.FrameType, event: str, arg: object) -> Any:
            if event == "line" and frame.f_lineno in lines:
                self.hit(code, frame.f_lineno)
                if self._all_seen(code, lines):
                    return None  # every probed line here has run: stop tracing the frame
            return local_trace

        return local_trace
