"""The analysis core's single-process paths (``ddplint.analysis.single_process``) asked
of LibCST nodes: code that runs only when the job is one process (the ``else`` of ``if
args.distributed:``, what follows ``if dist.is_initialized(): raise``) has no peer, so
no rank hazard and no cost shared with peers."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from ddplint.analysis.single_process import SingleProcessPaths

#: 1-based (line, column, end_line, end_column) of a LibCST node.
Locate = Callable[[cst.CSTNode], tuple[int, int, int, int]]


class OneProcessPaths:
    """Answers for the nodes of one module; None of the core (CPython refuses the file)
    answers no."""

    def __init__(self, paths: SingleProcessPaths | None, locate: Locate) -> None:
        self._paths = paths
        self._locate = locate

    def holds(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` runs only in a single-process job."""
        if self._paths is None:
            return False
        line, _, _, _ = self._locate(node)
        return self._paths.holds_at(line)

    def swallows_alone(self, handler: cst.ExceptHandler) -> bool:
        """Whether the handler lets a failure pass (does not raise) only in a
        single-process job."""
        if self._paths is None:
            return False
        line, _, _, _ = self._locate(handler)
        found = self._paths.handler_at(line)
        return found is not None and self._paths.swallows_alone(found)
