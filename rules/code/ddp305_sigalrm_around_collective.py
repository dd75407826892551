"""DDP305: a SIGALRM "timeout" around a collective."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import libcst as cst

from ddplint.code.context import CodeContext
from ddplint.code.syntax.call_args import argument
from ddplint.code.syntax.constants import literal_value
from ddplint.code.syntax.names import dotted_name
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
    name = "sigalrm-around-collective"
    summary = "signal.alarm / setitimer used as a timeout around a collective"
    severity = Severity.WARNING
    needles = ("alarm", "setitimer")

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        functions = {f.name.value: f for f in ctx.index.nodes(cst.FunctionDef)}
        alarm_managers = {
            name
            for name, function in functions.items()
            if _is_context_manager(ctx, function) and _sets_alarm_in(ctx, function)
        }
        for call in ctx.index.nodes(cst.Call):
            if _alarm_seconds(ctx, call) is not None:
                collective = _collective_after(ctx, call, functions)
                if collective is not None:
                    yield _finding(self, ctx, call, collective)
        for with_node in ctx.index.nodes(cst.With):
            for item in with_node.items:
                if not isinstance(item.item, cst.Call):
                    continue
                if _callee_name(item.item.func) not in alarm_managers:
                    continue
                collective = _first_collective(
                    ctx, ctx.index.walk_within(with_node.body), functions
                )
                if collective is not None:
                    yield _finding(self, ctx, item.item, collective)


def _alarm_seconds(ctx: CodeContext, call: cst.Call) -> cst.BaseExpression | None:
    """The delay of an alarm that ``call`` arms (None for other calls and for cancels)."""
    name = ctx.names.qualified_name(call.func)
    if name == "signal.alarm":
        seconds = argument(call, "seconds", 0)
    elif name == "signal.setitimer":
        which = argument(call, "which", 0)
        if which is None or ctx.names.qualified_name(which.value) not in (
            "signal.ITIMER_REAL",
            None,
        ):
            return None
        seconds = argument(call, "seconds", 1)
    else:
        return None
    if seconds is None or literal_value(seconds.value) == 0:
        return None
    return seconds.value


def _is_cancel(ctx: CodeContext, call: cst.Call) -> bool:
    name = ctx.names.qualified_name(call.func)
    if name not in ("signal.alarm", "signal.setitimer"):
        return False
    return _alarm_seconds(ctx, call) is None


def _collective_after(
    ctx: CodeContext, alarm: cst.Call, functions: dict[str, cst.FunctionDef]
) -> cst.Call | None:
    """The first collective reached after ``alarm`` in its function, before a cancel."""
    scope = ctx.index.enclosing_function(alarm) or ctx.module
    start = ctx.index.order[alarm]
    later = (n for n in ctx.index.walk_within(scope) if ctx.index.order[n] > start)
    return _first_collective(ctx, later, functions, stop_at_cancel=True)


def _first_collective(
    ctx: CodeContext,
    nodes: Iterable[cst.CSTNode],
    functions: dict[str, cst.FunctionDef],
    *,
    stop_at_cancel: bool = False,
) -> cst.Call | None:
    for node in nodes:
        if not isinstance(node, cst.Call):
            continue
        if stop_at_cancel and _is_cancel(ctx, node):
            return None
        found = _collective_of_call(ctx, node, functions)
        if found is not None:
            return found
    return None


def _collective_of_call(
    ctx: CodeContext, call: cst.Call, functions: dict[str, cst.FunctionDef]
) -> cst.Call | None:
    """``call`` itself when it is a collective, or the first collective in the body of
    the same-module function it calls (one level)."""
    if call in ctx.collectives:
        return call
    callee = functions.get(_callee_name(call.func) or "")
    if callee is None:
        return None
    for node in ctx.index.walk_within(callee):
        if isinstance(node, cst.Call) and node in ctx.collectives:
            return node
    return None


def _callee_name(func: cst.BaseExpression) -> str | None:
    """``helper`` for ``helper(...)`` and ``self.helper(...)``."""
    dotted = dotted_name(func)
    if dotted is None:
        return None
    if "." not in dotted:
        return dotted
    head, _, rest = dotted.partition(".")
    return rest if head in ("self", "cls") and "." not in rest else None


def _is_context_manager(ctx: CodeContext, function: cst.FunctionDef) -> bool:
    for decorator in function.decorators:
        name = ctx.names.qualified_name(decorator.decorator) or dotted_name(decorator.decorator)
        if name in _CONTEXT_MANAGER_DECORATORS:
            return True
    return False


def _sets_alarm_in(ctx: CodeContext, function: cst.FunctionDef) -> bool:
    return any(
        isinstance(node, cst.Call) and _alarm_seconds(ctx, node) is not None
        for node in ctx.index.walk_within(function)
    )


def _finding(rule: CodeRule, ctx: CodeContext, alarm: cst.Call, collective: cst.Call) -> Finding:
    name = " ".join(ctx.node_text(collective.func).split())
    summary = f"a SIGALRM timeout cannot interrupt `{name}()`"
    return ctx.finding(rule, alarm, _message(ctx, alarm, collective), summary=summary)


def _message(ctx: CodeContext, alarm: cst.Call, collective: cst.Call) -> str:
    line = ctx.range_of(collective)[0]
    name = " ".join(ctx.node_text(collective.func).split())
    return (
        f"a SIGALRM timeout cannot interrupt `{name}()` (line {line}): a rank blocked in a "
        "collective runs the handler only after it returns, on that rank alone; use the "
        "process-group timeout (`init_process_group(timeout=...)`) or `monitored_barrier`"
    )
