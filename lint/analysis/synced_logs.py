"""Lightning logs that all-reduce, reached on some ranks only (DDP202).

A log synchronises when it passes ``sync_dist=True`` (and not ``rank_zero_only=True``)
to ``log`` / ``log_dict`` of a LightningModule, known by what the receiver is, never by
its name: the instance a method of a class is bound to (its first parameter; the class a
LightningModule by its bases, or of bases the analysis cannot see, or a mixin of plain
bases: none other has a ``log`` that takes ``sync_dist``), the module a callback hook is
handed, a parameter annotated ``LightningModule``.

It runs on some ranks only when ``rank_guards`` finds a rank guard around it (a rank
test it depends on, an expression guard, ``@rank_zero_only``), or around a call of a
local function that reaches one (``self._log_metrics()`` under ``if self.global_rank
== 0:``: reported at that call, the root cause). A guard is *paired* when the ranks it
leaves out log the same keys with ``sync_dist`` too, or call the same function (the
other branch of the same test, or a test of the opposite answer in the same function):
every rank then joins the reduction.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ddplint.analysis.control_flow import Scope
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.names import dotted_name, keyword_true
from ddplint.analysis.object_kinds import LIGHTNING_MODULE, OBJECT
from ddplint.analysis.rank_guards import (
    RankGuard,
    admits_global_zero,
    guard_of,
    instance_parameter,
    own_reads,
)
from ddplint.analysis.trainers import LightningTrainers

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_LOG_METHODS = ("log", "log_dict")
#: Kinds of a class whose instance may be a LightningModule (``None``: bases unseen).
_LOGGING_KINDS = (LIGHTNING_MODULE, OBJECT, None)


@dataclass(frozen=True)
class SyncedLog:
    """A ``log`` / ``log_dict`` with ``sync_dist=True`` that runs on some ranks only
    because of ``guard``; ``keys`` are its literal metric names (None when one is not
    literal); ``global_zero``: the guard lets global rank 0 alone through."""

    call: ast.Call
    guard: RankGuard
    keys: tuple[str, ...] | None
    global_zero: bool
    #: Keys the ranks the guard leaves out log with ``sync_dist`` instead (their
    #: reductions pair with this one's across different metrics).
    instead: tuple[str, ...] = ()
    #: Where ``call`` is a call of a local function: the log it reaches.
    log: ast.Call | None = None


def synced_logs_on_some_ranks(analysis: ModuleAnalysis) -> list[SyncedLog]:
    """Each synchronising Lightning log of the module that runs on some ranks only."""
    logs = [call for calls in analysis.nodes.calls_by_scope.values() for call in calls]
    logs = [call for call in logs if _synchronises(call)]
    if not logs:
        return []
    receivers = _LogReceivers(analysis)
    placed = [
        (call, scope, node)
        for call, scope, node in own_reads(analysis, list(logs))
        if receivers.holds_module(call.func.value, scope)  # type: ignore[attr-defined]
    ]
    synced = {id(call): call for call, _, _ in placed if isinstance(call, ast.Call)}
    reaching = analysis.functions_reaching(
        lambda call: str(id(call)) if id(call) in synced else None
    )
    sites: list[ast.AST] = [call for call, _, _ in placed]
    reached: dict[int, ast.Call] = {}
    for caller, calls in analysis.nodes.calls_by_scope.items():
        for call in calls:
            log = _reached_log(analysis, call, caller, reaching, synced)
            if log is not None:
                reached[id(call)] = log
                sites.append(call)
    guarded: list[tuple[ast.Call, Scope, RankGuard]] = []
    for site, scope, node in own_reads(analysis, sites):
        guard = guard_of(analysis, scope, node, site)
        if guard is not None and isinstance(site, ast.Call):
            guarded.append((site, scope, guard))
    found = []
    crossed: set[int] = set()
    for call, scope, guard in guarded:
        log = reached.get(id(call))
        keys = _identity(call, log)[1]
        instead = _logged_instead(call, log, scope, guard, guarded, reached)
        if keys is not None and set(keys) <= instead:
            continue  # paired: every rank joins the reduction of each key
        if instead and id(guard.cause) in crossed:
            continue  # the other arm of a test already reported: one root cause
        if instead:
            crossed.add(id(guard.cause))
        global_zero = admits_global_zero(analysis, guard)
        keys = logged_keys(log or call)
        found.append(SyncedLog(call, guard, keys, global_zero, tuple(sorted(instead)), log))
    return sorted(found, key=lambda log: (log.call.lineno, log.call.col_offset))


def _reached_log(
    analysis: ModuleAnalysis,
    call: ast.Call,
    caller: Scope,
    reaching: dict[str, str],
    synced: dict[int, ast.Call],
) -> ast.Call | None:
    """The log with ``sync_dist`` that ``call`` reaches through the local function it
    names from ``caller`` (``self.f``: the method of the caller's own class, not another
    class's method of that name), itself or one call deeper; None if none."""
    name = dotted_name(call.func)
    callee = analysis.local_callee(name, caller) if name in reaching else None
    if callee is None:
        return None
    for inner in analysis.nodes.calls_by_scope.get(callee[0], []):
        if id(inner) in synced:
            return synced[id(inner)]
        deeper = dotted_name(inner.func)
        if deeper in reaching and inner is not call:
            return synced[int(reaching[deeper])]
    return None


def _synchronises(call: ast.Call) -> bool:
    return (
        isinstance(call.func, ast.Attribute)
        and call.func.attr in _LOG_METHODS
        and keyword_true(call, "sync_dist")
        and not keyword_true(call, "rank_zero_only")
    )


class _LogReceivers:
    """Which expressions of a module hold a LightningModule whose log may synchronise."""

    def __init__(self, analysis: ModuleAnalysis) -> None:
        self._analysis = analysis
        self._kinds = analysis.objects.class_kinds
        self._trainers: LightningTrainers | None = None

    def holds_module(self, receiver: ast.expr, scope: Scope) -> bool:
        if not isinstance(receiver, ast.Name):
            return False
        if receiver.id == self._instance_of(scope):
            return True
        if self._trainers is None:
            self._trainers = LightningTrainers(self._analysis)
        return receiver.id in self._trainers.module_parameters(scope)

    def _instance_of(self, scope: Scope) -> str | None:
        """The instance parameter of the method ``scope`` is (or is nested in), when its
        class may be a LightningModule."""
        current: ast.AST | None = scope
        scope_of = self._analysis.nodes.scope_of
        while current is not None and not isinstance(current, ast.Module):
            owner = scope_of.get(current)
            if isinstance(current, _FUNCTIONS) and isinstance(owner, ast.ClassDef):
                if self._kinds.kind(owner) not in _LOGGING_KINDS:
                    return None
                return instance_parameter(current)
            current = owner
        return None


def _identity(call: ast.Call, log: ast.Call | None) -> tuple[str, tuple[str, ...] | None]:
    """What pairs a synchronising site: a log by its method and keys, a call of a local
    function by the function."""
    if log is None:
        assert isinstance(call.func, ast.Attribute)
        return call.func.attr, logged_keys(call)
    callee = dotted_name(call.func) or ""
    return callee, (callee,)


def _logged_instead(
    call: ast.Call,
    log: ast.Call | None,
    scope: Scope,
    guard: RankGuard,
    guarded: list[tuple[ast.Call, Scope, RankGuard]],
    reached: dict[int, ast.Call],
) -> set[str]:
    """The keys (or local functions) the ranks ``guard`` leaves out log with
    ``sync_dist`` by the same method (or call), in the same function, under the
    opposite answer of the same test."""
    if guard.runs_when is None:
        return set()
    test, runs_when = _positive(guard.test, guard.runs_when)
    spelled = ast.dump(test)
    kind = _identity(call, log)[0]
    others: set[str] = set()
    for other, other_scope, other_guard in guarded:
        if other_scope is not scope or other_guard.runs_when is None:
            continue
        other_log = reached.get(id(other))
        other_kind, other_keys = _identity(other, other_log)
        if other_kind != kind:
            continue
        other_test, other_runs = _positive(other_guard.test, other_guard.runs_when)
        if other_runs is not runs_when and ast.dump(other_test) == spelled:
            others.update(other_keys or ())
    return others


def _positive(test: ast.AST, runs_when: bool) -> tuple[ast.AST, bool]:
    """``not x`` taken as ``x`` with the answer turned."""
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, runs_when = test.operand, not runs_when
    return test, runs_when


def logged_keys(call: ast.Call) -> tuple[str, ...] | None:
    """The metric names a ``log`` / ``log_dict`` call logs, None when one is not a
    literal (``log(name, value)``, ``log_dict(dictionary)``, their keywords)."""
    assert isinstance(call.func, ast.Attribute)
    method = call.func.attr
    first: ast.expr | None = call.args[0] if call.args else None
    keyword = "name" if method == "log" else "dictionary"
    first = first or next((k.value for k in call.keywords if k.arg == keyword), None)
    if method == "log":
        key = _string(first)
        return (key,) if key is not None else None
    if not isinstance(first, ast.Dict):
        return None
    keys = [_string(key) for key in first.keys]
    return tuple(k for k in keys if k is not None) if None not in keys else None


def _string(expression: ast.expr | None) -> str | None:
    if isinstance(expression, ast.Constant) and isinstance(expression.value, str):
        return expression.value
    return None
