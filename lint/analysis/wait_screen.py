"""Whether a function may end with the host waiting for the device queue: a cheap
syntactic screen.

``ending_wait(kinds, resolve)`` reads a function's own nodes once (no graph, no
dataflow) and over-approximates: any spelling that can make the host wait for the device
on some way through the function, with no substantial work after it (by line: a call of
a field of the instance, ``self.llm(x)``, or of a function that is no builtin, not
``torch``'s and not of a library that computes on the host, ``HOST_MODULES``), says yes
(the fact only silences a stall report: uncertainty must say
"may"); a wait early in a forward, followed by the model it feeds, says no, and the
calls of the function's last work are handed back (``tail``: the project index and
``call_waits`` follow them). The spellings:

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

Not a wait each call: one on the rare way of a periodic test (``if step % 100 == 0:
print(loss.item())``).

Calls of other functions are the caller's business (the project index carries the fact
along the call graph, ``DeviceQueue`` along the module's own functions).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping, Sequence

from ddplint.analysis.api import HOROVOD_COLLECTIVES
from ddplint.analysis.host_waits import (
    HOST_MODULES,
    MASK_FUNCTIONS,
    MASK_METHODS,
    SIZED_ON_DEVICE,
    SYNC_FUNCTIONS,
    TESTED_ON_HOST,
    UPLOADING_FACTORIES,
    is_host_read,
)
from ddplint.analysis.names import BUILTIN_NAMES

#: Functions that block the host until the device has finished its queue (a barrier on
#: NCCL is an all-reduce the host waits for).
_SYNCHRONISING = SYNC_FUNCTIONS | {"torch.distributed.barrier"}
#: Tensor methods that compute a value a branch or a conversion then reads on the host.
_REDUCTIONS = frozenset(
    {"sum", "max", "min", "mean", "any", "all", "count_nonzero", "norm", "prod"}
)
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
_HOROVOD_BLOCKING = HOROVOD_COLLECTIVES | {"horovod.torch.synchronize"}

Resolve = Callable[[ast.expr], "str | None"]
#: Node kinds the screen reads, by type (a function's own nodes grouped once).
Kinds = Mapping[type[ast.AST], Sequence[ast.AST]]
#: The last part of the names of the library functions the screen knows: only a call
#: spelled so is resolved.
_LIBRARY_TAILS = frozenset(
    {
        *(name.rpartition(".")[2] for name in _SYNCHRONISING | _HOROVOD_BLOCKING),
        *SIZED_ON_DEVICE,
        *(name.rpartition(".")[2] for name in UPLOADING_FACTORIES),
        "where",
    }
)
_HOROVOD_TAILS = frozenset(name.rpartition(".")[2] for name in _HOROVOD_BLOCKING)
_TESTS = (ast.If, ast.While, ast.Assert, ast.IfExp)
_IDENTITY = (ast.Is, ast.IsNot, ast.In, ast.NotIn)


def synchronous_collective(call: ast.Call, resolve: Resolve) -> bool:
    """A Horovod collective that blocks the host until its result exists
    (``hvd.allgather(x)``, ``hvd.allreduce(x)``): the device work queued before it is
    done when it returns."""
    func = call.func
    tail = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return tail in _HOROVOD_TAILS and resolve(func) in _HOROVOD_BLOCKING


def group_nodes(nodes: Iterable[ast.AST]) -> dict[type[ast.AST], list[ast.AST]]:
    """A function's own nodes by type, as ``may_wait`` reads them."""
    kinds: dict[type[ast.AST], list[ast.AST]] = {}
    for node in nodes:
        kinds.setdefault(type(node), []).append(node)
    return kinds


def may_wait(kinds: Kinds, resolve: Resolve) -> bool:
    """Whether the function's own code may make the host wait for the device with no
    substantial work queued after the wait (``ending_wait``'s first part)."""
    return ending_wait(kinds, resolve)[0]


def ending_wait(kinds: Kinds, resolve: Resolve) -> tuple[bool, list[ast.Call]]:
    """Whether some node of a function's own code may make the host wait for the
    device with no call that may queue substantial work after it (``kinds``: its own
    nodes by type, nested scopes left out); and, where not, the calls of its last line
    of such work (``tail``: if one of them ends with a wait, so does the function).

    A wait followed by more of the work (a wait early in a forward, then the language
    model it feeds) leaves that work queued: the read after the call still waits for
    it. Work after a wait, by line: a call of a field of the instance (``self.llm(x)``,
    a submodule) or of a function that is no builtin and not ``torch``'s."""
    screen = _Screen(kinds, resolve)
    rare = _on_rare_ways(kinds)
    calls: list[ast.Call] = [c for c in kinds.get(ast.Call, ()) if isinstance(c, ast.Call)]
    work = [c for c in calls if _works(c, resolve)]
    last_work = max((c.lineno for c in work), default=0)
    late = [  # only a wait on or after the last work's line can end the function
        node
        for kind in (ast.Call, ast.Subscript, *_TESTS)
        for node in kinds.get(kind, ())
        if getattr(node, "lineno", 0) >= last_work and id(node) not in rare
    ]
    if any(
        screen.call_waits(node)
        if isinstance(node, ast.Call)
        else screen.masked(node)
        if isinstance(node, ast.Subscript)
        else screen.tests_tensor(node.test)  # type: ignore[attr-defined]
        for node in late
    ):
        return True, []
    return False, [c for c in work if c.lineno == last_work]


def _works(call: ast.Call, resolve: Resolve) -> bool:
    """A call that may queue substantial device work: of a field of the instance (a
    submodule, a method), or of a function that is no builtin, not ``torch``'s and not
    of a library that computes on the host (``linear_sum_assignment(cost)``)."""
    func = call.func
    while isinstance(func, ast.Subscript):
        func = func.value
    if isinstance(func, ast.Attribute):
        root = func
        while isinstance(root, ast.Attribute):
            root = root.value  # type: ignore[assignment]
        return isinstance(root, ast.Name) and root.id == "self"
    if isinstance(func, ast.Name):
        if func.id in BUILTIN_NAMES:
            return False
        return not (resolve(func) or "").startswith(("torch.", *HOST_MODULES))
    return False


def _on_rare_ways(kinds: Kinds) -> set[int]:
    """The nodes on the rare way of a periodic test (``if step % k == 0:``): a wait
    there is not one each call."""
    found: set[int] = set()
    for branch in kinds.get(ast.If, ()):
        if isinstance(branch, ast.If) and periodic_test(branch.test):
            found.update(id(node) for statement in branch.body for node in ast.walk(statement))
    return found


def periodic_test(test: ast.expr) -> bool:
    """``i % k == 0`` (either side, ``and``-ed with anything): a test that holds only
    now and then."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(periodic_test(value) for value in test.values)
    if isinstance(test, ast.BoolOp):  # ``step % k == 0 or step == 5``: still now and then
        return any(periodic_test(value) for value in test.values) and all(
            periodic_test(value) or _once(value) for value in test.values
        )
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and any(
            isinstance(side, ast.BinOp) and isinstance(side.op, ast.Mod)
            for side in (test.left, *test.comparators)
        )
    )


class _Screen:
    """One function's screen: the names it binds read only when a spelling asks."""

    def __init__(self, kinds: Kinds, resolve: Resolve) -> None:
        self.kinds = kinds
        self.resolve = resolve
        self._bound: dict[str, set[str]] = {}

    def call_waits(self, call: ast.Call) -> bool:
        func = call.func
        if isinstance(func, ast.Attribute):
            attribute = func.attr
            if is_host_read(call) or attribute == "synchronize" or attribute in SIZED_ON_DEVICE:
                return True
            if attribute in _MOVES and not _non_blocking(call):
                receiver = func.value
                return self._host_made(receiver) or (
                    isinstance(receiver, ast.Name) and receiver.id in self._names("host")
                )
            tail = attribute
        elif isinstance(func, ast.Name):
            if func.id in ("int", "float", "bool"):
                return len(call.args) == 1 and _reduction(call.args[0])
            tail = func.id
        else:
            return False
        if tail not in _LIBRARY_TAILS:
            return False
        resolved = self.resolve(func) or ""
        if resolved in _SYNCHRONISING or resolved in _HOROVOD_BLOCKING:
            return True
        if resolved.startswith("torch.") and resolved.removeprefix("torch.") in SIZED_ON_DEVICE:
            return True
        if resolved == "torch.where":
            return len(call.args) == 1 and not call.keywords
        if resolved in UPLOADING_FACTORIES:
            device = next((k.value for k in call.keywords if k.arg == "device"), None)
            return device is not None and not _is_cpu(device)
        return False

    def masked(self, subscript: ast.Subscript) -> bool:
        """``x[mask]`` read with a boolean mask, or a name bound to one."""
        if not isinstance(subscript.ctx, ast.Load):
            return False
        index = subscript.slice
        if isinstance(index, ast.Name):
            return index.id in self._names("mask")
        return _is_mask(index, self.resolve)

    def tests_tensor(self, test: ast.expr) -> bool:
        """A branch that reads a tensor: a comparison of a reduction (``mask.sum() >
        0``, or of a name bound to one, ``total = a.sum() + b.sum(); if total == 0:``),
        ``m.any()``, ``torch.isnan(x).any()``, under ``not`` / ``and`` / ``or``."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.tests_tensor(test.operand)
        if isinstance(test, ast.BoolOp):
            return any(self.tests_tensor(value) for value in test.values)
        if isinstance(test, ast.Compare):
            if all(isinstance(op, _IDENTITY) for op in test.ops):
                return False  # ``x is None``, ``key in d``: no tensor read
            return any(
                _reduction(side)
                or (isinstance(side, ast.Name) and side.id in self._names("reduced"))
                for side in (test.left, *test.comparators)
            )
        if isinstance(test, ast.Call):
            func = test.func
            if isinstance(func, ast.Attribute) and func.attr in ("any", "all") and not test.args:
                return True
            return self.resolve(func) in TESTED_ON_HOST
        return False

    def _names(self, kind: str) -> set[str]:
        """The names the function binds to a boolean mask (``"mask"``), to a tensor
        built on the host (``"host"``), or to a value made of a reduction
        (``"reduced"``)."""
        found = self._bound.get(kind)
        if found is None:
            tests = {"mask": self._is_mask, "host": self._host_made, "reduced": _made_of_reduction}
            test = tests[kind]
            found = self._bound[kind] = {
                target.id
                for node in self.kinds.get(ast.Assign, ())
                if isinstance(node, ast.Assign) and test(node.value)
                for target in node.targets
                if isinstance(target, ast.Name)
            }
        return found

    def _is_mask(self, expression: ast.expr) -> bool:
        return _is_mask(expression, self.resolve)

    def _host_made(self, expression: ast.expr) -> bool:
        """A ``torch`` factory call given no device (``torch.eye(n)``, ``torch.tensor(v)``)."""
        return (
            isinstance(expression, ast.Call)
            and self.resolve(expression.func) in _HOST_FACTORIES
            and not any(k.arg == "device" for k in expression.keywords)
        )


def _once(test: ast.expr) -> bool:
    """``step == 5``: a test of equality with a constant, true once."""
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and isinstance(test.comparators[0], ast.Constant)
    )


def _made_of_reduction(value: ast.expr) -> bool:
    """A reduction, or arithmetic on one (``a.sum() + b.sum()``)."""
    if isinstance(value, ast.BinOp):
        return _made_of_reduction(value.left) or _made_of_reduction(value.right)
    if isinstance(value, ast.UnaryOp):
        return _made_of_reduction(value.operand)
    return _reduction(value)


def _reduction(expression: ast.expr) -> bool:
    """``mask.sum()``, ``x.max()``: a tensor method's result."""
    return (
        isinstance(expression, ast.Call)
        and isinstance(expression.func, ast.Attribute)
        and expression.func.attr in _REDUCTIONS
        and not isinstance(expression.func.value, ast.Constant)
    )


def _is_mask(expression: ast.expr, resolve: Resolve) -> bool:
    if isinstance(expression, ast.Compare):
        return True
    if isinstance(expression, ast.UnaryOp) and isinstance(expression.op, ast.Invert):
        return True
    if isinstance(expression, ast.BinOp) and isinstance(expression.op, (ast.BitAnd, ast.BitOr)):
        return _is_mask(expression.left, resolve) or _is_mask(expression.right, resolve)
    if isinstance(expression, ast.Call):
        if resolve(expression.func) in MASK_FUNCTIONS:
            return True
        func = expression.func
        return isinstance(func, ast.Attribute) and func.attr in MASK_METHODS
    return False


def _non_blocking(call: ast.Call) -> bool:
    return any(
        k.arg == "non_blocking" and not (isinstance(k.value, ast.Constant) and not k.value.value)
        for k in call.keywords
    )


def _is_cpu(device: ast.expr) -> bool:
    return isinstance(device, ast.Constant) and device.value in ("cpu", None)
