"""Blocking point-to-point calls that wait for each other.

``crossed_receives(module)``: a test on the rank that each rank class settles (rank 0
against the other ranks, ``rank % 2 == 0``) whose two branches each begin their
point-to-point traffic with a blocking ``recv``: every rank waits to receive what its
peer sends only after its own receive, a deadlock. Branches whose first call sends
(``send``, ``isend``) on one side are complementary and correct; a branch whose first
point-to-point call sits in a nested statement (a loop, another test) is not judged.
Calls count by their resolved name, never by how the module spells them.

``unanswered_transfers(module)``: a ``send`` / ``isend`` under a rank test whose other
branch makes no call at all, in a module that starts its process group itself
(``init_process_group``: every rank runs its code) and names no receive anywhere (nor a
``batch_isend_irecv``), and the same for a ``recv`` / ``irecv`` and sends: the message
has no peer on any rank, so the blocking side (or the wait on its handle) never returns.
A branch of the other ranks that calls anything (a helper that may receive), and a
library module (the peer's code may live in another module), are not judged.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ddplint.analysis.api import TORCH_DIST_MODULES
from ddplint.analysis.control_flow import Node, NodeKind, Scope
from ddplint.analysis.divergence import Source
from ddplint.analysis.functions import FunctionFacts, ModuleAnalysis
from ddplint.analysis.names import Names
from ddplint.analysis.pairing import settled_by_class

#: Point-to-point calls of ``torch.distributed``; ``recv`` alone blocks before any
#: message leaves this rank.
_POINT_TO_POINT = frozenset({"send", "recv", "isend", "irecv", "batch_isend_irecv"})
#: Each side of a transfer, and the calls that answer it on the peer.
_ANSWERS = {
    "send": frozenset({"recv", "irecv"}),
    "isend": frozenset({"recv", "irecv"}),
    "recv": frozenset({"send", "isend"}),
    "irecv": frozenset({"send", "isend"}),
}


@dataclass(frozen=True)
class CrossedReceives:
    """Both branches of ``test`` (in ``scope``) first block in a ``recv``: ``first``
    on the branch taken where the test holds, ``second`` on the other."""

    scope: Scope
    test: ast.If
    first: ast.Call
    second: ast.Call


def crossed_receives(analysis: ModuleAnalysis) -> list[CrossedReceives]:
    """Every rank test of the module whose branches both receive first."""
    names = analysis.names
    found: list[CrossedReceives] = []

    def receives(calls: list[ast.Call]) -> bool:
        return any(point_to_point(call, names) == "recv" for call in calls)

    for scope, function, node, statement in _settled_tests(analysis, receives):
        taint = function.divergence.test_taint(node)
        if taint is None or taint.source is not Source.RANK:
            continue
        first = _first_call(statement.body, names)
        second = _first_call(statement.orelse, names)
        if (
            first is not None
            and second is not None
            and point_to_point(first, names) == "recv"
            and point_to_point(second, names) == "recv"
        ):
            found.append(CrossedReceives(scope, statement, first, second))
    return found


def _settled_tests(
    analysis: ModuleAnalysis, wanted: Callable[[list[ast.Call]], bool]
) -> Iterator[tuple[Scope, FunctionFacts, Node, ast.If]]:
    """The ``if`` tests each rank class settles, in the functions (and module code)
    whose calls ``wanted`` accepts."""
    for scope, calls in analysis.nodes.calls_by_scope.items():
        if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            continue
        if not wanted(calls):
            continue
        function = analysis.function(scope)
        for node in function.graph.nodes:
            statement = node.statement
            if node.kind is not NodeKind.TEST or not isinstance(statement, ast.If):
                continue
            if settled_by_class(function, node):
                yield scope, function, node, statement


@dataclass(frozen=True)
class UnansweredTransfer:
    """``call`` (a ``send`` / ``recv`` of kind ``kind``) runs under ``test`` on some
    ranks while the module names no call that answers it."""

    scope: Scope
    test: ast.If
    call: ast.Call
    kind: str
    #: Whether the call runs where the test holds (else where it does not).
    holds: bool


def unanswered_transfers(analysis: ModuleAnalysis) -> list[UnansweredTransfer]:
    """Every point-to-point call under a rank test that no rank answers."""
    names = analysis.names
    named = _named_transfers(analysis.module, names)
    if "batch_isend_irecv" in named:
        return []  # its operations name their functions (``P2POp(dist.irecv, ...)``)
    if not _starts_its_group(analysis.module, names):
        return []  # a library module: the peer's code may live in another module
    found: list[UnansweredTransfer] = []

    def unanswerable(calls: list[ast.Call]) -> bool:
        kinds = {point_to_point(call, names) for call in calls}
        return any(k in _ANSWERS and not _ANSWERS[k] & named for k in kinds)

    for scope, _function, _node, statement in _settled_tests(analysis, unanswerable):
        ways = (
            (statement.body, statement.orelse, True),
            (statement.orelse, statement.body, False),
        )
        for mine, theirs, holds in ways:
            first = _first_call(mine, names)
            kind = point_to_point(first, names) if first is not None else None
            if kind in _ANSWERS and not _ANSWERS[kind] & named and not _calls_any(theirs):
                assert first is not None and kind is not None
                found.append(UnansweredTransfer(scope, statement, first, kind, holds))
    return found


def _named_transfers(module: ast.Module, names: Names) -> set[str]:
    """The point-to-point functions the module names anywhere (called or handed on)."""
    found: set[str] = set()
    for node in ast.walk(module):
        if isinstance(node, (ast.Name, ast.Attribute)):
            resolved = names.resolve(node)
            if resolved is not None and "." in resolved:
                where, name = resolved.rsplit(".", 1)
                if where in TORCH_DIST_MODULES and name in _POINT_TO_POINT:
                    found.add(name)
    return found


def _starts_its_group(module: ast.Module, names: Names) -> bool:
    """Whether the module starts the process group itself (``init_process_group``):
    a program whose every rank runs this module's code, so a peer's receive would be
    here too."""
    for node in ast.walk(module):
        if isinstance(node, ast.Call):
            resolved = names.resolve(node.func)
            if resolved is not None and "." in resolved:
                where, name = resolved.rsplit(".", 1)
                if where in TORCH_DIST_MODULES and name == "init_process_group":
                    return True
    return False


def _calls_any(body: list[ast.stmt]) -> bool:
    return any(isinstance(n, ast.Call) for statement in body for n in ast.walk(statement))


def point_to_point(call: ast.Call, names: Names) -> str | None:
    """The point-to-point call of ``torch.distributed`` that ``call`` makes, if any."""
    resolved = names.resolve(call.func)
    if resolved is None or "." not in resolved:
        return None
    module, name = resolved.rsplit(".", 1)
    return name if module in TORCH_DIST_MODULES and name in _POINT_TO_POINT else None


def _first_call(body: list[ast.stmt], names: Names) -> ast.Call | None:
    """The first point-to-point call of a branch, when a plain statement of the branch
    makes it (None: none, or one inside a nested statement)."""
    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        calls = [
            n
            for n in ast.walk(statement)
            if isinstance(n, ast.Call) and point_to_point(n, names) is not None
        ]
        if not calls:
            continue
        if not isinstance(statement, (ast.Expr, ast.Assign, ast.AnnAssign)) or len(calls) > 1:
            return None
        return calls[0]
    return None
