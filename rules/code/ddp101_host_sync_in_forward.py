"""DDP101: host synchronisation in a forward path."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.control_flow import single_bindings
from ddplint.analysis.device_queue import synchronizes
from ddplint.analysis.step_paths import Loop
from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import (
    ast_node_text,
    call_statement,
    remove_ast_call_statement,
    remove_ast_statement,
    shares_a_line,
)
from ddplint.finding import Applicability, Edit, Finding, Fix, Severity
from ddplint.rule import CodeRule

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
    `predict_step` of an `nn.Module` or `LightningModule` subclass (what a class is comes
    from its bases, never its name), the per-step hooks of a callback or `Trainer`
    subclass, the body of a training loop that calls `backward()`, and any function of
    the same module those call.

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
    single-process arm of the run's switch, under an option that is off by default: a
    parameter defaulting to `False`, an `action="store_true"` command-line option, a
    config field; the option's name does not decide); nor one right after another wait of the
    same pass with no new device work between (`loss.item()`, a gradient scaler's
    `step`, another synchronisation: the queue is already drained). A synchronisation
    followed by a read (`torch.cuda.synchronize(); meter.update(loss.item())`) is
    reported here, once: the read after it waits for nothing new (DDP102 is silent);
    one right before a read of CUDA-event timings (`start.elapsed_time(end)`) is
    needed and not reported. This rule is built on the analysis core.

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
    needs_peers = True
    fix_applicability = Applicability.UNSAFE
    needles = ("synchronize",)
    reads_libcst = False

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        analysis = ctx.analysis
        for call in analysis.nodes.of_type(ast.Call):
            if not _synchronizes(ctx, call):
                continue
            path = ctx.step_paths.reason(call, evaluation=True)
            if path is None or (path.loop is not None and _reads_event_timings(path.loop)):
                continue  # a benchmark loop: it times GPU work with CUDA events
            if ctx.device_queue.queue_drained(call) or _before_event_timing(ctx, call):
                continue
            text = " ".join(ast_node_text(ctx, call.func).split()) + "()"
            message = (
                f"`{text}` in {path.describe()} blocks the host every step until all "
                "queued GPU work (NCCL collectives included) has finished; if the ranks "
                "fall out of step it hangs here with no timeout"
            )
            if _times_with_host_clock(ctx, call):
                message += "; to time GPU work use torch.cuda.Event(enable_timing=True)"
            where = "a training loop" if path.loop is not None else f"`{path.entry}`"
            summary = f"`{text}` blocks the host every step in {where}"
            yield ctx.ast_finding(self, call, message, fix=_fix(ctx, call), summary=summary)


def _synchronizes(ctx: CodeContext, call: ast.Call) -> bool:
    """``analysis.device_queue.synchronizes``, also through a name bound once to a
    stream (``stream = torch.cuda.Stream(); stream.synchronize()``)."""
    resolve = ctx.analysis.names.resolve
    if synchronizes(call, resolve):
        return True
    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        return False
    scope = ctx.step_paths.function_of(call) or ctx.analysis.module
    bound = single_bindings(scope).get(func.value.id)
    if not isinstance(bound, ast.Call):
        return False
    through = ast.Call(func=ast.Attribute(value=bound, attr=func.attr), args=[], keywords=[])
    return synchronizes(through, resolve)


def _fix(ctx: CodeContext, call: ast.Call) -> Fix | None:
    """Remove the synchronisation, with the ones right after it that wait for nothing
    while it stands (``synchronize(); synchronize()``): they block the host in its place
    once it is gone."""
    edit = remove_ast_call_statement(ctx, call)
    if edit is None:
        return None
    found = call_statement(ctx.analysis.module, call)
    if found is None:
        return Fix(Applicability.UNSAFE, (edit,), "Remove the host synchronisation")
    statement, block = found
    run = [statement]
    for following in block[block.index(statement) + 1 :]:
        if not (
            isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Call)
            and _synchronizes(ctx, following.value)
            and not shares_a_line(following, block)
        ):
            break
        run.append(following)
    if len(run) == 1 or shares_a_line(statement, block):
        return Fix(Applicability.UNSAFE, (edit,), "Remove the host synchronisation")
    edits: tuple[Edit, ...]
    if len(run) == len(block):
        first, last = ctx.ast_range(run[0]), ctx.ast_range(run[-1])
        edits = (Edit(first[0], first[1], last[2], last[3], "pass"),)
    else:
        edits = tuple(remove_ast_statement(ctx, s, block) for s in run)
    return Fix(Applicability.UNSAFE, edits, f"Remove the {len(run)} host synchronisations in a row")


def _times_with_host_clock(ctx: CodeContext, call: ast.Call) -> bool:
    scope = ctx.step_paths.function_of(call) or ctx.analysis.module
    return any(
        ctx.analysis.names.resolve(node.func) in HOST_TIMERS
        for node in ctx.analysis.nodes.calls_by_scope.get(scope, [])
    )


#: Reads the time between two CUDA events: the synchronisation before it is needed.
_EVENT_TIMING = "elapsed_time"


def _reads_event_timings(loop: Loop) -> bool:
    """The loop times GPU work with CUDA events (``start.elapsed_time(end)``), which
    needs the synchronisation: a benchmark, not a training loop to speed up."""
    return any(_event_timing(node) for node in ast.walk(loop))


def _before_event_timing(ctx: CodeContext, call: ast.Call) -> bool:
    """The statement right after the call's reads CUDA-event timings, which need it."""
    found = call_statement(ctx.analysis.module, call)
    if found is None:
        return False
    statement, block = found
    following = block[block.index(statement) + 1 :]
    return bool(following) and any(_event_timing(n) for n in ast.walk(following[0]))


def _event_timing(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == _EVENT_TIMING
    )
