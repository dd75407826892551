"""DDP305: a SIGALRM "timeout" around a collective."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

from ddplint.analysis.constants import literal_value, nodes_within, scope_nodes
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.names import Names, dotted_name, passed_argument
from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import ast_node_text
from ddplint.finding import Finding, Severity
from ddplint.rule import CodeRule

_CONTEXT_MANAGER_DECORATORS = frozenset({"contextlib.contextmanager", "contextmanager"})


class SigalrmAroundCollective(CodeRule):
    """
    ## What it does
    Flags `signal.alarm(N)` / `signal.setitimer(signal.ITIMER_REAL, N)` set before a
    `torch.distributed` collective in the same function (up to the `alarm(0)` that
    cancels it), directly or through a function of the same module, and `with` blocks
    of a context manager from the same module that sets such an alarm around a
    collective.

    This rule is built on the analysis core (Python's `ast`; the collectives the code
    spells: a DDP model's forward or a backward does not count).

    ## Why is this bad?
    A signal handler runs in Python only between bytecodes. A rank blocked inside a
    collective is in C++ waiting on the network, so the alarm cannot interrupt it: the
    handler runs only after the collective returns, on that rank only, and raises there
    while the other ranks carry on (reproduced on gloo). The "timeout" never fires when
    it is needed, and when it does fire it desynchronises the ranks.

    ## Example
    ```python
    signal.signal(signal.SIGALRM, on_timeout)
    signal.alarm(60)
    dist.all_reduce(loss)
    signal.alarm(0)
    ```

    ## Use instead
    ```python
    dist.init_process_group("nccl", timeout=timedelta(seconds=60))
    dist.all_reduce(loss)
    # or, to learn which rank is missing (gloo group):
    dist.monitored_barrier(group=gloo_group, timeout=timedelta(seconds=60))
    ```

    ## Fix safety
    No automatic fix: the process-group timeout is set where the group is created.

    ## References
    - Python docs: `signal` ("handlers are executed ... between bytecode instructions").
    - PyTorch docs: `init_process_group(timeout=...)`, `monitored_barrier`.
    """

    code = "DDP305"
    needs_peers = True
    reads_libcst = False
    name = "sigalrm-around-collective"
    summary = "signal.alarm / setitimer used as a timeout around a collective"
    severity = Severity.WARNING
    needles = ("alarm", "setitimer")

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        collectives = _Collectives(ctx.analysis)
        names = ctx.analysis.names
        alarm_managers = {
            name
            for name, function in collectives.functions.items()
            if _is_context_manager(names, function) and _sets_alarm_in(names, function)
        }
        for call in collectives.calls:
            if _alarm_seconds(names, call) is not None:
                collective = collectives.after(call)
                if collective is not None:
                    yield _finding(self, ctx, call, collective)
        withs: list[ast.With | ast.AsyncWith] = [
            *ctx.analysis.nodes.of_type(ast.With),
            *ctx.analysis.nodes.of_type(ast.AsyncWith),
        ]
        for with_node in sorted(withs, key=_order):
            for item in with_node.items:
                manager = item.context_expr
                if not isinstance(manager, ast.Call):
                    continue
                if _callee_name(manager.func) not in alarm_managers:
                    continue
                collective = collectives.first(_calls_in(nodes_within(with_node.body)))
                if collective is not None:
                    yield _finding(self, ctx, manager, collective)


def _order(node: ast.AST) -> tuple[int, int, int, int]:
    """Source order, an enclosing node before the nodes it holds."""
    return (
        getattr(node, "lineno", 0),
        getattr(node, "col_offset", 0),
        -(getattr(node, "end_lineno", None) or 0),
        -(getattr(node, "end_col_offset", None) or 0),
    )


def _calls_in(nodes: Iterable[ast.AST]) -> list[ast.Call]:
    return sorted((n for n in nodes if isinstance(n, ast.Call)), key=_order)


class _Collectives:
    """The module's calls in source order, its functions by name, and which calls issue
    a collective (the core's answer)."""

    def __init__(self, analysis: ModuleAnalysis) -> None:
        self._analysis = analysis
        self.calls = sorted(
            (c for calls in analysis.nodes.calls_by_scope.values() for c in calls), key=_order
        )
        functions = sorted(analysis.nodes.functions(), key=_order)
        #: The module's functions by name (the last of a name wins).
        self.functions = {f.name: f for f in functions}

    def is_collective(self, call: ast.Call) -> bool:
        """Whether ``call`` is spelled as a collective (a DDP model's forward or a
        backward issues one inside, where an alarm is not what blocks)."""
        found = self._analysis.call_collective(call, self._analysis.nodes.call_scopes[id(call)])
        return found is not None and not found.implicit

    def after(self, alarm: ast.Call) -> ast.Call | None:
        """The first collective reached after ``alarm`` in its function (else the
        module's own code), before a cancel."""
        owner = self._analysis.constants.owner_of(self._analysis.nodes.call_scopes[id(alarm)])
        start = _order(alarm)
        later = (c for c in _calls_in(scope_nodes(owner)) if _order(c) > start)
        return self.first(later, stop_at_cancel=True)

    def first(self, calls: Iterable[ast.Call], *, stop_at_cancel: bool = False) -> ast.Call | None:
        """The first collective ``calls`` issue or reach (``stop_at_cancel``: none after
        the alarm is cancelled)."""
        for call in calls:
            if stop_at_cancel and _is_cancel(self._analysis.names, call):
                return None
            found = self._collective_of_call(call)
            if found is not None:
                return found
        return None

    def _collective_of_call(self, call: ast.Call) -> ast.Call | None:
        """``call`` itself when it is a collective, or the first collective in the body
        of the same-module function it calls (one level)."""
        if self.is_collective(call):
            return call
        callee = self.functions.get(_callee_name(call.func) or "")
        if callee is None:
            return None
        return next((c for c in _calls_in(scope_nodes(callee)) if self.is_collective(c)), None)


def _alarm_seconds(names: Names, call: ast.Call) -> ast.expr | None:
    """The delay of an alarm that ``call`` arms (None for other calls and for cancels)."""
    name = names.imported(call.func)
    if name == "signal.alarm":
        seconds = passed_argument(call, "seconds", 0)
    elif name == "signal.setitimer":
        which = passed_argument(call, "which", 0)
        if which is None or names.imported(which) not in ("signal.ITIMER_REAL", None):
            return None
        seconds = passed_argument(call, "seconds", 1)
    else:
        return None
    if seconds is None or literal_value(seconds) == 0:
        return None
    return seconds


def _is_cancel(names: Names, call: ast.Call) -> bool:
    if names.imported(call.func) not in ("signal.alarm", "signal.setitimer"):
        return False
    return _alarm_seconds(names, call) is None


def _callee_name(func: ast.expr) -> str | None:
    """``helper`` for ``helper(...)`` and ``self.helper(...)``."""
    dotted = dotted_name(func)
    if dotted is None:
        return None
    if "." not in dotted:
        return dotted
    head, _, rest = dotted.partition(".")
    return rest if head in ("self", "cls") and "." not in rest else None


def _is_context_manager(names: Names, function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(
        (names.imported(decorator) or dotted_name(decorator)) in _CONTEXT_MANAGER_DECORATORS
        for decorator in function.decorator_list
    )


def _sets_alarm_in(names: Names, function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(
        isinstance(node, ast.Call) and _alarm_seconds(names, node) is not None
        for node in scope_nodes(function)
    )


def _finding(rule: CodeRule, ctx: CodeContext, alarm: ast.Call, collective: ast.Call) -> Finding:
    name = " ".join(ast_node_text(ctx, collective.func).split())
    summary = f"a SIGALRM timeout cannot interrupt `{name}()`"
    return ctx.ast_finding(rule, alarm, _message(name, collective), summary=summary)


def _message(name: str, collective: ast.Call) -> str:
    return (
        f"a SIGALRM timeout cannot interrupt `{name}()` (line {collective.lineno}): a rank "
        "blocked in a collective runs the handler only after it returns, on that rank "
        "alone; use the process-group timeout (`init_process_group(timeout=...)`) or "
        "`monitored_barrier`"
    )
