"""DDP101: host synchronisation in a forward path."""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst

from ddplint.analysis.device_queue import ACCELERATOR_GETTERS, STREAM_FACTORIES, SYNC_FUNCTIONS
from ddplint.code.context import CodeContext
from ddplint.code.edits.edits import remove_call_statement
from ddplint.code.steps.forward_paths import PathReason
from ddplint.code.steps.training_steps import few_iterations
from ddplint.code.syntax.names import dotted_name
from ddplint.finding import Applicability, Finding, Fix, Severity
from ddplint.rule import CodeRule

#: A sync under ``if <flag>:`` whose name says it is opt-in diagnostics is intended.
DIAGNOSTIC_FLAG = re.compile(
    r"debug|profil|timing|timer|benchmark|sync|verbose|trace|measure|wall_clock", re.I
)
HOST_TIMERS = frozenset(
    {
        "time.time",
        "time.perf_counter",
        "time.perf_counter_ns",
        "time.monotonic",
        "time.monotonic_ns",
        "time.time_ns",
        "timeit.default_timer",
    }
)


class HostSyncInForward(CodeRule):
    """
    ## What it does
    Flags `torch.cuda.synchronize()` (and `torch.cuda.current_stream().synchronize()`,
    `torch.cuda.Stream(...).synchronize()`, `torch.accelerator.synchronize()`) in a
    forward path: `forward` / `training_step` / `validation_step` / `test_step` /
    `predict_step` of an `nn.Module` or `LightningModule` subclass, any function of the
    same module those call, or the body of a training loop that calls `backward()`.

    ## Why is this bad?
    The call blocks the host until every kernel queued on the device has finished,
    NCCL collectives included. Under DDP the forward pass already queues a buffer
    broadcast, so the call acts as a GPU barrier on every step: it stalls the CPU/GPU
    pipeline (one report measured ~25% slower training from per-block timing), and when
    the ranks fall out of step for any other reason, the process hangs at this line with
    no timeout of its own. It does not deadlock correct code by itself; it turns any
    desync into a silent host hang and costs time on every step.

    Code off the per-step path is not flagged: benchmark or profiling helpers that no
    forward path calls, epoch-end hooks, one-off setup; nor a call that runs only now
    and then (in an `except` handler, on the rare way of a periodic test such as
    `if step % log_every == 0:` or `if it == 0:`, while exporting or tracing, in the
    single-process arm of the run's switch); nor one right after another wait of the
    same pass with no new device work between (`loss.item()`, a gradient scaler's
    `step`, another synchronisation: the queue is already drained). A synchronisation
    followed by a read (`torch.cuda.synchronize(); meter.update(loss.item())`) is
    reported here, once: the read after it waits for nothing new (DDP102 is silent);
    one right before a read of CUDA-event timings (`start.elapsed_time(end)`) is
    needed and not reported.

    ## Example
    ```python
    class Encoder(nn.Module):
        def forward(self, x):
            torch.cuda.synchronize()
            start = time.perf_counter()
            y = self.layers(x)
            torch.cuda.synchronize()
            self.elapsed = time.perf_counter() - start
            return y
    ```

    ## Use instead
    ```python
    class Encoder(nn.Module):
        def forward(self, x):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            y = self.layers(x)
            end.record()  # read start.elapsed_time(end) later, off the hot path
            return y
    ```

    ## Fix safety
    The fix removes the statement (a block left empty gets `pass`). It is unsafe:
    host-side timing or code that reads device memory from the host may depend on the
    wait. Apply with `--unsafe-fixes`.

    ## References
    - PyTorch docs: CUDA semantics, asynchronous execution and `torch.cuda.Event`.
    """

    code = "DDP101"
    name = "host-sync-in-forward"
    summary = "torch.cuda.synchronize() on the per-step forward path"
    severity = Severity.WARNING
    #: Preview since issue 23: under the bar of precision on blind code (docs/precision.md).
    default_enabled = False
    fix_applicability = Applicability.UNSAFE
    needles = ("synchronize",)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        for call in ctx.index.nodes(cst.Call):
            if not self._is_host_sync(ctx, call):
                continue
            reason = ctx.forward_paths.reason_for(call)
            loop = ctx.training_steps.training_loop_of(call)
            if reason is None and loop is not None:
                if few_iterations(loop) or _reads_event_timings(ctx, loop):
                    continue  # a unit test, warm-up or benchmark loop
                reason = PathReason("a training loop that calls backward()", ())
            if reason is None or _under_diagnostic_flag(ctx, call) or _costs_nothing(ctx, call):
                continue
            text = " ".join(ctx.node_text(call.func).split()) + "()"
            message = (
                f"`{text}` in {reason.describe()} blocks the host every step until all "
                "queued GPU work (NCCL collectives included) has finished; if the ranks "
                "fall out of step it hangs here with no timeout"
            )
            if self._times_with_host_clock(ctx, call):
                message += "; to time GPU work use torch.cuda.Event(enable_timing=True)"
            entry = reason.entry
            where = f"`{entry}`" if entry.replace(".", "").isidentifier() else "a training loop"
            summary = f"`{text}` blocks the host every step in {where}"
            yield ctx.finding(self, call, message, self._fix(ctx, call), summary=summary)

    @staticmethod
    def _is_host_sync(ctx: CodeContext, call: cst.Call) -> bool:
        name = ctx.names.qualified_name(call.func)
        if name in SYNC_FUNCTIONS:
            return True
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "synchronize"):
            return False
        receiver = func.value
        if isinstance(receiver, cst.Call):
            factory = ctx.names.qualified_name(receiver.func)
            if factory in STREAM_FACTORIES or factory in ACCELERATOR_GETTERS:
                return True
            # get_accelerator().current_stream().synchronize()
            inner = receiver.func
            return (
                isinstance(inner, cst.Attribute)
                and inner.attr.value == "current_stream"
                and isinstance(inner.value, cst.Call)
                and ctx.names.qualified_name(inner.value.func) in ACCELERATOR_GETTERS
            )
        if isinstance(receiver, cst.Name):
            return _bound_to_stream(ctx, call, receiver.value)
        return False

    @staticmethod
    def _times_with_host_clock(ctx: CodeContext, call: cst.Call) -> bool:
        scope = ctx.index.enclosing_function(call) or ctx.index.module
        return any(
            isinstance(node, cst.Call) and ctx.names.qualified_name(node.func) in HOST_TIMERS
            for node in ctx.index.walk_within(scope)
        )

    @staticmethod
    def _fix(ctx: CodeContext, call: cst.Call) -> Fix | None:
        edit = remove_call_statement(ctx, call)
        if edit is None:
            return None
        return Fix(Applicability.UNSAFE, (edit,), "Remove the host synchronisation")


def _costs_nothing(ctx: CodeContext, call: cst.Call) -> bool:
    """An earlier wait of the same pass already drained the queue (a read, a gradient
    scaler's step, another synchronisation, with no new device work since:
    ``analysis.device_queue``), it runs only now and then (on an error, a periodic test,
    an export, a single-process run), or the next statement reads CUDA-event timings
    (``start.elapsed_time(end)``), which need it."""
    if ctx.step_waits.occasional(call) is not None or ctx.step_waits.queue_drained(call):
        return True
    statement = ctx.index.enclosing_statement(call)
    block = ctx.index.parent.get(statement)
    body = list(getattr(block, "body", ()))
    if statement not in body or body.index(statement) + 1 >= len(body):
        return False
    following = body[body.index(statement) + 1]
    return any(
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == _EVENT_TIMING
        for node in (following, *ctx.index.walk_within(following))
    )


#: Reads the time between two CUDA events: the synchronisation before it is needed.
_EVENT_TIMING = "elapsed_time"


def _reads_event_timings(ctx: CodeContext, loop: cst.For | cst.While) -> bool:
    """The loop times GPU work with CUDA events (``start.elapsed_time(end)``), which
    needs the synchronisation: a benchmark, not a training loop to speed up."""
    return any(
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == _EVENT_TIMING
        for node in ctx.index.walk_within(loop)
    )


def _bound_to_stream(ctx: CodeContext, call: cst.Call, name: str) -> bool:
    """``name`` is assigned a CUDA stream in the same function (``s = current_stream()``)."""
    scope = ctx.index.enclosing_function(call) or ctx.index.module
    for node in ctx.index.walk_within(scope):
        if (
            isinstance(node, cst.Assign)
            and isinstance(node.value, cst.Call)
            and any(isinstance(t.target, cst.Name) and t.target.value == name for t in node.targets)
            and ctx.names.qualified_name(node.value.func) in STREAM_FACTORIES
        ):
            return True
    return False


def _under_diagnostic_flag(ctx: CodeContext, call: cst.Call) -> bool:
    """``if self.debug_sync:`` / ``if profile_enabled and ...:`` around the call, in the
    same function."""
    for ancestor in ctx.index.ancestors(call):
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
            return False
        if isinstance(ancestor, cst.If) and any(
            _is_diagnostic_flag(t) for t in _conjuncts(ancestor.test)
        ):
            return True
    return False


def _conjuncts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """``a and b and c`` -> [a, b, c]; anything else -> [test]."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return [*_conjuncts(test.left), *_conjuncts(test.right)]
    return [test]


def _is_diagnostic_flag(test: cst.BaseExpression) -> bool:
    if isinstance(test, cst.UnaryOperation):
        test = test.expression
    name = dotted_name(test)
    return name is not None and bool(DIAGNOSTIC_FLAG.search(name.rsplit(".", 1)[-1]))
