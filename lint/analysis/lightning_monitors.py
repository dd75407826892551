"""Lightning metrics that callbacks monitor, and the logs that leave them rank-local.

Callbacks are known by what they are, never by a variable's name: an allocation of
Lightning's ``ModelCheckpoint`` / ``EarlyStopping`` (by the resolved import), or of a
class of the module that derives from one (its ``super().__init__(monitor=...)``). The
monitored key is the literal ``monitor``.

A metric is logged *rank-locally* when a LightningModule's (also a NeMo model's:
``ModelPT`` and the models of ``nemo.collections``) ``self.log`` /
``self.log_dict`` of a literal key

- passes ``rank_zero_only=True``: Lightning then reduces nothing, so every rank keeps
  its own value (unless the value already agrees: a constant, the step, epoch or
  learning rate, the buffer of an earlier in-place collective, or a ``torchmetrics``
  metric, which syncs itself);
- or runs on some ranks only: control-dependent on a test that reads the rank (the
  core's divergence and post-dominators), in a function decorated ``@rank_zero_only``,
  or in a method of the class that is called only from such places.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from ddplint.analysis.control_flow import Scope
from ddplint.analysis.divergence import AGREEING_BUFFERS, Source, distributed_function
from ddplint.analysis.effects import own_calls
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.names import dotted_name, keyword_true

_CALLBACK_PACKAGES = ("lightning.pytorch.callbacks", "pytorch_lightning.callbacks")
#: Callback classes that read ``trainer.callback_metrics[monitor]`` on every rank.
MONITORING_CALLBACKS = frozenset({"ModelCheckpoint", "EarlyStopping"})
#: The position of ``monitor`` among each callback's positional parameters.
_MONITOR_POSITION = {"ModelCheckpoint": 2, "EarlyStopping": 0}
_METRIC_PACKAGES = ("torchmetrics.",)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: Attributes of the training schedule, the same on every rank.
_SCHEDULE_ATTRIBUTES = frozenset(
    {"global_step", "current_epoch", "param_groups", "get_last_lr", "get_lr"}
)
#: Methods whose result holds what their receiver holds (``metric.compute()``).
_SAME_VALUE_METHODS = frozenset({"compute", "item", "detach", "cpu", "float"})


@dataclass(frozen=True)
class Monitor:
    """A callback allocation that monitors ``key``; ``callback`` is the Lightning class
    it is (``ModelCheckpoint`` / ``EarlyStopping``)."""

    key: str
    callback: str
    call: ast.Call

    @property
    def line(self) -> int:
        return self.call.lineno


@dataclass(frozen=True)
class RankLocalLog:
    """A log of ``key`` that leaves the value rank-local; ``reason`` says why, in
    words, ``on_some_ranks`` whether the call itself is skipped on other ranks."""

    key: str
    call: ast.Call
    reason: str
    on_some_ranks: bool

    @property
    def line(self) -> int:
        return self.call.lineno


def lightning_callback(resolved: str | None) -> str | None:
    """``ModelCheckpoint`` for any import path of Lightning's ``ModelCheckpoint``."""
    if resolved is None:
        return None
    package, _, name = resolved.rpartition(".")
    if name not in MONITORING_CALLBACKS:
        return None
    if any(package == p or package.startswith(p + ".") for p in _CALLBACK_PACKAGES):
        return name
    return None


def _string(expression: ast.expr | None) -> str | None:
    if isinstance(expression, ast.Constant) and isinstance(expression.value, str):
        return expression.value
    return None


def _argument(call: ast.Call, keyword: str, position: int | None) -> ast.expr | None:
    for given in call.keywords:
        if given.arg == keyword:
            return given.value
    if (
        position is not None
        and len(call.args) > position
        and not any(isinstance(a, ast.Starred) for a in call.args[: position + 1])
    ):
        return call.args[position]
    return None


class LightningMonitors:
    """The monitors and rank-local metric logs of one module."""

    def __init__(self, analysis: ModuleAnalysis) -> None:
        self.analysis = analysis
        self._subclasses = self._callback_subclasses()
        self.monitors = sorted(self._monitors(), key=lambda m: (m.line, m.call.col_offset))
        self._lightning_classes = analysis.objects.lightning_classes
        self._metric_attributes = self._torchmetrics_attributes()
        self.logs = list(self._all_logs())

    # -- callbacks --------------------------------------------------------------------

    def _callback_subclasses(self) -> dict[str, tuple[str, str | None]]:
        """Class name -> (the Lightning callback it derives from, the monitor its
        ``__init__`` hands to ``super().__init__``)."""
        found: dict[str, tuple[str, str | None]] = {}
        for cls in self.analysis.nodes.of_type(ast.ClassDef):
            for base in cls.bases:
                callback = lightning_callback(self.analysis.names.resolve(base))
                if callback is not None:
                    found[cls.name] = (callback, _super_monitor(cls, callback))
        return found

    def _monitors(self) -> Iterator[Monitor]:
        for calls in self.analysis.nodes.calls_by_scope.values():
            for call in calls:
                callback = lightning_callback(self.analysis.names.resolve(call.func))
                key: str | None = None
                if callback is not None:
                    key = _string(_argument(call, "monitor", _MONITOR_POSITION[callback]))
                elif isinstance(call.func, ast.Name) and call.func.id in self._subclasses:
                    callback, inherited = self._subclasses[call.func.id]
                    key = _string(_argument(call, "monitor", None)) or inherited
                if callback is not None and key:
                    yield Monitor(key, callback, call)

    def monitored(self, key: str) -> Monitor | None:
        """The first callback of the module that monitors ``key``."""
        return next((m for m in self.monitors if m.key == key), None)

    # -- logs -------------------------------------------------------------------------

    def _torchmetrics_attributes(self) -> frozenset[str]:
        """``self.x`` assigned a ``torchmetrics`` object: its value syncs itself."""
        found = set()
        for assignment in self.analysis.nodes.of_type(ast.Assign):
            value = assignment.value
            if not isinstance(value, ast.Call):
                continue
            resolved = self.analysis.names.resolve(value.func) or ""
            if not resolved.startswith(_METRIC_PACKAGES):
                continue
            for target in assignment.targets:
                spelled = dotted_name(target)
                if spelled is not None and spelled.startswith("self."):
                    found.add(spelled)
        return frozenset(found)

    def _methods(self) -> Iterator[tuple[ast.ClassDef, ast.FunctionDef | ast.AsyncFunctionDef]]:
        for cls in self._lightning_classes:
            for statement in cls.body:
                if isinstance(statement, _FUNCTIONS):
                    yield cls, statement

    def _all_logs(self) -> Iterator[RankLocalLog]:
        guarded_methods = self._methods_called_on_some_ranks()
        for _, method in self._methods():
            decorator = _rank_only_decorator(self.analysis, method)
            for statement_node, call, keys in self._logs_in(method):
                rank_zero_only = keyword_true(call, "rank_zero_only")
                if decorator is not None:
                    reason = f"it runs in a function decorated `@{decorator}`"
                    on_some = True
                elif (guard := self._rank_guard(method, statement_node)) is not None:
                    reason = f"whether it runs is decided by {guard}"
                    on_some = True
                elif method.name in guarded_methods:
                    reason = guarded_methods[method.name]
                    on_some = True
                elif rank_zero_only and not self._agrees(method, call):
                    reason = "it passes `rank_zero_only=True`, so Lightning reduces nothing"
                    on_some = False
                else:
                    continue
                for key in keys:
                    yield RankLocalLog(key, call, reason, on_some)

    def _logs_in(
        self, method: ast.FunctionDef | ast.AsyncFunctionDef
    ) -> Iterator[tuple[ast.AST, ast.Call, list[str]]]:
        """(statement, call, literal keys) of each ``self.log`` / ``self.log_dict``."""
        graph = self.analysis.graphs.graph(method)
        for statement in graph.statements():
            for call in own_calls(statement):
                keys = logged_keys(call)
                if keys:
                    yield statement, call, keys

    def _rank_guard(self, method: Scope, statement: ast.AST) -> str | None:
        """The rank test ``statement`` depends on, spelled with its line; None if none."""
        facts = self.analysis.function(method)
        for node in facts.graph.nodes_of(statement):
            for dependence in facts.dominance.all_dependences(node):
                taint = facts.divergence.test_taint(dependence.test)
                if taint is not None and taint.source in (Source.RANK, Source.DECIDED):
                    test = dependence.test.statement
                    spelled = _header(test) if test is not None else taint.spelled
                    return f"the rank test `{spelled}` (line {dependence.test.line})"
        return None

    def _methods_called_on_some_ranks(self) -> dict[str, str]:
        """Methods of a LightningModule class whose every call in the class is on some
        ranks only (``if self.global_rank == 0: self._log_metrics()``), with why."""
        logging = {method.name for _, method in self._methods() if any(self._logs_in(method))}
        calls: dict[str, list[str | None]] = {}
        for _, method in self._methods():
            decorator = _rank_only_decorator(self.analysis, method)
            graph = self.analysis.graphs.graph(method)
            for statement in graph.statements():
                for call in own_calls(statement):
                    spelled = dotted_name(call.func) or ""
                    if spelled.removeprefix("self.") not in logging or spelled.count(".") != 1:
                        continue  # only the methods that log need their callers asked
                    why: str | None = None
                    if decorator is not None:
                        why = f"`{method.name}`, decorated `@{decorator}`"
                    elif (guard := self._rank_guard(method, statement)) is not None:
                        why = f"`{method.name}` (line {call.lineno}), under {guard}"
                    calls.setdefault(spelled[5:], []).append(why)
        return {
            name: f"it runs in `{name}`, called only on some ranks: from {whys[0]}"
            for name, whys in calls.items()
            if all(why is not None for why in whys)
        }

    def _agrees(self, method: Scope, call: ast.Call) -> bool:
        """Whether the logged value is the same on every rank: the buffer of an
        in-place collective of the method, or a ``torchmetrics`` metric."""
        value = call.args[1] if len(call.args) > 1 else None
        value = next((k.value for k in call.keywords if k.arg == "value"), value)
        if value is None:
            return False
        if isinstance(value, ast.Constant) or _reads_schedule(value):
            return True
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr in _SAME_VALUE_METHODS
        ):
            value = value.func.value
        spelled = dotted_name(value)
        if spelled is None:
            return False
        if spelled in self._metric_attributes:
            return True
        return spelled in self._agreeing_buffers(method, call.lineno)

    def _agreeing_buffers(self, method: Scope, before: int) -> set[str]:
        """Buffers of the in-place collectives the method issues before line ``before``."""
        found = set()
        for call in self.analysis.nodes.calls_by_scope.get(method, []):
            if call.lineno >= before:
                continue
            function = distributed_function(self.analysis.names.resolve(call.func))
            if function not in AGREEING_BUFFERS:
                continue
            position, keyword = AGREEING_BUFFERS[function]
            buffer = _argument(call, keyword, position)
            spelled = dotted_name(buffer) if buffer is not None else None
            if spelled is not None:
                found.add(spelled)
        return found

    def rank_local(self, key: str) -> list[RankLocalLog]:
        """The rank-local logs of ``key`` when every literal log of it in the module is
        rank-local (logged both ways: which one the callback sees cannot be told)."""
        local = [log for log in self.logs if log.key == key]
        if not local or self._literal_logs(key) > len({id(log.call) for log in local}):
            return []
        return local

    def _literal_logs(self, key: str) -> int:
        return sum(
            1
            for _, method in self._methods()
            for _, call, keys in self._logs_in(method)
            if key in keys
        )


def _reads_schedule(value: ast.expr) -> bool:
    """Whether a logged value reads the step, the epoch or the learning rate: the same
    on every rank (``float(self.trainer.global_step)``, ``optimizer.param_groups[0]["lr"]``)."""
    return any(
        isinstance(node, ast.Attribute) and node.attr in _SCHEDULE_ATTRIBUTES
        for node in ast.walk(value)
    )


def logged_keys(call: ast.Call) -> list[str]:
    """Literal metric names of ``self.log("name", ...)`` / ``self.log_dict({...})``."""
    func = call.func
    if not isinstance(func, ast.Attribute) or dotted_name(func.value) != "self":
        return []
    first = call.args[0] if call.args else None
    if func.attr == "log":
        name = _string(first or next((k.value for k in call.keywords if k.arg == "name"), None))
        return [name] if name else []
    if func.attr != "log_dict":
        return []
    first = first or next((k.value for k in call.keywords if k.arg == "dictionary"), None)
    if isinstance(first, ast.Dict):
        return [k for k in map(_string, first.keys) if k]
    return []


def _super_monitor(cls: ast.ClassDef, callback: str) -> str | None:
    """The literal monitor a subclass's ``__init__`` hands to its Lightning base."""
    for statement in cls.body:
        if not isinstance(statement, _FUNCTIONS) or statement.name != "__init__":
            continue
        for node in ast.walk(statement):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "__init__"
                and isinstance(node.func.value, ast.Call)
                and dotted_name(node.func.value.func) == "super"
            ):
                return _string(_argument(node, "monitor", _MONITOR_POSITION[callback]))
    return None


def _rank_only_decorator(
    analysis: ModuleAnalysis, function: ast.FunctionDef | ast.AsyncFunctionDef
) -> str | None:
    found = analysis.names.rank_only_decorator(function)
    if found is None:
        return None
    resolved = analysis.names.resolve(found[1]) or ""
    return resolved.rsplit(".", 1)[-1]


def _header(statement: ast.AST) -> str:
    if isinstance(statement, (ast.If, ast.While)):
        text = ast.unparse(statement.test)
    else:
        text = ast.unparse(statement).splitlines()[0]
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "..."
