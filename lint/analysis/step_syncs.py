"""Host synchronisations on the training-step path: a question to the analysis core.

``step_syncs(analysis, paths)``: each call on the step path (``step_paths``) that
makes the host wait for the device, with its kind, why it runs every step and the rank
guard that holds it (``rank_guards.guard_of``), if any:

- a cache release (``torch.cuda.empty_cache()`` and kin, DeepSpeed's
  ``get_accelerator().empty_cache()``);
- a device-to-host read (``t.item()``, ``t.cpu()``, ``t.tolist()``, ``t.numpy()``,
  ``t.to("cpu")``: ``host_waits.is_host_read``), unless it reads a value already on the
  host (``placement``), the value is already read in the same expression
  (``x.cpu().numpy()`` is one wait, at ``.cpu()``), or an earlier wait of the same pass
  left nothing new queued (``device_queue.queue_drained``): it adds no wait of its own;
nor does a read under a rank guard when every way on next waits where every rank does,
with no work every rank queues between (``device_queue.waited_next``; what the guarded
ranks queue after the read is their own work): the ranks left out wait for the same
queue there.

A guard that also holds the training loop's backward parts the ranks' steps, not only
the read (another rule's question): no host sync of this one. A loop's own test is no
rank guard of its body (each rank runs the body on every turn
it takes). What runs every step is ``step_paths``' answer (not on an error, a periodic test, the
first step, an arm no run takes, a single-process run).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from ddplint.analysis.control_flow import Graph, Node, Scope, holds_node
from ddplint.analysis.device_queue import ACCELERATOR_GETTERS, DeviceQueue
from ddplint.analysis.divergence import AGREEING_BUFFERS, distributed_function
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.host_waits import READ_METHODS, is_host_read, walk_own
from ddplint.analysis.names import call_argument
from ddplint.analysis.rank_guards import RankGuard, guard_of, own_reads
from ddplint.analysis.step_paths import StepPath, StepPaths

EMPTY_CACHE_FUNCTIONS = frozenset(
    {
        "torch.cuda.empty_cache",
        "torch.cuda.memory.empty_cache",
        "torch.xpu.empty_cache",
        "torch.mps.empty_cache",
        "torch.npu.empty_cache",
    }
)


class SyncKind(Enum):
    READ = "read"
    EMPTY_CACHE = "empty_cache"


@dataclass(frozen=True)
class HostSync:
    """One host synchronisation on the step path: the call, its kind, why it runs every
    step, and the rank guard that holds it (None: every rank runs it)."""

    call: ast.Call
    kind: SyncKind
    path: StepPath
    guard: RankGuard | None


def releases_cache(call: ast.Call, resolve: Callable[[ast.AST], str | None]) -> bool:
    """``torch.cuda.empty_cache()`` and kin, ``get_accelerator().empty_cache()``."""
    if resolve(call.func) in EMPTY_CACHE_FUNCTIONS:
        return True
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "empty_cache"
        and isinstance(func.value, ast.Call)
        and resolve(func.value.func) in ACCELERATOR_GETTERS
    )


def step_syncs(
    analysis: ModuleAnalysis, paths: StepPaths, queue: DeviceQueue | None = None
) -> list[HostSync]:
    """The module's host synchronisations that run every training step."""
    queue = queue if queue is not None else DeviceQueue(paths.waits, analysis)
    candidates: list[tuple[ast.Call, SyncKind, StepPath]] = []
    for call in analysis.nodes.of_type(ast.Call):
        kind = _kind(analysis, queue, call)
        if kind is None:
            continue
        path = paths.reason(call)
        if path is None:
            continue
        if kind is SyncKind.READ and queue.queue_drained(call):
            continue
        candidates.append((call, kind, path))
    wanted: list[ast.AST] = [call for call, _, _ in candidates]
    where: dict[int, tuple[Scope, Node]] = {
        id(expression): (scope, node) for expression, scope, node in own_reads(analysis, wanted)
    }
    found = []
    for call, kind, path in candidates:
        located = where.get(id(call))
        guard = None
        if located is not None:
            scope, node = located
            guard = guard_of(analysis, scope, node, part=call, balanced=_loop_test)
        if (
            guard is not None
            and path.loop is not None
            and _guards_backward(analysis, path.loop, guard)
        ):
            continue  # the ranks it leaves out skip the whole step, backward included
        if (
            guard is not None
            and kind is SyncKind.READ
            and _every_rank_waits_next(analysis, queue, call)
        ):
            continue  # the others take the same wait right after: this one adds none
        found.append(HostSync(call, kind, path, guard))
    return sorted(found, key=lambda s: (s.call.lineno, s.call.col_offset))


def _guards_backward(analysis: ModuleAnalysis, loop: ast.AST, guard: RankGuard) -> bool:
    """Whether ``guard`` also decides the training loop's backward (``if skip[task]:
    continue`` before both): it parts the ranks' steps, not only the read."""
    backward: list[ast.AST] = [node for node in ast.walk(loop) if analysis.runs_backward(node)]
    for _, scope, node in own_reads(analysis, backward):
        other = guard_of(analysis, scope, node, balanced=_loop_test)
        if other is not None and other.cause is guard.cause:
            return True
    return False


def _every_rank_waits_next(analysis: ModuleAnalysis, queue: DeviceQueue, call: ast.Call) -> bool:
    """Whether every way on from a guarded read next waits for the device where every rank
    does (``loss.item()`` for a running total after rank 0 prints it), with no work
    queued between: the ranks left out wait there for the same queue, so the guarded
    rank falls behind by nothing."""

    def unguarded(graph: Graph, node: Node) -> bool:
        return guard_of(analysis, graph.scope, node, balanced=_loop_test) is None

    return queue.waited_next(call, unguarded)


def _loop_test(test: Node) -> bool:
    """A loop's own test (``while epoch < args.epochs:``, a ``for`` header) or a test
    that leaves the loop (``if step >= max_steps: break``) decides whether the loop takes
    another turn, not which ranks run a turn's body: each rank runs the body on every
    turn it takes (how many turns is another question)."""
    statement = test.statement
    if isinstance(statement, (ast.For, ast.AsyncFor, ast.While)):
        return True
    return isinstance(statement, ast.If) and any(
        arm and isinstance(arm[-1], ast.Break) for arm in (statement.body, statement.orelse)
    )


def _kind(analysis: ModuleAnalysis, queue: DeviceQueue, call: ast.Call) -> SyncKind | None:
    if releases_cache(call, analysis.names.resolve):
        return SyncKind.EMPTY_CACHE
    if queue.converts_kernel_result(call, analysis.nodes.scope_of_call(call)):
        return SyncKind.READ  # ``float(loss.detach())``: a Python number of a tensor
    if not is_host_read(call):
        return None
    func = call.func
    assert isinstance(func, ast.Attribute)
    receiver = func.value
    if isinstance(receiver, ast.Call) and is_host_read(receiver):
        return None  # ``x.cpu().numpy()``: one wait, at ``.cpu()``
    if (
        isinstance(receiver, ast.Call)
        and isinstance(receiver.func, ast.Attribute)
        and receiver.func.attr in READ_METHODS
    ):
        return None
    scope = analysis.nodes.scope_of_call(call)
    if queue.placement.read_on_host(call, scope) or _agreed_decision(analysis, call, scope):
        return None
    return SyncKind.READ


def _agreed_decision(analysis: ModuleAnalysis, call: ast.Call, scope: ast.AST) -> bool:
    """``dist.all_reduce(flag, op=MAX)`` then ``if flag.item(): continue``: every rank
    reads the flag a collective of the scope made agree, to take the same branch (the
    collective skip DDP204 asks for); the read is the decision, not overhead."""
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
    if not isinstance(receiver, ast.Name):
        return False
    if not any(
        isinstance(node, (ast.If, ast.While)) and holds_node(node.test, call)
        for node in walk_own(scope)
    ):
        return False
    for node in walk_own(scope):
        if not isinstance(node, ast.Call):
            continue
        function = distributed_function(analysis.names.resolve(node.func))
        if function in AGREEING_BUFFERS:
            buffer = call_argument(node, *AGREEING_BUFFERS[function])
            if isinstance(buffer, ast.Name) and buffer.id == receiver.id:
                return True
    return False


def cost_of(kind: SyncKind) -> str:
    """What one such call costs per step, for messages."""
    if kind is SyncKind.EMPTY_CACHE:
        return (
            "it hands the caching allocator's free blocks back to the driver, so the next "
            "step allocates them again through cudaMalloc, which synchronises the device"
        )
    return (
        "a device-to-host copy stalls the CPU until every kernel queued on the GPU has "
        "finished, so the next step's work is queued late"
    )
