"""The device queue: whether a host wait at a call still waits for the step's work.

``DeviceQueue.queue_drained(call)``: on every path that reaches the call, the last thing
done to the device queue was a host wait, with no substantial device work queued since,
so the call waits for nothing new. Where some ways to the call ran the step's backward
since the function began or its training loop took its turn, those ways alone decide
(a way that skips the backward, an evaluation pass of the same loop, is another pass,
not this step's); elsewhere every way does. A forward must-analysis over the control-flow graph
of the call's function (or of module code: a training script's loop), loops and
exception edges included, except the way out of a ``with`` block that an exception takes
when its context swallows it (an error path, as an ``except`` handler is; not for
``contextlib.suppress``, which swallows on purpose); across the module's own functions
through their summaries (one that returns with the queue drained on every path is a
wait; one that queues no work on any path is no work).

What waits, judged by what the call does:

- a host read of a value on a device (``loss.item()`` a line above, ``if x.item() >
  1:`` ... ``elif x.item() < 0:``, a read on each way of a branch; a value already on
  the host, ``analysis.placement``, waits for nothing), ``float(x.sum())`` (a Python
  number made of a tensor method's result), an upload of host data to a device
  (``torch.tensor(values, device=...)``, and ``image.to(device)`` of what a loader
  collated on the host, without ``non_blocking=True``: a copy from pageable memory
  synchronises the stream first), a test whose value is a tensor (``if not
  torch.isfinite(loss):``);
- a synchronisation (``torch.cuda.synchronize()``, a stream's ``synchronize()``): DDP101
  reports it, and the reads after it wait for nothing new;
- a gradient scaler's ``step(optimizer)``, the scaler known by what made it (a
  ``GradScaler`` allocation followed through the module): it reads the inf/NaN check on
  the host before the optimizer runs; the optimizer kernels it queues after that read
  are its own tail, as a few kernels are (below);
- a kernel whose result's size the device computes (``mask.nonzero()``,
  ``torch.unique(x)``, ``x.masked_select(m)``, ``torch.where(cond)``, ``x[mask]`` with a
  boolean mask made on the device), and a mask's ``.any()`` / ``.all()`` tested in a
  branch: the host waits to size or test the result;
- a conditional drain (``is_drain``) where its condition can hold: a DeepSpeed
  engine's ``step()`` (its throughput timer synchronises at the end of every step; the
  engine the first item of ``deepspeed.initialize(...)`` given no
  ``training_data`` in this module, or a field or factory the project model says holds
  an engine; only where the module runs an engine's own forward, which starts the
  timer; not where a config written in the module turns the timer off), a blocking
  ``barrier()`` on a group whose backend can be NCCL (known NCCL, or not known here);
- a backward run in anomaly mode with its NaN check (``with
  torch.autograd.set_detect_anomaly(True):``, ``detect_anomaly()``, or the mode switched
  on by a statement of module code): the engine reads each node's output on the host;
  the backward that ends a ``with amp.scale_loss(loss, opt):`` block under apex's
  dynamic loss scaling (the module's ``amp.initialize``, O1 or O2, no fixed
  ``loss_scale``): leaving the block reads the overflow flag on the host;
- a call of a function of the module that returns with the queue drained.

- a call that may wait (``call_waits``: a function of the module or of another module,
  an instance whose forward may, by ``wait_screen``'s screen and the project model), a
  DeepSpeed engine's ``step()`` under fp16 (its overflow check), the ``step()`` of an
  optimizer an ``Accelerator`` prepared under fp16 mixed precision (its scaler's check),
  fp16 by what the module shows or the project's configs (``ShippedPrecision``).

A read on only some ways (under a rank test, one arm of a branch) drains nothing for a
read after the join: the must-analysis asks every way; but past a periodic test (``if
step % k == 0:``, or a helper of the module returning one) the common way alone decides
where it has one: the rare way's checkpoint is not the step's work; and past a branch
on a setting of the run inside a loop (``if cfg.use_mlm:``: names and fields not bound in
the loop, the same on every rank), a wait on either of its ways drains for what follows
(which way the configuration takes is not known here: uncertainty silences). A loop
that surely takes a turn (``control_flow.takes_a_turn``: ``for n, x in (("a", a), ("b",
b)):``, ``range(3)``) is left only after its body: its reads drain for what follows.

``waited_next(call, ...)``: the stall a call takes is taken right after anyway (every
way on next waits, or its own statement waits after it: ``hvd.allgather(torch.tensor(
[n], device=d))``); DDP240 asks it with every node but another copy's counting.

What refills the queue, without types: a call that may run a forward, a backward, an
optimizer or a collective: any call that is not one of the following. Not work: a read,
a shape read, a kernel or two on a tensor already computed (arithmetic, ``x.mean()``,
``x.clamp_(0, 1)``, ``torch.log(x)``, a ``torch.nn`` layer built from host values and
called, ``softmax = nn.Softmax(dim=-1)``; gradient clipping and a known optimizer's
``step()``, elementwise passes over the parameters: the read after them waits for those
few kernels alone; not in a loop that walks a tensor in pieces, ``for i in range(chunks):`` over
``t[:, i * n:(i + 1) * n]`` or ``t[:, i]``, whose kernels each turn are a pass over its
piece (a single index by the counter, ``losses[i]``, may pick a list's item: no piece); a view,
``.squeeze()``, ``.view(-1)``, is no work even there), a collective of values already
computed (``dist.all_reduce(loss)``, ``accelerator.gather(loss.repeat(n))``, a library
helper that only communicates, ``comm.reduce_dict(loss_dict)``: its own
communication; not one of what a loop
around it walks, ``for p in params: dist.all_reduce(p.grad)``), a
builtin (``len``, ``isinstance``, ``hasattr``), a method of a literal or of a Python
value (``"{}".format(m)``, ``found.append(t)`` with ``found = []``), a call given only
host values (``meter.update(loss.item(), args.batch_size)``, a command-line option being
a host value, a name whose bindings that reach the call hold host values: ``loss =
loss.item()`` ... ``log(loss)``), a scheduler's methods, a scaler's or optimizer's other methods
(``scaler.update()``, ``opt.zero_grad()``), a function of the module that queues no work
on any path, a ``with`` statement's context manager. An assignment evaluates its value
before its targets (``scalars["a/{}".format(m)] = x.item()``).
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable, Iterator
from functools import cached_property
from typing import Protocol, TypeVar

from ddplint.analysis.api import (
    RANK_ONLY_DECORATORS,
    is_communication_helper,
    torch_distributed_function,
)
from ddplint.analysis.batches import training_loops
from ddplint.analysis.call_waits import CallWaits
from ddplint.analysis.control_flow import (
    EdgeKind,
    Graph,
    Node,
    NodeKind,
    paired_names,
    single_bindings,
    takes_a_turn,
)
from ddplint.analysis.effects import ACCELERATE_COLLECTIVES
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.host_waits import (
    MASK_FUNCTIONS,
    MASK_METHODS,
    SIZED_ON_DEVICE,
    SYNC_FUNCTIONS,
    TESTED_ON_HOST,
    UPLOADING_FACTORIES,
    HostWaits,
    end_of,
    is_host_read,
    own_parts,
    start_of,
    walk_own,
)
from ddplint.analysis.names import call_argument, dotted_name, keyword_argument
from ddplint.analysis.object_flow import ModuleCode, ObjectFlow
from ddplint.analysis.object_kinds import (
    ACCELERATOR,
    ENGINE,
    MODULE,
    OPTIMIZER,
    SCALER,
    SCHEDULER,
    is_deepspeed_initialize,
    library_kind,
)
from ddplint.analysis.placement import Placement, blocking_move
from ddplint.analysis.process_groups import ProcessGroups
from ddplint.analysis.project import NO_PROJECT, kept_parameters, project_key
from ddplint.analysis.reaching import bindings_reaching
from ddplint.analysis.wait_screen import periodic_test

#: Tensor metadata: read on the host without touching the device.
SHAPE_METHODS = frozenset({"size", "dim", "numel", "ndimension", "element_size"})
SHAPE_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "device", "is_cuda"})
#: Tensor methods that queue a kernel or two on a tensor already computed (a reduction, a
#: cast, an elementwise operation, a view; their in-place forms too): what a read after
#: them waits for is these few kernels, not the step's work.
KERNEL_METHODS = frozenset(
    {
        *("sum", "mean", "max", "min", "norm", "std", "var", "prod", "nansum", "cumsum"),
        *("argmax", "argmin", "count_nonzero", "all", "any", "abs", "neg", "exp", "log"),
        *("sqrt", "square", "pow", "sigmoid", "softmax", "log_softmax", "clamp"),
        *("add", "sub", "mul", "div", "eq", "ne", "gt", "lt", "ge", "le", "masked_fill"),
        *("isnan", "isinf", "isfinite", "float", "double", "half", "bfloat16", "long"),
        *("int", "bool", "type_as", "detach", "detach_", "clone", "copy_", "contiguous"),
        *("view", "reshape", "flatten", "squeeze", "unsqueeze", "permute", "transpose"),
        *("chunk", "split", "expand", "expand_as", "repeat", "zero_", "fill_", "t"),
        *("topk", "sort", "argsort", "index_select"),
    }
)
#: Tensor methods that only describe the same memory another way (a view: no kernel),
#: also in a loop that walks a tensor in pieces (``mask[i].nonzero()[-1].squeeze()``).
VIEW_METHODS = frozenset(
    {
        *("view", "view_as", "squeeze", "unsqueeze", "permute", "transpose", "t"),
        *("expand", "expand_as", "narrow", "select", "unbind", "chunk", "split", "detach"),
    }
)
#: Tensor methods whose result a branch test turns into a bool on the host.
_TRUTH_METHODS = frozenset({"any", "all"})
#: What makes a stream whose ``synchronize()`` waits for it.
STREAM_FACTORIES = frozenset(
    {
        "torch.cuda.current_stream",
        "torch.cuda.default_stream",
        "torch.cuda.Stream",
        "torch.cuda.streams.Stream",
        "torch.xpu.current_stream",
    }
)
#: DeepSpeed's device abstraction: ``get_accelerator().synchronize()`` (also
#: ``.empty_cache()``, which the host-sync rules read from here).
ACCELERATOR_GETTERS = frozenset(
    {
        "deepspeed.accelerator.get_accelerator",
        "deepspeed.accelerator.real_accelerator",
        "deepspeed.accelerator.real_accelerator.get_accelerator",
    }
)
#: ``torch`` namespaces whose calls do more than a kernel on their arguments:
#: collectives, device control, autograd, optimizers, modules (``torch.nn.X(...)``;
#: ``torch.nn.functional`` is kernels; clipping and layers: ``_CLIPPING``, ``_is_layer``).
_MORE_THAN_KERNELS = (
    "torch.distributed.",
    "torch.cuda.",
    "torch.autograd.",
    "torch.optim.",
    "torch.utils.",
    "torch.nn.",
)
#: Builtins whose result is a Python value (a tensor given to them is read or measured).
_HOST_BUILTINS = frozenset(
    {"len", "float", "int", "bool", "str", "round", "isinstance", "hasattr", "repr", "format"}
)
#: Builtins that turn a tensor into a Python value or print it (a host read).
_FORMATTING_BUILTINS = frozenset({"float", "int", "bool", "str", "repr", "format", "print"})
#: Builtins that turn a one-element tensor into a Python number (a host read).
_CONVERTING_BUILTINS = frozenset({"float", "int", "bool"})
#: What parses the command line into a namespace of host values.
_ARGUMENT_PARSERS = frozenset({"argparse.ArgumentParser"})
_PARSE_METHODS = frozenset({"parse_args", "parse_known_args"})
#: The kind of the namespace ``parse_args()`` returns (its options are host values).
_NAMESPACE = "namespace"
#: Methods that run the step's device work given no argument.
_STEP_WORK = frozenset({"step", "backward"})
#: Where ``training_data`` sits among ``deepspeed.initialize``'s positional parameters.
_TRAINING_DATA_POSITION = 4
#: Collectives that communicate the tensors they are handed (no step work of their own).
#: An ``Accelerator``'s collectives of the values it is handed.
_ACCELERATE_VALUE_COLLECTIVES = ACCELERATE_COLLECTIVES - {"wait_for_everyone", "backward"}
#: How many augmented assignments of one name ``_host_reaching`` follows back.
_AUGMENTED_DEPTH = 3
_VALUE_COLLECTIVES = frozenset(
    {"all_reduce", "reduce", "broadcast", "all_gather", "all_gather_into_tensor"}
)
#: The queue along one step's passes (``_stepped_map``), from the top of the order
#: down (a meet is the lowest): not reached yet, no backward yet in this step, drained,
#: work queued.
_UNSET, _FRESH, _DRAINED, _BUSY = "unset", "fresh", "drained", "busy"
_STEP_ORDER = (_UNSET, _FRESH, _DRAINED, _BUSY)
#: What turns anomaly mode on (its NaN check reads each backward node's output).
_ANOMALY_SWITCHES = frozenset(
    {"torch.autograd.set_detect_anomaly", "torch.autograd.anomaly_mode.set_detect_anomaly"}
)
_ANOMALY_CONTEXTS = frozenset(
    {"torch.autograd.detect_anomaly", "torch.autograd.anomaly_mode.detect_anomaly"}
)
#: apex's loss scaling: ``amp.initialize`` chooses it, ``amp.scale_loss`` applies it.
_APEX_INITIALIZE = frozenset({"apex.amp.initialize", "apex.amp.frontend.initialize"})
_APEX_SCALE_LOSS = frozenset({"apex.amp.scale_loss", "apex.amp.handle.scale_loss"})
#: apex's optimisation levels whose loss scale is static (1.0) unless told otherwise.
_APEX_STATIC_LEVELS = frozenset({"O0", "O3"})
#: Gradient clipping: kernels over the parameters' gradients.
_CLIPPING = frozenset(
    {
        *("torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_value_"),
        *("torch.nn.utils.clip_grad.clip_grad_norm_", "torch.nn.utils.clip_grad.clip_grad_value_"),
    }
)
#: Backends whose ``barrier`` never waits on a device stream.
_HOST_BACKENDS = frozenset({"gloo", "mpi"})
#: How deep a call is followed into the module's own functions for their summary.
_CALLEE_DEPTH = 3
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
Function = ast.FunctionDef | ast.AsyncFunctionDef
T = TypeVar("T")
#: What a node leaves in the device queue: True when it ends with a wait (nothing queued
#: after it), False when it may queue work after its last wait, None when it touches
#: neither; and whether it may queue work at all.
Effect = tuple[bool | None, bool]


def synchronizes(call: ast.Call, resolve: Callable[[ast.AST], str | None]) -> bool:
    """``torch.cuda.synchronize()``, ``torch.cuda.current_stream().synchronize()``,
    ``get_accelerator().synchronize()`` and kin: the host waits for the device."""
    if resolve(call.func) in SYNC_FUNCTIONS:
        return True
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "synchronize"):
        return False
    receiver = func.value
    if not isinstance(receiver, ast.Call):
        return False
    factory = resolve(receiver.func)
    if factory in STREAM_FACTORIES or factory in ACCELERATOR_GETTERS:
        return True
    inner = receiver.func  # get_accelerator().current_stream().synchronize()
    return (
        isinstance(inner, ast.Attribute)
        and inner.attr == "current_stream"
        and isinstance(inner.value, ast.Call)
        and resolve(inner.value.func) in ACCELERATOR_GETTERS
    )


def is_shape_read(expression: ast.expr) -> bool:
    """``x.shape``, ``x.size(0)``, ``len(x)``: metadata read without the device."""
    if isinstance(expression, ast.Attribute):
        return expression.attr in SHAPE_ATTRIBUTES
    if isinstance(expression, ast.Call):
        func = expression.func
        if isinstance(func, ast.Name) and func.id == "len":
            return True
        return isinstance(func, ast.Attribute) and func.attr in SHAPE_METHODS
    return False


def _kernel_method(name: str) -> bool:
    return name in KERNEL_METHODS or (name.endswith("_") and name[:-1] in KERNEL_METHODS)


class ShippedPrecision(Protocol):
    """The precision the configs a project ships show (``code.values.shipped_precision``)."""

    def deepspeed_fp16(self) -> bool:
        """Some DeepSpeed config of the project enables fp16."""
        ...

    def mixed_fp16(self, option_given: bool) -> bool:
        """Some config or launch script sets ``mixed_precision`` to fp16: a training
        config or a script's flag where the code hands an option of its own
        (``option_given``), else a launch config or flag."""
        ...

    def config_fp16(self, written: str) -> bool:
        """The DeepSpeed config at the path a module writes (from the project root or the
        module's folder) enables fp16; no where the project has no such file."""
        ...


class DeviceQueue:
    """The device queue along the functions of one module."""

    def __init__(
        self,
        where: HostWaits,
        analysis: ModuleAnalysis | None = None,
        shipped: ShippedPrecision | None = None,
    ) -> None:
        """``analysis``: the module's, for the conditional drains (``is_drain``): the
        project's kinds of objects made in other modules, the process groups'
        backends; without it only the module's own allocations are known.
        ``shipped``: the precision the project's configs show (asked only for the
        ``step()`` of a DeepSpeed engine or of an optimizer accelerate prepared);
        without it only what the module writes is read."""
        self.where = where
        self._analysis = analysis
        self._shipped = shipped
        self.names = where.names
        self.nodes = where.nodes
        self._returns_drained: dict[Function, bool] = {}
        self._queues_any: dict[Function, bool] = {}
        self._summarising: list[Function] = []
        self._drained: dict[int, dict[int, bool]] = {}
        self._stepped: dict[int, dict[int, str]] = {}
        self._rare: dict[int, frozenset[int]] = {}
        self._effects: dict[int, dict[int, Effect]] = {}
        self._bindings: dict[int, dict[str, list[ast.expr]]] = {}
        self._single: dict[int, dict[str, ast.expr]] = {}
        self._kernel_loops: dict[int, list[ast.For]] = {}
        self._flows: dict[str, ObjectFlow] = {}
        self._handed_kinds: dict[str, frozenset[tuple[ast.AST, str]]] = {}
        self._module_bound = _module_bound_names(where.nodes.module)
        #: Per loop, the plain names its code binds (``_reads_a_setting``).
        self._bound_in_loop: dict[int, frozenset[str]] = {}

    # -- the question ------------------------------------------------------------------

    def queue_drained(self, call: ast.Call) -> bool:
        """Whether an earlier wait in the same pass of the function leaves nothing new
        queued for ``call`` to wait for."""
        found = self.where.node_of(call, module_code=True)
        here: ast.AST = call
        if found is None:
            found = self.where.inline_node(call)  # ``[x.item() for x in losses]``
            comprehension = self.where.comprehension_of(call)
            if found is None or comprehension is None:
                return False
            if self._comprehension_works(comprehension, found[0].scope):
                return False
            here = comprehension  # run in place: drained where the statement evaluates it
        graph, node = found
        scope = graph.scope
        statement = node.statement
        if statement is None:
            return False
        before_here = _evaluated_before(statement, here)
        receiver = _receiver(here)
        for wait in self._waits_in(statement, scope):
            if wait is here or _contains(wait, here):
                continue
            if _contains(here, wait) and not (
                receiver is not None and (wait is receiver or _contains(receiver, wait))
            ):
                continue  # an argument (or a comprehension's element) is not before it
            if _order(statement, wait) > _order(statement, here):
                continue
            between = [e for e in before_here if _order(statement, e) > _order(statement, wait)]
            if not any(self._queues_work(e, scope) for e in between):
                return True
        if any(self._queues_work(e, scope) for e in before_here):
            return False
        stepped = self._stepped_map(graph).get(node.index, _FRESH)
        if stepped is not _FRESH:
            return stepped is _DRAINED
        return self._drained_map(graph).get(node.index, False)

    def _comprehension_works(self, comprehension: ast.AST, scope: ast.AST) -> bool:
        """Whether a comprehension may queue step work for some element (a forward, a
        collective); kernels on each collected value are not (as a loop over them)."""
        return any(
            self._queues_work(inner, scope, repeated=False) for inner in ast.walk(comprehension)
        )

    # -- what one call does to the queue -----------------------------------------------

    def _waits_for_queue(self, call: ast.Call, scope: ast.AST) -> bool:
        """A host read, an upload, a synchronisation, a gradient scaler's step, or a call
        of the module's function that returns drained."""
        if is_host_read(call):
            return not self.placement.read_on_host(call, scope)
        if self.converts_kernel_result(call, scope) or self.sized_on_device(call, scope):
            return True
        if self._is_upload(call) or synchronizes(call, self.names.resolve):
            return True
        if self._moves_host_tensor(call, scope):
            return True
        func = call.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "step"
            and self._holds(SCALER, func.value, scope)
        ):
            return True
        if self.is_drain(call, scope) or self._checked_backward(call, scope):
            return True
        if self._scaled_step(call, scope):
            return True
        callee = self.code.callee(call, scope)
        if callee is not None and self._summary(callee[0], self._returns_drained_from):
            return True
        return self._call_waits(call, scope)

    @cached_property
    def _call_waits(self) -> CallWaits:
        """Which calls may wait by what they run (the module's functions, other
        modules' through the project model, instances whose forward may wait)."""
        project = self._analysis.project if self._analysis is not None else NO_PROJECT
        return CallWaits(self.code, self.names, project)

    def _checked_backward(self, call: ast.Call, scope: ast.AST) -> bool:
        """A backward run in anomaly mode with its NaN check (inside ``with
        torch.autograd.set_detect_anomaly(True):`` / ``detect_anomaly()``, or with the
        mode switched on by a statement of module code): the engine reads each backward
        node's output on the host, so the backward ends with the queue drained."""
        if self._analysis is None or self._analysis.backward_label(call) is None:
            return False
        if self._anomaly_switched_on:
            return True
        return any(
            _contains(block, call)
            for block in walk_own(scope)
            if isinstance(block, (ast.With, ast.AsyncWith))
            and any(self._checks_anomalies(item.context_expr) for item in block.items)
        ) or self._overflow_checked(call, scope)

    def _overflow_checked(self, call: ast.Call, scope: ast.AST) -> bool:
        """The backward that ends a ``with amp.scale_loss(loss, opt):`` block under
        apex's dynamic loss scaling (the module's ``amp.initialize`` at O1 or O2, the
        default, with no fixed ``loss_scale``): leaving the block unscales the
        gradients and reads the overflow flag on the host (``delay_unscale=True``
        or ``delay_overflow_check=True`` leave it for a later pass)."""
        if not self._apex_scales_dynamically:
            return False
        for block in walk_own(scope):
            if not isinstance(block, (ast.With, ast.AsyncWith)):
                continue
            last = block.body[-1]
            if not (last is call or _contains(last, call)):
                continue
            for item in block.items:
                scaling = item.context_expr
                if not (
                    isinstance(scaling, ast.Call)
                    and self.names.resolve(scaling.func) in _APEX_SCALE_LOSS
                ):
                    continue
                if all(
                    given is None or (isinstance(given, ast.Constant) and given.value is False)
                    for given in (
                        call_argument(scaling, 4, "delay_unscale"),
                        call_argument(scaling, 5, "delay_overflow_check"),
                    )
                ):
                    return True
        return False

    @cached_property
    def _apex_scales_dynamically(self) -> bool:
        """The module initialises apex's mixed precision with a dynamic loss scale:
        ``amp.initialize`` at a level other than O0 / O3 (O1 when not given), given no
        fixed ``loss_scale``, not switched off by a literal ``enabled=False``."""
        for call in self.nodes.of_type(ast.Call):
            if self.names.resolve(call.func) not in _APEX_INITIALIZE:
                continue
            level = call_argument(call, 3, "opt_level")
            scale = call_argument(call, 8, "loss_scale")
            enabled = call_argument(call, 2, "enabled")
            if isinstance(level, ast.Constant) and level.value in _APEX_STATIC_LEVELS:
                continue
            if scale is not None and not (
                isinstance(scale, ast.Constant) and scale.value == "dynamic"
            ):
                continue
            if isinstance(enabled, ast.Constant) and enabled.value is False:
                continue
            return True
        return False

    def _checks_anomalies(self, expression: ast.expr) -> bool:
        """``torch.autograd.set_detect_anomaly(True)``, ``torch.autograd.detect_anomaly()``
        (``check_nan`` left on)."""
        if not isinstance(expression, ast.Call):
            return False
        resolved = self.names.resolve(expression.func) or ""
        check_nan = call_argument(expression, int(resolved in _ANOMALY_SWITCHES), "check_nan")
        if check_nan is not None and not (
            isinstance(check_nan, ast.Constant) and check_nan.value is True
        ):
            return False
        if resolved in _ANOMALY_CONTEXTS:
            return True
        mode = call_argument(expression, 0, "mode")
        return (
            resolved in _ANOMALY_SWITCHES and isinstance(mode, ast.Constant) and mode.value is True
        )

    @cached_property
    def _anomaly_switched_on(self) -> bool:
        """``torch.autograd.set_detect_anomaly(True)`` as a statement of module code: the
        mode holds for every backward the module runs."""
        return any(
            isinstance(statement, ast.Expr) and self._checks_anomalies(statement.value)
            for statement in self.nodes.module.body
        )

    def sized_on_device(self, call: ast.Call, scope: ast.AST) -> bool:
        """``mask.nonzero()``, ``torch.unique(x)``, ``x.masked_select(m)``,
        ``torch.where(cond)``: a result whose size only the device knows, so the host
        waits for it (a value known to be on the host waits for nothing)."""
        func = call.func
        resolved = self.names.resolve(func) or ""
        if resolved.startswith("torch.") and (
            resolved.removeprefix("torch.") in SIZED_ON_DEVICE
            or (resolved == "torch.where" and len(call.args) == 1 and not call.keywords)
        ):
            return not all(self.placement.on_host(a, scope) for a in call.args[:1])
        return (
            isinstance(func, ast.Attribute)
            and func.attr in SIZED_ON_DEVICE
            and not resolved.startswith("torch.")
            and not self.placement.on_host(func.value, scope)
        )

    def masked_read(self, subscript: ast.Subscript, scope: ast.AST) -> bool:
        """``x[mask]`` read with a boolean mask made on the device (a comparison, ``~m``,
        ``torch.isnan(x)``, ``m.bool()``, or a name the scope binds once to one): the
        host waits to size the result."""
        if not isinstance(subscript.ctx, ast.Load) or self.placement.on_host(
            subscript.value, scope
        ):
            return False
        mask = subscript.slice
        if isinstance(mask, ast.Name):
            single = self._single.get(id(scope))
            if single is None:
                single = self._single[id(scope)] = single_bindings(scope)
            mask = single.get(mask.id, mask)
        return self._is_mask(mask) and not self.placement.on_host(mask, scope)

    def _is_mask(self, expression: ast.expr) -> bool:
        if isinstance(expression, ast.Compare):
            return True
        if isinstance(expression, ast.UnaryOp) and isinstance(expression.op, ast.Invert):
            return self._is_mask(expression.operand)
        if isinstance(expression, ast.BinOp) and isinstance(expression.op, (ast.BitAnd, ast.BitOr)):
            return self._is_mask(expression.left) or self._is_mask(expression.right)
        if isinstance(expression, ast.Call):
            func = expression.func
            if self.names.resolve(func) in MASK_FUNCTIONS:
                return True
            return isinstance(func, ast.Attribute) and func.attr in MASK_METHODS
        return False

    def is_drain(self, call: ast.Call, scope: ast.AST) -> bool:
        """A call that drains the queue where its condition can hold: a DeepSpeed engine's
        ``step()`` (its throughput timer, ``ThroughputTimer.stop``, synchronises the
        device at the end of every step once the engine's forward has started it, when
        ``deepspeed.initialize`` got no ``training_data`` and ``timers.throughput`` is left
        enabled and synchronized, the defaults); a blocking ``barrier()`` on a group whose
        backend can be NCCL (ProcessGroupNCCL runs it as an all-reduce queued after the
        current stream's work and blocks the host until it completes)."""
        func = call.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "step"
            and not call.args
            and (self._timed_engine(func.value, scope) or self._checks_overflow(func.value, scope))
        ):
            return True
        return (
            torch_distributed_function(self.names.resolve(func)) == "barrier"
            and _blocking(call)
            and self._can_be_nccl(call)
        )

    def _can_be_nccl(self, call: ast.Call) -> bool:
        """Whether the group a ``barrier`` runs on can be NCCL: not known to be another
        backend (a module that makes no process group of its own leaves it unknown:
        ``deepspeed.initialize`` and ``torchrun`` programs on GPUs run NCCL)."""
        if self._groups is None:
            return True
        backend = self._groups.group_backend(call, call_argument(call, 0, "group"))
        return backend is None or not set(backend.name.split(",")) <= _HOST_BACKENDS

    @cached_property
    def _groups(self) -> ProcessGroups | None:
        """The module's process groups (their ``init_process_group`` calls read once)."""
        return ProcessGroups(self._analysis) if self._analysis is not None else None

    def _timed_engine(self, receiver: ast.expr, scope: ast.AST) -> bool:
        """Whether ``receiver`` may hold a DeepSpeed engine whose throughput timer ends
        each ``step()`` with a device synchronize: one ``deepspeed.initialize`` made in
        this module without ``training_data``, or an engine the project says a field or
        a factory of another module holds, where the module runs an engine's forward;
        not where the module turns the timer off."""
        if self._timer_turned_off or not self._engine_forwards:
            return False
        return self._is_engine(receiver, scope)

    def _scaled_step(self, call: ast.Call, scope: ast.AST) -> bool:
        """``optimizer.step()`` of an optimizer an ``Accelerator`` under fp16 mixed
        precision prepared: its ``GradScaler`` reads the inf/NaN check on the host."""
        func = call.func
        return (
            isinstance(func, ast.Attribute)
            and func.attr == "step"
            and not call.args
            and dotted_name(func.value) in self._prepared
            and self._accelerates_fp16
        )

    @cached_property
    def _prepared(self) -> frozenset[str]:
        """What the module binds to what an ``Accelerator``'s ``prepare`` returns
        (``model, optimizer, loader = accelerator.prepare(...)``), as spelled; not what
        it returns for a learning-rate scheduler it was handed (its ``step()`` reads
        nothing)."""
        found: set[str] = set()
        for assign in self.nodes.of_type(ast.Assign):
            value = assign.value
            scope = self.code.scope_of(assign)
            if not (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Attribute)
                and value.func.attr == "prepare"
                and self._holds(ACCELERATOR, value.func.value, scope)
            ):
                continue
            handed = value.args
            for target in assign.targets:
                parts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
                for position, part in enumerate(parts):
                    given = handed[position] if len(parts) == len(handed) else None
                    if given is not None and self._holds(SCHEDULER, given, scope):
                        continue
                    spelled = dotted_name(part)
                    if spelled is not None:
                        found.add(spelled)
        return frozenset(found)

    @cached_property
    def _accelerates_fp16(self) -> bool:
        """Whether an ``Accelerator`` of the module may run fp16 mixed precision: given
        ``mixed_precision="fp16"``, or a name or option whose default or binding in the
        module is ``"fp16"``, or an option a training config or launch script of the
        project sets to fp16 (an argument wins over the launch config); given nothing,
        where the project's accelerate launch config or a launch flag sets fp16."""
        for call in self.nodes.of_type(ast.Call):
            if library_kind(self.names.resolve(call.func) or "") != ACCELERATOR:
                continue
            keyword = keyword_argument(call, "mixed_precision")
            given = keyword.value if keyword is not None else None
            if isinstance(given, ast.Constant):
                if given.value == "fp16":
                    return True
                continue
            if given is not None and self._fp16_literal:
                return True
            if self._shipped is not None and self._shipped.mixed_fp16(given is not None):
                return True
        return False

    @cached_property
    def _fp16_literal(self) -> bool:
        """The module writes ``"fp16"`` as a default or a bound value (a parameter's
        default, an assignment, an option's ``default=``)."""
        values: list[ast.expr | None] = []
        for arguments in self.nodes.of_type(ast.arguments):
            values.extend([*arguments.defaults, *arguments.kw_defaults])
        values.extend(assign.value for assign in self.nodes.of_type(ast.Assign))
        values.extend(
            keyword.value
            for call in self.nodes.of_type(ast.Call)
            for keyword in call.keywords
            if keyword.arg == "default"
        )
        return any(isinstance(v, ast.Constant) and v.value == "fp16" for v in values)

    def _checks_overflow(self, receiver: ast.expr, scope: ast.AST) -> bool:
        """Whether ``receiver`` may hold a DeepSpeed engine that trains in fp16 with
        dynamic loss scaling: its ``step()`` all-reduces the overflow flag and reads it
        on the host (``_engine_fp16``)."""
        return self._engine_fp16 and (
            self._is_engine(receiver, scope)
            or (
                isinstance(receiver, (ast.Name, ast.Attribute))
                and self._initialized.carries(receiver, scope)
            )
        )

    @cached_property
    def _initialized(self) -> ObjectFlow:
        """Where the first item of any ``deepspeed.initialize(...)`` of the module
        travels (given ``training_data`` or not: an engine all the same)."""

        def first_made(expression: ast.expr, _: ast.AST) -> bool:
            return isinstance(expression, ast.Call) and is_deepspeed_initialize(
                self.names.resolve(expression.func)
            )

        return ObjectFlow(self.code, lambda _e, _s: False, first_made)

    @cached_property
    def _engine_fp16(self) -> bool:
        """Whether an engine of the module may train in fp16, by the config each
        ``deepspeed.initialize`` of the module is given where the module shows it (a
        dict written in the module, ``config=CONFIG``; a path written as a string, read
        where the project has that file), else by the configs the project ships (the
        config named on the command line, ``args.deepspeed_config``; an engine made in
        another module). Any that enables fp16 is enough: the answer only silences."""
        configs: list[ast.keyword | None] = [
            keyword_argument(call, "config") or keyword_argument(call, "config_params")
            for call in self.nodes.of_type(ast.Call)
            if is_deepspeed_initialize(self.names.resolve(call.func))
        ]
        for keyword in configs or [None]:
            shown = self._shown_fp16(keyword.value) if keyword is not None else None
            if shown is None:
                shown = self._shipped is not None and self._shipped.deepspeed_fp16()
            if shown:
                return True
        return False

    def _shown_fp16(self, config: ast.expr) -> bool | None:
        """Whether the config an engine is given enables fp16, where the module shows it
        (a dict display, a name the module binds to dict displays only, a path written
        as a string); None where it does not."""
        if isinstance(config, ast.Dict):
            return _enables_fp16(config)
        if isinstance(config, ast.Constant) and isinstance(config.value, str):
            return self._shipped is not None and self._shipped.config_fp16(config.value)
        if isinstance(config, ast.Name):
            bound = [
                assign.value
                for assign in self.nodes.of_type(ast.Assign)
                if any(isinstance(t, ast.Name) and t.id == config.id for t in assign.targets)
            ]
            if bound and all(isinstance(value, ast.Dict) for value in bound):
                return any(_enables_fp16(value) for value in bound)  # type: ignore[arg-type]
        return None

    def _is_engine(self, expression: ast.expr, scope: ast.AST) -> bool:
        if isinstance(expression, (ast.Name, ast.Attribute)) and self._engines.carries(
            expression, scope
        ):
            return True
        return self._project_kind(expression, scope) == ENGINE

    @cached_property
    def _engine_forwards(self) -> bool:
        """Whether the module runs an engine's own forward (``loss = engine(batch)``):
        the throughput timer starts there; an engine whose wrapped module is called
        directly (``netD(real)``, then ``engine.backward``/``step``) never starts it,
        and its ``step()`` synchronises nothing."""
        return any(
            isinstance(call.func, (ast.Name, ast.Attribute))
            and self._is_engine(call.func, self.nodes.scope_of_call(call))
            for call in self.nodes.of_type(ast.Call)
        )

    def _project_kind(self, expression: ast.expr, scope: ast.AST) -> str | None:
        """The kind the project model gives a name or ``self`` field as spelled here."""
        spelled = dotted_name(expression)
        if self._analysis is None or spelled is None:
            return None
        owner = self.code.class_of(scope)
        return self._analysis.project.kind(spelled, owner.name if owner is not None else None)

    @cached_property
    def _engines(self) -> ObjectFlow:
        """Where the module's own DeepSpeed engines travel (the first item of what
        ``deepspeed.initialize`` returns, when given no ``training_data``; what a
        project factory returns)."""

        def made(expression: ast.expr, scope: ast.AST) -> bool:
            return isinstance(expression, ast.Call) and (
                library_kind(self.names.resolve(expression.func) or "") == ENGINE
                or self._project_kind(expression.func, scope) == ENGINE
            )

        def first_made(expression: ast.expr, _: ast.AST) -> bool:
            return (
                isinstance(expression, ast.Call)
                and is_deepspeed_initialize(self.names.resolve(expression.func))
                and call_argument(expression, _TRAINING_DATA_POSITION, "training_data") is None
            )

        return ObjectFlow(self.code, made, first_made)

    @cached_property
    def _timer_turned_off(self) -> bool:
        """A DeepSpeed config written in the module that turns the throughput timer off
        or unsynchronised (``"throughput": {"enabled": False}``)."""
        for display in self.nodes.of_type(ast.Dict):
            for key, value in zip(display.keys, display.values, strict=True):
                if not (
                    isinstance(key, ast.Constant)
                    and key.value == "throughput"
                    and isinstance(value, ast.Dict)
                ):
                    continue
                for option, setting in zip(value.keys, value.values, strict=True):
                    if (
                        isinstance(option, ast.Constant)
                        and option.value in ("enabled", "synchronized")
                        and not (isinstance(setting, ast.Constant) and setting.value is True)
                    ):
                        return True
        return False

    def converts_kernel_result(self, call: ast.Call, scope: ast.AST) -> bool:
        """``float(x.sum())``, ``int(mask.count_nonzero())``: a Python number made of
        what a tensor method just computed (a value not known to be on the host), also
        through a name the scope binds once to one (``n = mask.sum(); int(n)``)."""
        func = call.func
        if not (
            isinstance(func, ast.Name)
            and func.id in _CONVERTING_BUILTINS
            and self._builtin(call, scope)
            and len(call.args) == 1
            and not call.keywords
        ):
            return False
        value = call.args[0]
        if isinstance(value, ast.Name):
            single = self._single.get(id(scope))
            if single is None:
                single = self._single[id(scope)] = single_bindings(scope)
            value = single.get(value.id, value)
        return (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and _kernel_method(value.func.attr)
            and not self.placement.on_host(value, scope)
        )

    def _queues_work(self, expression: ast.AST, scope: ast.AST, repeated: bool = True) -> bool:
        """Whether evaluating this node itself (not its parts) may queue new device work
        worth a wait: a forward, a backward, an optimizer, a collective; with
        ``repeated``, also a kernel in a loop of kernels (``_kernel_loops``)."""
        if not isinstance(expression, ast.Call):
            return False
        if is_host_read(expression) or is_shape_read(expression) or self._is_upload(expression):
            return False
        if synchronizes(expression, self.names.resolve) or self._builtin(expression, scope):
            return False
        func = expression.func
        if isinstance(func, ast.Attribute) and func.attr in VIEW_METHODS:
            return False
        if self.sized_on_device(expression, scope) or self._collective_of_values(expression, scope):
            return False
        if self._parameter_pass(expression, scope):
            return False
        kernel = self._torch_kernel(expression) or self._layer_call(func, scope)
        if isinstance(func, ast.Attribute):
            if self._host_value(func.value, scope, 0):
                return False  # a method of a Python value (``res.append(t)``)
            kernel = kernel or _kernel_method(func.attr)
            if not kernel and self._host_side_method(func, scope):
                return False
        if kernel:
            return repeated and self._in_kernel_loop(expression, scope)
        callee = self.code.callee(expression, scope)
        if callee is not None and not self._summary(callee[0], self._queues_at_all, True):
            return False
        arguments = [*expression.args, *(k.value for k in expression.keywords)]
        if not arguments:
            return self._bare_call_works(func, scope)
        return not all(
            self._host_value(a, scope, 0) or self._host_where_called(a, expression)
            for a in arguments
        )

    def _host_where_called(self, argument: ast.expr, call: ast.Call) -> bool:
        """A name whose bindings that reach ``call`` all hold Python values, though
        another binding of it holds a tensor (``loss = loss.item()`` ... ``log(loss)``;
        ``ot, rest = pair`` ... ``ot = ot.mean().item()`` ... ``meter(ot)``)."""
        if not isinstance(argument, ast.Name):
            return False
        found = self.where.node_of(call, module_code=True)
        if found is None:
            return False
        graph, node = found
        return self._host_reaching(graph, node, argument.id, 0)

    def _host_reaching(self, graph: Graph, node: Node, name: str, depth: int) -> bool:
        """Whether every binding of ``name`` that reaches ``node`` holds a Python value;
        an augmented one (``part /= w``) where its operand is one and so is every binding
        reaching it (``part = part.item()``)."""
        reaching = bindings_reaching(graph, node, name)
        if not reaching.bindings or reaching.from_entry:
            return False
        for binder, value in reaching.bindings:
            if value is not None:
                if not self._host_value(value, graph.scope, 1):
                    return False
                continue
            statement = binder.statement
            if not (
                depth < _AUGMENTED_DEPTH
                and isinstance(statement, ast.AugAssign)
                and self._host_value(statement.value, graph.scope, 1)
                and self._host_reaching(graph, binder, name, depth + 1)
            ):
                return False
        return True

    def _parameter_pass(self, call: ast.Call, scope: ast.AST) -> bool:
        """Gradient clipping (``clip_grad_norm_``) or the ``step()`` of an optimizer
        known by what made it: elementwise kernels over the parameters, as the
        optimizer kernels a gradient scaler's step queues after its read are; a read
        after a wait that follows the backward waits for these alone."""
        if self.names.resolve(call.func) in _CLIPPING:
            return True
        func = call.func
        return (
            isinstance(func, ast.Attribute)
            and func.attr == "step"
            and not call.args
            and not call.keywords
            and (
                self._holds(OPTIMIZER, func.value, scope)
                or self._project_kind(func.value, scope) == OPTIMIZER
            )
        )

    def _collective_of_values(self, call: ast.Call, scope: ast.AST) -> bool:
        """A collective handed values already computed (``dist.all_reduce(loss)``, a
        project helper that all-reduces its argument, a library helper that only
        communicates, ``comm.reduce_dict(loss_dict)``): it queues its own communication
        of them and no step work; not one handed what a loop around it walks (``for p in
        model.parameters(): dist.all_reduce(p.grad)``: every parameter's)."""
        if not call.args:
            return False
        walked = {
            name.id
            for loop in self.code.loops_around(call)
            if isinstance(loop, (ast.For, ast.AsyncFor))
            for name in ast.walk(loop.target)
            if isinstance(name, ast.Name)
        }
        if any(_mentions(argument, walked) for argument in call.args):
            return False
        resolved = self.names.resolve(call.func)
        if torch_distributed_function(resolved) in _VALUE_COLLECTIVES:
            return True
        if is_communication_helper(resolved):
            return True  # ``comm.reduce_dict(loss_dict)``
        func = call.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr in _ACCELERATE_VALUE_COLLECTIVES
            and self._holds(ACCELERATOR, func.value, scope)
        ):
            return True  # ``accelerator.gather(loss.repeat(n))``
        spelled = dotted_name(call.func)
        if self._analysis is None or spelled is None:
            return False
        owner = self.code.class_of(scope)
        reached = self._analysis.project.reached(spelled, owner.name if owner is not None else None)
        return reached is not None and reached.name in _VALUE_COLLECTIVES

    def _in_kernel_loop(self, expression: ast.AST, scope: ast.AST) -> bool:
        """Whether ``expression`` sits in a loop of ``scope`` that walks a tensor in
        pieces with kernels and no other work (``for i in range(chunks): piece =
        t[:, i * n:(i + 1) * n]; total += piece.exp().sum().item()``): together its
        kernels are a pass over the whole tensor, and each turn's read waits for its
        piece, new work each turn (a few kernels on values already computed are not; nor
        a loop over a collection's items, ``for k, v in stats.items(): v.mean().item()``)."""
        loops = self._kernel_loops.get(id(scope))
        if loops is None:
            loops = self._kernel_loops[id(scope)] = [
                loop
                for loop in walk_own(scope)
                if isinstance(loop, ast.For)
                and _walks_in_pieces(loop, self.names.resolve)
                and not any(
                    self._queues_work(e, scope, repeated=False)
                    for statement in loop.body
                    for e in walk_own(statement)
                )
            ]
        return any(_contains(loop, expression) for loop in loops)

    def _bare_call_works(self, func: ast.expr, scope: ast.AST) -> bool:
        """A call given nothing may run the step's work when it steps (``opt.step()``,
        ``engine.step()``), runs a backward, a collective (``dist.barrier()``), a method
        of the instance or a callable (``closure()``); another object's method given
        nothing reads it (``d.items()``, ``sched.get_last_lr()``, ``model.train()``)."""
        if not isinstance(func, ast.Attribute) or func.attr in _STEP_WORK:
            return True
        if _is_layer(self.names.resolve(func)):
            return False  # ``nn.ReLU()``: built on the host
        if (self.names.resolve(func) or "").startswith(_MORE_THAN_KERNELS):
            return True
        receiver = func.value
        return isinstance(receiver, ast.Name) and self.code.is_instance(receiver, scope)

    def _layer_call(self, func: ast.expr, scope: ast.AST) -> bool:
        """A call of a ``torch.nn`` layer the code builds from host values alone, every
        binding of its name one (``softmax = nn.Softmax(dim=-1)``; ``softmax(logits)``):
        the layer's kernels on what it is handed, no step work (a layer built around
        a model, ``nn.DataParallel(model)``, is handed a value that is not on the host)."""
        if not isinstance(func, ast.Name):
            return False
        owner = scope if self.code.binds(scope, func.id) else self.nodes.module
        made = self._bound(owner).get(func.id, [])
        return bool(made) and all(
            isinstance(value, ast.Call)
            and _is_layer(self.names.resolve(value.func))
            and all(
                self._host_value(a, owner, 0)
                for a in [*value.args, *(k.value for k in value.keywords)]
            )
            for value in made
        )

    def _host_side_method(self, func: ast.Attribute, scope: ast.AST) -> bool:
        """A scheduler's methods; a scaler's or an optimizer's other than ``step``."""
        receiver = func.value
        if self._holds(SCHEDULER, receiver, scope):
            return True
        return func.attr != "step" and (
            self._holds(SCALER, receiver, scope) or self._holds(OPTIMIZER, receiver, scope)
        )

    def _is_upload(self, call: ast.Call) -> bool:
        """``torch.tensor(data, device=d)`` with ``d`` not the CPU."""
        if self.names.resolve(call.func) not in UPLOADING_FACTORIES:
            return False
        device = next((k.value for k in call.keywords if k.arg == "device"), None)
        return device is not None and not (
            isinstance(device, ast.Constant) and device.value in ("cpu", None)
        )

    def _moves_host_tensor(self, call: ast.Call, scope: ast.AST) -> bool:
        """``x.to(device)`` / ``x.cuda()`` of a tensor known to live on the host (what a
        loader collated, a tensor built on the CPU), without ``non_blocking=True``: a
        copy from pageable memory that synchronises the stream first, as an upload of
        host data does."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and blocking_move(call, self.names.resolve)):
            return False
        moved = func.value
        if self.placement.on_host(moved, scope):
            return True
        found = self.where.node_of(call, module_code=True)
        if not isinstance(moved, ast.Name) or found is None:
            return False
        graph, node = found  # ``image = image.to(device)``: the batch's item before
        reaching = bindings_reaching(graph, node, moved.id)
        if not reaching.bindings or reaching.from_entry:
            return False
        for binder, value in reaching.bindings:
            statement = binder.statement
            if value is not None:
                if not self.placement.on_host(value, graph.scope):
                    return False
            elif not (
                isinstance(statement, (ast.For, ast.AsyncFor))
                and self.placement.walks_host_loader(statement, graph.scope)
            ):
                return False
        return True

    def _torch_kernel(self, call: ast.Call) -> bool:
        """A ``torch`` function that runs a kernel on its arguments (``torch.log(x)``,
        ``F.softmax(x)``), not a collective, an optimizer or a module."""
        name = self.names.resolve(call.func) or ""
        if name.startswith("torch.nn.functional."):
            return True
        return name.startswith("torch.") and not name.startswith(_MORE_THAN_KERNELS)

    def _builtin(self, call: ast.Call, scope: ast.AST) -> bool:
        """A call of a Python builtin the module does not rebind (``isinstance``,
        ``print``, ``sum`` of a few tensors), also through a name bound only to a wrapper
        that runs it on some ranks (``print0 = accelerator.on_local_main_process(print)``)."""
        func = call.func
        if not isinstance(func, ast.Name):
            return False
        if hasattr(builtins, func.id) and func.id not in self._module_bound:
            return isinstance(scope, ast.Module) or not self.code.binds(scope, func.id)
        owner = scope if self.code.binds(scope, func.id) else self.nodes.module
        made = self._bound(owner).get(func.id, [])
        return bool(made) and all(self._wrapped_builtin(value) for value in made)

    def _wrapped_builtin(self, value: ast.expr) -> bool:
        """``accelerator.on_main_process(print)``, ``rank_zero_only(print)``: a builtin
        the module does not rebind, wrapped to run on some ranks."""
        return (
            isinstance(value, ast.Call)
            and (self.names.resolve(value.func) or "").rsplit(".", 1)[-1] in RANK_ONLY_DECORATORS
            and len(value.args) == 1
            and not value.keywords
            and isinstance(wrapped := value.args[0], ast.Name)
            and hasattr(builtins, wrapped.id)
            and wrapped.id not in self._module_bound
        )

    # -- objects by what made them -------------------------------------------------------

    @cached_property
    def code(self) -> ModuleCode:
        """The module's scopes and which of its functions a call runs."""
        return ModuleCode(self.nodes, self.names)

    @cached_property
    def placement(self) -> Placement:
        """Which values of the module live on the host (a read of one waits for nothing)."""
        return Placement(self.where, self.code)

    def _made_by_library(self, kind: str) -> Callable[[ast.expr, ast.AST], bool]:
        def made(expression: ast.expr, scope: ast.AST) -> bool:
            if not isinstance(expression, ast.Call):
                return False
            if any(
                k.arg == "enabled" and isinstance(k.value, ast.Constant) and k.value.value is False
                for k in expression.keywords
            ):
                return False  # a disabled scaler steps without reading anything
            return library_kind(self.names.resolve(expression.func) or "") == kind

        return made

    @cached_property
    def _kinds_made(self) -> frozenset[str]:
        """The kinds of object some call of the module makes (a flow is followed only for
        those: with no allocation, nothing holds one)."""
        found: set[str] = set()
        for call in self.nodes.of_type(ast.Call):
            resolved = self.names.resolve(call.func) or ""
            kind = _NAMESPACE if resolved in _ARGUMENT_PARSERS else library_kind(resolved)
            if kind is not None:
                found.add(kind)
        return frozenset(found)

    def _flow(self, kind: str) -> ObjectFlow:
        flow = self._flows.get(kind)
        if flow is None:
            if kind == _NAMESPACE:
                parsers = ObjectFlow(
                    self.code,
                    lambda e, _: (
                        isinstance(e, ast.Call) and self.names.resolve(e.func) in _ARGUMENT_PARSERS
                    ),
                )

                def parsed(expression: ast.expr, scope: ast.AST) -> bool:
                    return (
                        isinstance(expression, ast.Call)
                        and isinstance(expression.func, ast.Attribute)
                        and expression.func.attr in _PARSE_METHODS
                        and parsers.carries(expression.func.value, scope)
                    )

                flow = ObjectFlow(self.code, parsed)
            else:
                flow = ObjectFlow(self.code, self._made_by_library(kind))
            self._flows[kind] = flow
        return flow

    def _holds(self, kind: str, expression: ast.expr, scope: ast.AST) -> bool:
        """Whether ``expression`` may hold an object of ``kind`` (a library kind, or
        ``_NAMESPACE``: the parsed command line), by allocation in the module, or a
        parameter every project caller hands one in (``train_one_epoch(..., scaler)``
        called with ``scaler = GradScaler()`` by the scripts of the project)."""
        if not isinstance(expression, (ast.Name, ast.Attribute)):
            return False
        if kind in self._kinds_made and self._flow(kind).carries(expression, scope):
            return True
        return isinstance(expression, ast.Name) and (scope, expression.id) in self._handed(kind)

    def _handed(self, kind: str) -> frozenset[tuple[ast.AST, str]]:
        """``(function, parameter)`` of the module's functions whose parameter every
        project caller hands an object of ``kind`` in, never bound again in the
        function."""
        found = self._handed_kinds.get(kind)
        if found is None:
            handed: set[tuple[ast.AST, str]] = set()
            project = self._analysis.project if self._analysis is not None else NO_PROJECT
            for function in self.nodes.functions():
                owner = self.nodes.scope_of.get(function)
                key = project_key(function, owner)
                kinds = project.parameter_kinds(key) if key is not None else {}
                positions = [at for at, given in kinds.items() if given == kind]
                if not positions:
                    continue
                handed.update(
                    (function, name) for name in kept_parameters(function, owner, positions)
                )
            found = self._handed_kinds[kind] = frozenset(handed)
        return found

    # -- values on the host ------------------------------------------------------------

    def _host_value(self, expression: ast.expr, scope: ast.AST, depth: int) -> bool:
        """Whether ``expression`` is known to be a Python value (no tensor)."""
        if isinstance(expression, (ast.Constant, ast.JoinedStr)):
            return True
        if isinstance(expression, ast.Call):
            if is_host_read(expression) or is_shape_read(expression):
                return True
            func = expression.func
            return (
                isinstance(func, ast.Name)
                and func.id in _HOST_BUILTINS
                and self._builtin(expression, scope)
            )
        if is_shape_read(expression):
            return True
        if isinstance(expression, ast.Attribute):
            return self._holds(_NAMESPACE, expression.value, scope)
        if isinstance(expression, ast.Subscript):
            return self._host_value(expression.value, scope, depth)
        if isinstance(expression, ast.Starred):
            return self._host_value(expression.value, scope, depth)
        if isinstance(expression, (ast.Tuple, ast.List, ast.Set)):
            return all(self._host_value(e, scope, depth) for e in expression.elts)
        if isinstance(expression, ast.Dict):
            return all(self._host_value(v, scope, depth) for v in expression.values)
        if isinstance(expression, ast.IfExp):
            return self._host_value(expression.body, scope, depth) and self._host_value(
                expression.orelse, scope, depth
            )
        if isinstance(expression, ast.BinOp):
            if isinstance(expression.op, ast.Mod) and _is_text(expression.left):
                return True  # ``"%f" % loss``: a string
            return self._host_value(expression.left, scope, depth) and self._host_value(
                expression.right, scope, depth
            )
        if isinstance(expression, ast.UnaryOp):
            return self._host_value(expression.operand, scope, depth)
        if isinstance(expression, ast.Name) and depth < 2:
            values = self._bound(scope).get(expression.id, [])
            return bool(values) and all(self._host_value(v, scope, depth + 1) for v in values)
        return False

    def _bound(self, scope: ast.AST) -> dict[str, list[ast.expr]]:
        """What each name of a scope is bound to (a loop target: what it iterates,
        ``range(n)`` being host values)."""
        table = self._bindings.get(id(scope))
        if table is None:
            table = {}
            for node in walk_own(scope):
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        _bind_each(table, target, [node.value])
                elif isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(
                    node.target, ast.Name
                ):
                    table.setdefault(node.target.id, []).append(node.iter)
                elif isinstance(node, (ast.For, ast.AsyncFor)) and _items(node.iter):
                    _bind_each(table, node.target, _items(node.iter))
                elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
                    for name in ast.walk(node.target):
                        if isinstance(name, ast.Name):
                            table.setdefault(name.id, []).append(name)
            self._bindings[id(scope)] = table
        return table

    # -- along the graph ---------------------------------------------------------------

    def _waits_in(self, statement: ast.AST, scope: ast.AST) -> list[ast.expr]:
        """What in the statement's own parts waits for the device queue: host reads,
        uploads, synchronisations, scaler steps, calls of the module's functions that
        return drained, and a test whose value is a tensor."""
        found: list[ast.expr] = [
            inner
            for part in own_parts(statement)
            for inner in walk_own(part)
            if (isinstance(inner, ast.Call) and self._waits_for_queue(inner, scope))
            or (isinstance(inner, ast.Subscript) and self.masked_read(inner, scope))
            or (isinstance(inner, ast.expr) and self._formats_tensor(inner, scope))
        ]
        if isinstance(statement, (ast.If, ast.While, ast.Assert)):
            found.extend(self._tensor_tests(statement.test, scope))
        return found

    def _formats_tensor(self, expression: ast.expr, scope: ast.AST) -> bool:
        """A tensor on a device turned into a Python value by other spellings than a
        read method: ``float(loss)``, ``int(loss > 3)``, ``print(loss)``,
        ``str(loss)``, ``f"{loss}"``, ``"%f" % loss`` (each copies it to the host; a
        logger's arguments are formatted only where the level is enabled: no wait)."""
        on_device = self.placement.on_device
        if isinstance(expression, ast.Call):
            func = expression.func
            return (
                isinstance(func, ast.Name)
                and func.id in _FORMATTING_BUILTINS
                and self._builtin(expression, scope)
                and any(_holds_tensor(a, scope, on_device) for a in expression.args)
            )
        if isinstance(expression, ast.JoinedStr):
            return any(
                isinstance(part, ast.FormattedValue) and on_device(part.value, scope)
                for part in expression.values
            )
        if (
            isinstance(expression, ast.BinOp)
            and isinstance(expression.op, ast.Mod)
            and _is_text(expression.left)
        ):
            right = expression.right
            parts = right.elts if isinstance(right, ast.Tuple) else [right]
            return any(on_device(part, scope) for part in parts)
        return False

    def _tensor_tests(self, test: ast.expr, scope: ast.AST) -> Iterator[ast.expr]:
        """The parts of a branch test that are tensors turned into a bool (a read):
        ``torch.isfinite(loss)``, ``torch.isnan(x).any()``, ``mask.any()`` (not of a
        value known to be on the host) under ``not`` / ``and`` / ``or``."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            yield from self._tensor_tests(test.operand, scope)
        elif isinstance(test, ast.BoolOp):
            for value in test.values:
                yield from self._tensor_tests(value, scope)
        elif (
            _holds_tensor(test, scope, self.placement.on_device)
            or self._tested_on_host(test)
            or (
                isinstance(test, ast.Call)
                and isinstance(test.func, ast.Attribute)
                and test.func.attr in _TRUTH_METHODS
                and not test.args
                and not self.placement.on_host(test.func.value, scope)
            )
        ):
            yield test

    def _tested_on_host(self, expression: ast.expr) -> bool:
        """A tensor's truth by form: ``torch.isfinite(x)``, ``torch.isnan(x).any()``."""
        if not isinstance(expression, ast.Call):
            return False
        func = expression.func
        if self.names.resolve(func) in TESTED_ON_HOST:
            return True
        return (
            isinstance(func, ast.Attribute)
            and func.attr in KERNEL_METHODS
            and self._tested_on_host(func.value)
        )

    def _effect(self, node: Node, scope: ast.AST) -> Effect:
        """What a node leaves in the device queue and whether it may queue work."""
        if node.statement is None or node.kind not in (
            NodeKind.STATEMENT,
            NodeKind.TEST,
            NodeKind.STEP,
        ):
            return None, False
        statement = node.statement
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            return None, False  # entering a context (autocast, no_grad, no_sync)
        queues = any(
            self._queues_work(e, scope) for part in own_parts(statement) for e in walk_own(part)
        )
        for wait in self._waits_in(statement, scope):
            after = _evaluated_after(statement, wait)
            if not any(self._queues_work(e, scope) for e in after):
                return True, queues
        return (False if queues else None), queues

    def _effects_of(self, graph: Graph) -> dict[int, Effect]:
        effects = self._effects.get(id(graph))
        if effects is None:
            scope = graph.scope
            effects = {node.index: self._effect(node, scope) for node in graph.nodes}
            self._effects[id(graph)] = effects
        return effects

    def _drained_map(self, graph: Graph) -> dict[int, bool]:
        drained = self._drained.get(id(graph))
        if drained is None:
            drained = self._drained[id(graph)] = self._drained_on_entry(graph)
        return drained

    def _drained_on_entry(self, graph: Graph) -> dict[int, bool]:
        """Node index -> whether, on every path that reaches the node, the last thing
        done to the device queue was a wait with no work queued since: a forward
        must-analysis to a fixed point over the graph, its loops and exception edges
        included."""
        effects = self._effects_of(graph)
        settings = self._settings_around(graph)

        def value(node: Node, drained: dict[int, bool]) -> bool:
            ways = self._ways_into(graph, node)
            if not ways:
                return False
            groups: dict[int, list[bool]] = {}
            for before, edge in ways:
                outer = _outermost_left(settings, before, node)
                groups.setdefault(outer, []).append(_drained_after(drained, effects, before, edge))
            return all(any(found) if outer else all(found) for outer, found in groups.items())

        return _fixed_point(graph, {n.index: n is not graph.entry for n in graph.nodes}, value)

    def _settings_around(self, graph: Graph) -> dict[int, tuple[int, ...]]:
        """Node index -> the branches on a setting of the run that hold the node's
        statement (their ids, outermost first): ``if cfg.use_mlm:`` inside a loop, a
        test that reads only names and fields (no call, no item, no arithmetic), none of
        them the instance's or bound in a loop around it, answered alike on every rank.
        Which way such a branch goes is the same on every trip of the loop and not known
        here: a wait on one of its ways may drain the queue for what follows the branch
        (uncertainty silences). Outside a loop a parameter may change with each call
        (``batch_idx``): no setting."""
        branches = [
            branch
            for branch in walk_own(graph.scope)
            if isinstance(branch, ast.If) and self._reads_a_setting(branch, graph)
        ]
        inside: dict[int, list[int]] = {}
        for branch in branches:
            for statement in ast.walk(branch):
                if isinstance(statement, ast.stmt):
                    inside.setdefault(id(statement), []).append(id(branch))
        return {
            node.index: tuple(inside.get(id(node.statement), ()))
            for node in graph.nodes
            if node.statement is not None
        }

    def _reads_a_setting(self, branch: ast.If, graph: Graph) -> bool:
        """Whether ``branch`` tests a setting of the run (``_settings_around``)."""
        test = branch.test
        roots: set[str] = set()
        for part in ast.walk(test):
            if isinstance(part, (ast.Call, ast.Subscript, ast.NamedExpr, ast.Await)):
                return False
            if isinstance(part, ast.BinOp):
                return False
            if isinstance(part, ast.Name):
                roots.add(part.id)
        loops = list(self.code.loops_around(branch))
        if not roots or roots & {"self", "cls"} or not loops or self._analysis is None:
            return False
        if any(roots & self._names_bound_in(loop) for loop in loops):
            return False
        nodes = graph.nodes_of(branch)
        if not nodes:
            return False
        divergence = self._analysis.function(graph.scope).divergence
        return divergence.test_taint(nodes[0]) is None

    def _names_bound_in(self, loop: ast.AST) -> frozenset[str]:
        """The plain names ``loop``'s code binds, found once per loop."""
        if id(loop) not in self._bound_in_loop:
            self._bound_in_loop[id(loop)] = frozenset(
                node.id
                for node in ast.walk(loop)
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
            )
        return self._bound_in_loop[id(loop)]

    def waited_next(self, call: ast.Call, every_rank: Callable[[Graph, Node], bool]) -> bool:
        """Whether, on every way on from ``call``'s statement, the next thing done to the
        device queue at a node ``every_rank`` accepts (one every rank runs) is a wait,
        with no work queued there before it: whatever ``call`` waits for is waited for
        right after anyway by every rank. Work queued at nodes only some ranks run (the
        rest of the guarded branch: rank zero's own logging or evaluation) is those
        ranks' own work, not a wait the read adds. A backward must-analysis to a fixed
        point; the function's end, an exception and work every rank queues first say
        no."""
        found = self.where.node_of(call, module_code=True)
        if found is None:
            return False
        graph, start = found
        effects = self._effects_of(graph)
        if every_rank(graph, start):
            if start.statement is not None and self._waits_later_in(
                start.statement, call, graph.scope
            ):
                return True
            if effects[start.index][1]:
                return False  # its own statement may queue work after the read

        def first(node: Node, waited: dict[int, bool]) -> bool:
            ends_with, queues = effects[node.index]
            if every_rank(graph, node):
                if queues:
                    return False
                if ends_with:
                    return True
            ways = [n for n, edge in node.successors if edge is not EdgeKind.EXCEPTION]
            return bool(ways) and all(waited[n.index] for n in ways)

        start_values = {n.index: n.kind not in (NodeKind.EXIT, NodeKind.RAISE) for n in graph.nodes}
        waited = _fixed_point(graph, start_values, first)
        ways = [n for n, edge in start.successors if edge is not EdgeKind.EXCEPTION]
        return bool(ways) and all(waited[n.index] for n in ways)

    def uploads_alone(self, graph: Graph, node: Node) -> bool:
        """Whether every wait of the node's statement is an upload of host data, built
        on the device or moved there (a copy waits as a read does, but the first upload
        of a pass is reported on its own)."""
        if node.statement is None:
            return False
        waits = self._waits_in(node.statement, graph.scope)
        return bool(waits) and all(
            isinstance(wait, ast.Call)
            and (self._is_upload(wait) or self._moves_host_tensor(wait, graph.scope))
            for wait in waits
        )

    def _waits_later_in(self, statement: ast.AST, call: ast.Call, scope: ast.AST) -> bool:
        """Whether ``statement`` waits after ``call`` with no work queued between
        (``hvd.allgather(torch.tensor([n], device=d))``, a synchronous collective of the
        copy; ``torch.tensor(...).nonzero()``). What may run between is counted
        broadly: any part of the statement but ``call``'s own, the wait and what
        encloses it or follows it."""
        here = _order(statement, call)
        for wait in self._waits_in(statement, scope):
            if (
                wait is call
                or _contains(call, wait)
                or (isinstance(wait, ast.Call) and self._is_upload(wait))
            ):
                continue
            if not (_contains(wait, call) or _order(statement, wait) > here):
                continue  # evaluated before the call
            there = _order(statement, wait)
            between = [
                inner
                for part in own_parts(statement)
                for inner in walk_own(part)
                if inner is not call
                and inner is not wait
                and not _contains(call, inner)
                and not _contains(inner, wait)
                and (_contains(wait, inner) or _order(statement, inner) < there)
            ]
            if not any(self._queues_work(e, scope) for e in between):
                return True
        return False

    def _stepped_map(self, graph: Graph) -> dict[int, str]:
        """Node index -> the queue on the ways that ran a backward since the function
        began or its training loop took its turn (``_DRAINED``, ``_BUSY``; ``_FRESH``
        where no such way reaches the node): the must-analysis of ``_drained_on_entry``
        over the passes of one training step alone, so a way that skips the step's
        backward (``if not cross_valid: loss.backward()``, an evaluation pass of the
        same loop) does not decide whether a read after the backward waits."""
        stepped = self._stepped.get(id(graph))
        if stepped is not None:
            return stepped
        effects = self._effects_of(graph)
        backward = {n.index for n in graph.nodes if self._runs_backward(n)}
        heads = {
            id(loop) for loop in training_loops(graph.scope, frozenset(self._backward_helpers))
        }

        def value(node: Node, state: dict[int, str]) -> str:
            found = _UNSET
            for before, edge in self._ways_into(graph, node):
                after = _step_after(state, effects, before, edge, before.index in backward)
                if id(before.statement) in heads and edge is EdgeKind.TRUE:
                    after = _FRESH  # a new turn of the training loop: a new step
                found = max(found, after, key=_STEP_ORDER.index)
            return found

        start = {node.index: _UNSET for node in graph.nodes}
        start[graph.entry.index] = _FRESH
        state = _fixed_point(graph, start, value)
        self._stepped[id(graph)] = state
        return state

    @cached_property
    def _backward_helpers(self) -> dict[str, str]:
        return self._analysis.backward_functions if self._analysis is not None else {}

    def _runs_backward(self, node: Node) -> bool:
        """Whether a node's own parts run a backward (itself or through a function of
        the module that does)."""
        if (
            self._analysis is None
            or node.statement is None
            or node.kind
            not in (
                NodeKind.STATEMENT,
                NodeKind.TEST,
            )
        ):
            return False
        analysis = self._analysis
        return any(
            analysis.runs_backward(call, self._backward_helpers)
            for part in own_parts(node.statement)
            for call in walk_own(part)
        )

    def _ways_into(self, graph: Graph, node: Node) -> list[tuple[Node, EdgeKind]]:
        """The ways into ``node`` that decide its queue: not an exception a ``with``
        swallows; and for a node past a periodic test (``if step % k == 0:``), the
        common way alone where it has one (the rare way's work, a checkpoint saved every
        k steps, is not the step's)."""
        ways = [(b, e) for b, e in self._taken_ways(graph, node) if not self._swallowed(b, e)]
        rare = self._rare_nodes(graph)
        if not rare or node.index in rare:
            return ways
        common = [(b, e) for b, e in ways if b.index not in rare]
        return common or ways

    def _taken_ways(self, graph: Graph, node: Node) -> list[tuple[Node, EdgeKind]]:
        """The ways into ``node``, where a loop that surely takes a turn
        (``control_flow.takes_a_turn``: ``for n, x in (("a", a), ("b", b)):``) is left
        only after its body: its exhausted way stands for the ways back into it from
        its body, not for the way in from above (its step queuing nothing itself)."""
        ways: list[tuple[Node, EdgeKind]] = []
        for before, edge in node.predecessors:
            loop = before.statement
            if (
                before.kind is NodeKind.STEP
                and edge is EdgeKind.FALSE
                and loop is not None
                and takes_a_turn(loop)
                and self._effects_of(graph)[before.index] == (None, False)
            ):
                ways.extend(
                    (b, e)
                    for b, e in before.predecessors
                    if b.statement is not None and _contains(loop, b.statement)
                )
            else:
                ways.append((before, edge))
        return ways

    def _periodic(self, test: ast.expr, scope: ast.AST) -> bool:
        """A test that holds now and then (``wait_screen.periodic_test``), also through a
        call of the module's function that returns one (``should_sample(step, k)``), or
        ``and``-ed with anything."""
        if periodic_test(test):
            return True
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            return any(self._periodic(value, scope) for value in test.values)
        if not isinstance(test, ast.Call):
            return False
        callee = self.code.callee(test, scope)
        if callee is None:
            return False
        returned = [
            node.value
            for node in walk_own(callee[0])
            if isinstance(node, ast.Return) and node.value is not None
        ]
        return bool(returned) and all(periodic_test(value) for value in returned)

    def _rare_nodes(self, graph: Graph) -> frozenset[int]:
        """The nodes of ``graph`` on the rare way of a periodic test of its own code."""
        found = self._rare.get(id(graph))
        if found is None:
            inside = {
                id(statement)
                for branch in walk_own(graph.scope)
                if isinstance(branch, ast.If) and self._periodic(branch.test, graph.scope)
                for body in branch.body
                for statement in ast.walk(body)
                if isinstance(statement, ast.stmt)
            }
            found = frozenset(
                n.index
                for n in graph.nodes
                if n.statement is not None and id(n.statement) in inside
            )
            self._rare[id(graph)] = found
        return found

    def _swallowed(self, node: Node, edge: EdgeKind) -> bool:
        """The way out of a ``with`` block that an exception takes when the context
        manager swallows it: taken only on an error (as an ``except`` handler is) unless
        the context is ``contextlib.suppress``, which swallows on purpose."""
        statement = node.statement
        return (
            node.kind is NodeKind.WITH_EXIT
            and edge is EdgeKind.FALSE
            and isinstance(statement, (ast.With, ast.AsyncWith))
            and not any(
                isinstance(item.context_expr, ast.Call)
                and self.names.resolve(item.context_expr.func) == "contextlib.suppress"
                for item in statement.items
            )
        )

    # -- summaries of the module's functions ----------------------------------------------

    def _summary(
        self, function: Function, answer: Callable[[Function], bool], unknown: bool = False
    ) -> bool:
        """``answer(function)``, or ``unknown`` while it is being answered (recursion) or
        past the depth followed."""
        if function in self._summarising or len(self._summarising) >= _CALLEE_DEPTH:
            return unknown
        self._summarising.append(function)
        try:
            return answer(function)
        finally:
            self._summarising.pop()

    def _returns_drained_from(self, function: Function) -> bool:
        """Whether every normal return of ``function`` leaves the queue drained."""
        known = self._returns_drained.get(function)
        if known is None:
            graph = self.where.graphs.graph(function)
            drained = self._drained_map(graph)
            exit_node = graph.exit
            ways = self._taken_ways(graph, exit_node)
            known = bool(ways) and all(
                _drained_after(drained, self._effects_of(graph), before, edge)
                for before, edge in ways
            )
            self._returns_drained[function] = known
        return known

    def _queues_at_all(self, function: Function) -> bool:
        """Whether any statement of ``function`` may queue device work."""
        known = self._queues_any.get(function)
        if known is None:
            effects = self._effects_of(self.where.graphs.graph(function))
            known = any(queues for _, queues in effects.values())
            self._queues_any[function] = known
        return known


def _enables_fp16(config: ast.Dict) -> bool:
    """A DeepSpeed config written as a dict display that enables fp16 (``"fp16":
    {"enabled": True}``)."""
    for key, value in zip(config.keys, config.values, strict=True):
        if isinstance(key, ast.Constant) and key.value == "fp16" and isinstance(value, ast.Dict):
            return any(
                isinstance(option, ast.Constant)
                and option.value == "enabled"
                and isinstance(setting, ast.Constant)
                and setting.value is True
                for option, setting in zip(value.keys, value.values, strict=True)
            )
    return False


def _is_layer(resolved: str | None) -> bool:
    """A ``torch.nn`` module class (``torch.nn.Softmax``, ``torch.nn.Linear``)."""
    return library_kind(resolved or "") == MODULE and (resolved or "").startswith("torch.nn.")


def _blocking(barrier: ast.Call) -> bool:
    """A ``barrier`` not asked to run asynchronously (``async_op`` absent or ``False``)."""
    given = call_argument(barrier, 1, "async_op")
    return given is None or (isinstance(given, ast.Constant) and given.value is False)


def _walks_in_pieces(loop: ast.For, resolve: Callable[[ast.AST], str | None]) -> bool:
    """``for i in range(n):`` whose body cuts a tensor by the counter or by a name it
    binds from the counter (``start = i * size``, ``x[:, start:end]``)."""
    if not (
        isinstance(loop.iter, ast.Call)
        and resolve(loop.iter.func) == "range"
        and isinstance(loop.target, ast.Name)
    ):
        return False
    moved = {loop.target.id}
    for statement in loop.body:
        for node in walk_own(statement):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and _mentions(node.value, moved)
            ):
                moved.add(node.targets[0].id)
    return any(
        isinstance(node, ast.Subscript) and _slices_by(node.slice, moved)
        for statement in loop.body
        for node in walk_own(statement)
    )


def _slices_by(index: ast.expr, moved: set[str]) -> bool:
    """A subscript that cuts a tensor by the counter: a slice that mentions it
    (``x[start:end]``, ``x[:, i * n:(i + 1) * n]``) or an index of several axes
    that does (``x[:, i]``: a list takes no such index). A single index by the
    counter (``losses[i]``) may pick an item of a list of values already computed,
    which is no pass over a tensor."""
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    if isinstance(index, ast.Tuple) and _mentions(index, moved):
        return True
    return any(isinstance(part, ast.Slice) and _mentions(part, moved) for part in parts)


def _outermost_left(settings: dict[int, tuple[int, ...]], before: Node, node: Node) -> int:
    """The outermost branch on a setting that holds ``before`` and not ``node`` (the
    branch a way into ``node`` leaves), 0 where none."""
    held = settings.get(node.index, ())
    return next((b for b in settings.get(before.index, ()) if b not in held), 0)


def _bind_each(table: dict[str, list[ast.expr]], target: ast.expr, values: list[ast.expr]) -> None:
    """Record what ``target`` binds each of its names to for each of ``values``: the
    matching item of a display (``total, count = 0.0, 0``), else the target itself (an
    unpacking of a value not spelled here)."""
    names = [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
    for value in values:
        paired = dict(paired_names(target, value))
        for name in names:
            table.setdefault(name, []).append(paired.get(name, target))


def _items(walked: ast.expr) -> list[ast.expr]:
    """The items of a display a loop walks (``(("a", a, w_a), ("b", b, w_b))``); none
    where one is starred."""
    if isinstance(walked, (ast.Tuple, ast.List, ast.Set)) and not any(
        isinstance(e, ast.Starred) for e in walked.elts
    ):
        return list(walked.elts)
    return []


def _mentions(expression: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in walk_own(expression))


def _drained_after(
    drained: dict[int, bool],
    effects: dict[int, Effect],
    node: Node,
    edge: EdgeKind,
) -> bool:
    """Whether the queue is drained when control leaves ``node`` along ``edge`` (an
    exception may leave after the node queued work and before its own wait)."""
    ends_with, queues = effects[node.index]
    if edge is EdgeKind.EXCEPTION:
        return drained[node.index] and not queues
    return drained[node.index] if ends_with is None else ends_with


def _is_text(expression: ast.expr) -> bool:
    return isinstance(expression, ast.Constant) and isinstance(expression.value, str)


def _holds_tensor(
    expression: ast.expr, scope: ast.AST, on_device: Callable[[ast.expr, ast.AST], bool]
) -> bool:
    """A tensor on a device, or a comparison of one (``loss > 10``): its truth or value
    is read on the host."""
    if isinstance(expression, ast.Compare):
        return any(on_device(e, scope) for e in (expression.left, *expression.comparators))
    return on_device(expression, scope)


def _fixed_point(
    graph: Graph, start: dict[int, T], value: Callable[[Node, dict[int, T]], T]
) -> dict[int, T]:
    """Each node's ``value`` from its predecessors', from ``start`` (the entry kept) until
    nothing changes."""
    state = dict(start)
    changed = True
    while changed:
        changed = False
        for node in graph.nodes:
            if node is graph.entry:
                continue
            found = value(node, state)
            if found != state[node.index]:
                state[node.index] = found
                changed = True
    return state


def _step_after(
    state: dict[int, str], effects: dict[int, Effect], node: Node, edge: EdgeKind, backward: bool
) -> str:
    """The queue of one step's passes when control leaves ``node`` along ``edge``: as
    ``_drained_after``, where a node that runs the step's backward starts the step."""
    before = state[node.index]
    if before in (_UNSET, _FRESH) and not backward:
        return before
    ends_with, queues = effects[node.index]
    if edge is EdgeKind.EXCEPTION:
        return _DRAINED if before == _DRAINED and not queues else _BUSY
    if ends_with is None:
        return _DRAINED if before == _DRAINED else _BUSY
    return _DRAINED if ends_with else _BUSY


def _receiver(expression: ast.AST) -> ast.AST | None:
    """What a method call is called on (``x[mask]`` of ``x[mask].mean().item()``)."""
    if isinstance(expression, ast.Call) and isinstance(expression.func, ast.Attribute):
        return expression.func.value
    return None


def _contains(outer: ast.AST, inner: ast.AST) -> bool:
    return (
        outer is not inner and start_of(outer) <= start_of(inner) and end_of(inner) <= end_of(outer)
    )


def _targets(statement: ast.AST) -> list[ast.expr]:
    if isinstance(statement, ast.Assign):
        return statement.targets
    if isinstance(statement, ast.AnnAssign):
        return [statement.target]
    return []


def _order(statement: ast.AST, node: ast.AST) -> tuple[int, tuple[int, int]]:
    """When ``node`` is evaluated within ``statement``: an assignment's value before its
    targets, else in the order of the text."""
    in_target = any(t is node or _contains(t, node) for t in _targets(statement))
    return (1 if in_target else 0, start_of(node))


def _evaluated_before(statement: ast.AST, call: ast.AST) -> list[ast.AST]:
    """Expressions of ``statement`` evaluated before ``call``'s own wait: its receiver
    and what comes before it (not what encloses it)."""
    found: list[ast.AST] = []
    if isinstance(call, ast.Call):
        receiver = call.func.value if isinstance(call.func, ast.Attribute) else call.func
        found.extend(walk_own(receiver))
    here = _order(statement, call)
    for part in own_parts(statement):
        for inner in walk_own(part):
            if _contains(inner, call) or inner is call or _contains(call, inner):
                continue
            if _order(statement, inner) < here:
                found.append(inner)
    return found


def _evaluated_after(statement: ast.AST, wait: ast.expr) -> list[ast.AST]:
    """Expressions of ``statement`` evaluated after ``wait``: what encloses it and what
    comes after it."""
    found = []
    here = _order(statement, wait)
    for part in own_parts(statement):
        for inner in walk_own(part):
            if inner is wait or _contains(wait, inner):
                continue
            if _contains(inner, wait) or _order(statement, inner) > here:
                found.append(inner)
    return found


def _module_bound_names(module: ast.Module) -> set[str]:
    """Names module code binds (a def, a class, an import, an assignment): such a name
    is not the builtin it may shadow."""
    found: set[str] = set()
    for statement in module.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(statement.name)
        elif isinstance(statement, (ast.Import, ast.ImportFrom)):
            found.update((a.asname or a.name).partition(".")[0] for a in statement.names)
        else:
            found.update(
                n.id
                for n in ast.walk(statement)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            )
    return found
