"""Whether a function's own code may wait for the device queue: a cheap syntactic screen.

``may_wait(nodes, resolve)`` reads a function's own nodes once (no graph, no dataflow)
and over-approximates: any spelling that can make the host wait for the device on some
way through the function says yes (the fact only silences a stall report: uncertainty
must say "may"):

- a host read (``x.item()``, ``.cpu()``, ``.tolist()``, ``.numpy()``, ``.to("cpu")``), a
  Python number made of a tensor method's result (``int(mask.sum())``);
- a synchronisation (``torch.cuda.synchronize()``, a stream's ``synchronize()``, a
  ``dist.barrier()``);
- a kernel whose result's size the device computes (``torch.nonzero(m)``,
  ``m.argwhere()``, ``torch.unique(x)``, ``torch.where(cond)``), and ``x[mask]`` with a
  boolean mask (a comparison, ``~m``, ``m & n``, ``torch.isnan(x)``, ``m.bool()``, or a
  name the function binds to one): whether the mask is on the host is not asked;
- a branch on a tensor: ``if mask.sum() > 0:``, ``if m.any():``,
  ``if torch.isnan(x).any():``;
- an upload built on the host (``torch.tensor([0], device=d)``, ``torch.eye(n).cuda()``,
  ``torch.from_numpy(a).to(d)``, also through a name bound to the host tensor), a
  blocking copy unless ``non_blocking=True``;
- a synchronous Horovod collective (``hvd.allgather(x)``, ``hvd.allreduce(x)``: the host
  blocks until the result exists).

Calls of other functions are the caller's business (the project index carries the fact
along the call graph, ``DeviceQueue`` along the module's own functions).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable

from ddplint.analysis.host_waits import UPLOADING_FACTORIES, is_host_read

#: Functions that block the host until the device has finished its queue (a barrier on
#: NCCL is an all-reduce the host waits for).
_SYNCHRONISING = frozenset(
    {
        "torch.cuda.synchronize",
        "torch.accelerator.synchronize",
        "torch.xpu.synchronize",
        "torch.distributed.barrier",
    }
)
#: ``torch`` functions and tensor methods whose result's size only the device knows.
_SIZED_ON_DEVICE = frozenset({"nonzero", "argwhere", "masked_select", "unique"})
#: Tensor methods that compute a value a branch or a conversion then reads on the host.
_REDUCTIONS = frozenset(
    {"sum", "max", "min", "mean", "any", "all", "count_nonzero", "norm", "prod"}
)
#: ``torch`` functions that make a boolean mask (besides comparisons and ``~``).
_MASK_FUNCTIONS = frozenset(
    {
        *("torch.isnan", "torch.isinf", "torch.isfinite", "torch.logical_and"),
        *("torch.logical_or", "torch.logical_not", "torch.eq", "torch.ne", "torch.gt"),
        *("torch.lt", "torch.ge", "torch.le"),
    }
)
#: Tensor methods that make a boolean mask.
_MASK_METHODS = frozenset(
    {"bool", "isnan", "isinf", "isfinite", "eq", "ne", "gt", "lt", "ge", "le", "logical_not"}
)
#: ``torch`` functions whose truth a branch reads on the host.
_TESTED = frozenset({"torch.isfinite", "torch.isnan", "torch.isinf", "torch.any", "torch.all"})
#: Methods that copy a tensor to a device.
_MOVES = frozenset({"to", "cuda"})
#: ``torch`` functions that build a tensor on the host unless given a device.
_HOST_FACTORIES = frozenset(
    {
        *("torch.tensor", "torch.as_tensor", "torch.from_numpy", "torch.eye", "torch.arange"),
        *("torch.zeros", "torch.ones", "torch.full", "torch.empty", "torch.randn"),
        *("torch.rand", "torch.randint", "torch.randperm", "torch.linspace", "torch.LongTensor"),
        *("torch.FloatTensor", "torch.Tensor", "torch.BoolTensor"),
    }
)
#: Horovod's synchronous collectives: the host blocks until the result exists.
_HOROVOD_BLOCKING = frozenset(
    f"horovod.torch.{name}"
    for name in ("allgather", "allreduce", "broadcast", "alltoall", "grouped_allreduce")
)

Resolve = Callable[[ast.expr], "str | None"]


def blocking_library_call(call: ast.Call, resolve: Resolve) -> bool:
    """A library call that blocks the host until the device has done the work queued
    before it: a synchronisation, a barrier, a synchronous Horovod collective."""
    resolved = resolve(call.func) or ""
    return resolved in _SYNCHRONISING or resolved in _HOROVOD_BLOCKING


def may_wait(nodes: Iterable[ast.AST], resolve: Resolve) -> bool:
    """Whether some node of a function's own code may make the host wait for the
    device (``nodes``: its own nodes, nested scopes left out)."""
    listed = list(nodes)
    masks = _mask_names(listed, resolve)
    host_made = _host_made_names(listed, resolve)
    reduced = _reduced_names(listed)
    for node in listed:
        if isinstance(node, ast.Call) and _call_waits(node, resolve, host_made):
            return True
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and (_is_mask(node.slice, resolve) or _names_in(node.slice, masks))
        ):
            return True
        if isinstance(node, (ast.If, ast.While, ast.Assert, ast.IfExp)) and _tests_tensor(
            node.test, resolve, reduced
        ):
            return True
    return False


def _call_waits(call: ast.Call, resolve: Resolve, host_made: set[str]) -> bool:
    if is_host_read(call) or blocking_library_call(call, resolve):
        return True
    func = call.func
    resolved = resolve(func) or ""
    if isinstance(func, ast.Attribute):
        if func.attr == "synchronize" or func.attr in _SIZED_ON_DEVICE:
            return True
        if func.attr in _MOVES and not _non_blocking(call):
            receiver = func.value
            return _host_made(receiver, resolve) or (
                isinstance(receiver, ast.Name) and receiver.id in host_made
            )
    if resolved.startswith("torch.") and resolved.removeprefix("torch.") in _SIZED_ON_DEVICE:
        return True
    if resolved == "torch.where" and len(call.args) == 1 and not call.keywords:
        return True
    if resolved in UPLOADING_FACTORIES:
        device = next((k.value for k in call.keywords if k.arg == "device"), None)
        if device is not None and not _is_cpu(device):
            return True
    return (
        isinstance(func, ast.Name)
        and func.id in ("int", "float", "bool")
        and len(call.args) == 1
        and _reduction(call.args[0])
    )


def _reduction(expression: ast.expr) -> bool:
    """``mask.sum()``, ``x.max()``: a tensor method's result."""
    return (
        isinstance(expression, ast.Call)
        and isinstance(expression.func, ast.Attribute)
        and expression.func.attr in _REDUCTIONS
        and not isinstance(expression.func.value, ast.Constant)
    )


def _tests_tensor(test: ast.expr, resolve: Resolve, reduced: set[str]) -> bool:
    """A branch that reads a tensor: a comparison of a reduction (``mask.sum() > 0``,
    or of a name bound to one, ``total = a.sum() + b.sum(); if total == 0:``),
    ``m.any()``, ``torch.isnan(x).any()``, under ``not`` / ``and`` / ``or``."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _tests_tensor(test.operand, resolve, reduced)
    if isinstance(test, ast.BoolOp):
        return any(_tests_tensor(value, resolve, reduced) for value in test.values)
    if isinstance(test, ast.Compare):
        return any(
            _reduction(side) or _names_in(side, reduced) for side in (test.left, *test.comparators)
        )
    if isinstance(test, ast.Call):
        func = test.func
        if resolve(func) in _TESTED:
            return True
        return isinstance(func, ast.Attribute) and func.attr in ("any", "all") and not test.args
    return False


def _is_mask(expression: ast.expr, resolve: Resolve) -> bool:
    if isinstance(expression, ast.Compare):
        return True
    if isinstance(expression, ast.UnaryOp) and isinstance(expression.op, ast.Invert):
        return True
    if isinstance(expression, ast.BinOp) and isinstance(expression.op, (ast.BitAnd, ast.BitOr)):
        return _is_mask(expression.left, resolve) or _is_mask(expression.right, resolve)
    if isinstance(expression, ast.Call):
        if resolve(expression.func) in _MASK_FUNCTIONS:
            return True
        func = expression.func
        return isinstance(func, ast.Attribute) and func.attr in _MASK_METHODS
    return False


def _mask_names(nodes: list[ast.AST], resolve: Resolve) -> set[str]:
    """The names the function binds to a boolean mask (``keep = scores > t``)."""
    return {
        target.id
        for node in nodes
        if isinstance(node, ast.Assign) and _is_mask(node.value, resolve)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def _reduced_names(nodes: list[ast.AST]) -> set[str]:
    """The names the function binds to a value made of a reduction (``total =
    a.sum() + b.sum()``)."""
    return {
        target.id
        for node in nodes
        if isinstance(node, ast.Assign)
        and any(isinstance(e, ast.expr) and _reduction(e) for e in ast.walk(node.value))
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def _host_made_names(nodes: list[ast.AST], resolve: Resolve) -> set[str]:
    """The names the function binds to a tensor built on the host."""
    return {
        target.id
        for node in nodes
        if isinstance(node, ast.Assign) and _host_made(node.value, resolve)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def _host_made(expression: ast.expr, resolve: Resolve) -> bool:
    """A ``torch`` factory call given no device (``torch.eye(n)``, ``torch.tensor(v)``)."""
    return (
        isinstance(expression, ast.Call)
        and resolve(expression.func) in _HOST_FACTORIES
        and not any(k.arg == "device" for k in expression.keywords)
    )


def _names_in(expression: ast.expr, names: set[str]) -> bool:
    return isinstance(expression, ast.Name) and expression.id in names


def _non_blocking(call: ast.Call) -> bool:
    return any(
        k.arg == "non_blocking" and not (isinstance(k.value, ast.Constant) and not k.value.value)
        for k in call.keywords
    )


def _is_cpu(device: ast.expr) -> bool:
    return isinstance(device, ast.Constant) and device.value in ("cpu", None)
