"""The analysis core's per-step questions asked of LibCST calls: a call already waited
for by an earlier wait in the same pass (``ddplint.analysis.device_queue``), a read of a
value already on the host (``ddplint.analysis.placement``), a call that
runs only while a persistent cache is empty (``ddplint.analysis.host_waits``), and a call
that runs only now and then
(on an error, a periodic test, an export, a single-process run:
``ddplint.analysis.step_frequency``)."""

from __future__ import annotations

import ast
from collections.abc import Callable

import libcst as cst

from ddplint.analysis.device_queue import DeviceQueue
from ddplint.analysis.project import NO_PROJECT, ProjectFacts
from ddplint.analysis.step_frequency import Occasion, StepFrequency

#: 1-based (line, column, end_line, end_column) of a LibCST node, columns in characters.
Locate = Callable[[cst.CSTNode], tuple[int, int, int, int]]


class StepWaits:
    """Answers for the calls of one module; None of the ``ast`` (CPython refuses the
    file) answers no to both."""

    def __init__(
        self,
        queue: DeviceQueue | None,
        locate: Locate,
        lines: list[str],
        project: ProjectFacts = NO_PROJECT,
    ) -> None:
        """``queue``: the module's device queue (on its host waits); None where CPython
        refuses the module."""
        self._queue = queue
        self._waits = queue.where if queue is not None else None
        self._placement = queue.placement if queue is not None else None
        self._frequency = (
            StepFrequency(self._waits.nodes.module, self._waits, project)
            if self._waits is not None
            else None
        )
        self._locate = locate
        self._lines = lines

    def _ast_call(self, call: cst.Call) -> ast.Call | None:
        if self._waits is None:
            return None
        line, column, end_line, end_column = self._locate(call)
        return self._waits.call_at(
            (line, self._byte_column(line, column)),
            (end_line, self._byte_column(end_line, end_column)),
        )

    def _byte_column(self, line: int, column: int) -> int:
        """0-based UTF-8 offset of a 1-based character column (how ``ast`` counts)."""
        text = self._lines[line - 1] if 0 < line <= len(self._lines) else ""
        return len(text[: column - 1].encode("utf-8"))

    def queue_drained(self, call: cst.Call) -> bool:
        """An earlier wait in the same pass left nothing new queued for ``call``."""
        found = self._ast_call(call)
        return found is not None and self._queue is not None and self._queue.queue_drained(found)

    def read_on_host(self, call: cst.Call) -> bool:
        """The host read ``call`` reads a value already on the host (``analysis.placement``)."""
        found = self._ast_call(call)
        if found is None or self._placement is None or self._waits is None:
            return False
        scope = self._waits.nodes.call_scopes.get(id(found))
        return scope is not None and self._placement.read_on_host(found, scope)

    def filled_once(self, call: cst.Call) -> bool:
        """``call`` runs only while a cache of the object is still empty."""
        found = self._ast_call(call)
        return found is not None and self._waits is not None and self._waits.filled_once(found)

    def occasional(self, call: cst.Call) -> Occasion | None:
        """Why ``call`` runs only now and then (not on every pass), or None."""
        found = self._ast_call(call)
        if found is None or self._frequency is None:
            return None
        return self._frequency.occasional(found)
