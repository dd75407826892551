"""Host synchronisations on the training-step path.

Two kinds: a device->host read of a tensor (``t.item()``, ``t.cpu()``, ``t.tolist()``,
``t.numpy()``, ``t.to("cpu")``, ``float(t)`` / ``int(t)`` / ``bool(t)``) and a cache
release (``torch.cuda.empty_cache()`` and kin). Each is found in a step hook
(``step_hooks``) or the body of a training loop, with the rank guard that holds it (if
any). Left out, because they are not per-step costs:

- a read under a *sparse* condition: an ``if`` of the same function whose test takes a
  modulo (``step % log_every == 0``), compares a step / batch counter for equality
  (``batch_idx == 0``), draws a random number (``random.random() < 0.002``), or names
  logging / debugging (``if self.should_log:``);
- a call that runs only while a cache of the object is empty (``if self.table is
  None:``), and a read after an earlier read of the same pass with no device work
  between (the queue is already drained): ``analysis.host_waits`` answers both;
- a receiver that is already on the host: a value made by ``numpy`` / ``math``, a
  tensor created without ``device=`` (``torch.tensor(3.0)``), a result of an earlier
  read in the same expression (``x.cpu().numpy()`` is one sync, reported at ``.cpu()``);
- ``float(x)`` / ``int(x)`` where nothing says ``x`` is a tensor (a Python number);
- code that runs once per epoch (the body of an epoch loop around the step loop, a
  ``run_epoch()`` helper outside its loop) or per evaluation batch (a loop nested in
  the training loop and run under ``torch.no_grad()`` / ``torch.inference_mode()``),
  short test loops, test files;
- a call that runs only now and then: on an error, on the rare way of a periodic test,
  while exporting, in a single-process run (``analysis.step_frequency`` answers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from ddplint.analysis.device_queue import ACCELERATOR_GETTERS
from ddplint.analysis.step_paths import NO_GRAD_CONTEXTS
from ddplint.analysis.step_syncs import EMPTY_CACHE_FUNCTIONS, SyncKind
from ddplint.code.ranks.one_process import OneProcessPaths
from ddplint.code.ranks.rank_reachability import RankGuard, RankReachability
from ddplint.code.steps.forward_paths import PathReason
from ddplint.code.steps.sparse_conditions import last_name, under_sparse_condition
from ddplint.code.steps.step_hooks import StepHooks
from ddplint.code.steps.step_waits import StepWaits
from ddplint.code.steps.training_steps import TrainingSteps, few_iterations
from ddplint.code.syntax.device_values import is_cpu_device
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import ImportTable, dotted_name
from ddplint.code.values.decided_values import DecidedValues


@dataclass(frozen=True)
class HostSync:
    """One host synchronisation on the step path: the call, its kind, how it is
    spelled for messages, where it runs, and the rank guard that holds it."""

    call: cst.Call
    kind: SyncKind
    spelled: str
    reason: PathReason
    rank_guard: RankGuard | None


#: Tensor methods that copy the value to the host (and so wait for the device).
READ_METHODS = frozenset({"item", "cpu", "tolist", "numpy"})
#: Builtins that read a tensor's value on the host when given one.
READ_BUILTINS = frozenset({"float", "int", "bool"})
#: Tensor methods whose result is a (device) tensor: evidence that ``float(x)`` reads one.
TENSOR_RESULT_METHODS = frozenset(
    {
        "sum",
        "mean",
        "max",
        "min",
        "norm",
        "std",
        "var",
        "detach",
        "argmax",
        "argmin",
        "abs",
        "float",
        "double",
        "half",
        "count_nonzero",
        "eq",
        "ne",
        "all",
        "any",
        "clone",
        "exp",
        "sqrt",
        "square",
    }
)
#: ``torch`` factories that build a tensor on the CPU unless ``device=`` says otherwise.
TORCH_FACTORIES = frozenset(
    {
        "tensor",
        "as_tensor",
        "from_numpy",
        "zeros",
        "ones",
        "empty",
        "full",
        "arange",
        "rand",
        "randn",
        "randint",
        "linspace",
        "Tensor",
        "LongTensor",
        "FloatTensor",
    }
)
#: Host-side modules: what they return is a Python or NumPy value.
HOST_MODULES = ("numpy.", "math.", "statistics.", "random.")
#: Callables whose result is a loss tensor: ``self.criterion(out, y)``, ``loss_fn(...)``.
_LOSS_CALLABLE = re.compile(r"(loss|criterion)", re.I)
#: Collectives that leave the same value on every rank (their first argument, in place).
_REDUCING_COLLECTIVES = frozenset({"all_reduce", "broadcast"})
#: Longest call text shown whole in a message.
_SHOWN_LENGTH = 60
#: How far a value is followed through names and method chains.
_MAX_DEPTH = 4


class HostSyncs:
    """Host synchronisations of one module that run every training step."""

    def __init__(
        self,
        index: ModuleIndex,
        names: ImportTable,
        step_hooks: StepHooks,
        training_steps: TrainingSteps,
        rank_reachability: RankReachability,
        waits: StepWaits | None = None,
        *,
        in_training: bool = True,
        one_process: OneProcessPaths | None = None,
        decided: DecidedValues | None = None,
    ) -> None:
        self._index = index
        self._names = names
        self._hooks = step_hooks
        self._one_process = one_process
        self._decided = decided
        self._training_steps = training_steps
        self._ranks = rank_reachability
        self._waits = waits
        self._bindings: dict[cst.FunctionDef, dict[str, list[cst.BaseExpression]]] = {}
        # A file that runs in no training step (a test, an export) has no per-step cost.
        self.found = self._find() if in_training else []

    def _find(self) -> list[HostSync]:
        found = []
        for call in self._index.nodes(cst.Call):
            kind = self._kind(call)
            if kind is None or under_sparse_condition(self._index, call):
                continue
            function = self._index.enclosing_function(call)
            reason = self._hooks.reason_for(function)
            loop = self._training_steps.training_loop_of(call)
            if reason is None and loop is not None and self._per_step_in(call, loop):
                reason = PathReason("a training loop that calls backward()", ())
            if reason is None or self._costs_nothing(call, kind) or self._alone(call):
                continue
            found.append(
                HostSync(call, kind, self._spelled(call), reason, self._ranks.guard_of(call))
            )
        return found

    def _alone(self, call: cst.Call) -> bool:
        """Runs only in a single-process job (no peer waits on it), or never: in an arm
        literal values close (``if not USE_WANDB:`` with ``USE_WANDB = True``)."""
        if self._decided is not None and self._decided.never_runs(call):
            return True
        return self._one_process is not None and self._one_process.holds(call)

    def _costs_nothing(self, call: cst.Call, kind: SyncKind) -> bool:
        """Runs only while a cache is empty (the first step) or only now and then (on an
        error, a periodic test, an export, a single-process run), or a read whose queue
        an earlier read in the same pass already drained."""
        if self._waits is None:
            return False
        if self._waits.filled_once(call) or self._waits.occasional(call) is not None:
            return True
        return kind is SyncKind.READ and self._waits.queue_drained(call)

    def _per_step_in(self, call: cst.Call, loop: cst.For | cst.While) -> bool:
        """Whether ``call`` runs once per step of the training loop ``loop``: not a short
        test loop, not an epoch loop around the step loop, not inside an evaluation loop
        nested in it (a loop that steps nothing, run with autograd off: ``with
        torch.no_grad(): for batch in loader: ...``)."""
        if few_iterations(loop) or self._training_steps.is_epoch_loop(loop):
            return False
        nested_loop = without_grad = False
        for ancestor in self._index.ancestors(call):
            if ancestor is loop:
                return not (nested_loop and without_grad)
            if isinstance(ancestor, (cst.For, cst.While)):
                nested_loop = True
            elif isinstance(ancestor, cst.With) and any(
                isinstance(item.item, cst.Call)
                and self._names.qualified_name(item.item.func) in NO_GRAD_CONTEXTS
                for item in ancestor.items
            ):
                without_grad = True
        return True

    def _spelled(self, call: cst.Call) -> str:
        """The call as written on one line, shortened: ``float(loss)``, ``x.item()``."""
        text = " ".join(self._index.module.code_for_node(call).split())
        if len(text) <= _SHOWN_LENGTH:
            return text
        return " ".join(self._index.module.code_for_node(call.func).split()) + "(...)"

    # -- what the call is -----------------------------------------------------------

    def _kind(self, call: cst.Call) -> SyncKind | None:
        func = call.func
        if self._names.qualified_name(func) in EMPTY_CACHE_FUNCTIONS:
            return SyncKind.EMPTY_CACHE
        if isinstance(func, cst.Attribute) and func.attr.value == "empty_cache":
            receiver = func.value
            if (
                isinstance(receiver, cst.Call)
                and self._names.qualified_name(receiver.func) in ACCELERATOR_GETTERS
            ):
                return SyncKind.EMPTY_CACHE
            return None
        if isinstance(func, cst.Attribute) and self._is_read_method(call, func):
            if self._on_host(func.value) or self._collective_decision(call, func.value):
                return None
            if self._waits is not None and self._waits.read_on_host(call):
                return None
            return SyncKind.READ
        if (
            isinstance(func, cst.Name)
            and func.value in READ_BUILTINS
            and len(call.args) == 1
            and call.args[0].keyword is None
            and call.args[0].star == ""
            and self._is_tensor(call.args[0].value)
        ):
            return SyncKind.READ
        return None

    def _collective_decision(self, call: cst.Call, receiver: cst.BaseExpression) -> bool:
        """``dist.all_reduce(flag, MAX)`` then ``if flag.item():``: every rank reads the
        agreed flag to take the same branch (the collective skip DDP204 asks for); the
        read is the decision itself, not avoidable overhead."""
        if not isinstance(receiver, cst.Name):
            return False
        branch = self._index.enclosing(call, cst.If, cst.While)
        if not isinstance(branch, (cst.If, cst.While)) or not self._index.is_inside(
            call, branch.test
        ):
            return False
        function = self._index.enclosing_function(call)
        scope = function if function is not None else self._index.module
        return any(
            isinstance(node, cst.Call)
            and last_name(node.func) in _REDUCING_COLLECTIVES
            and node.args
            and isinstance(node.args[0].value, cst.Name)
            and node.args[0].value.value == receiver.value
            for node in self._index.walk_within(scope)
        )

    @staticmethod
    def _is_read_method(call: cst.Call, func: cst.Attribute) -> bool:
        method = func.attr.value
        if method in READ_METHODS:
            return not call.args
        if method == "to" and call.args:
            first = call.args[0]
            value = first.value
            return (first.keyword is None or first.keyword.value == "device") and (
                isinstance(value, cst.SimpleString) and value.value.strip("'\"") == "cpu"
            )
        return False

    def _on_host(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """Whether ``expr`` is already a host value (nothing to wait for)."""
        if depth > _MAX_DEPTH:
            return False
        if isinstance(expr, (cst.Integer, cst.Float, cst.List, cst.Tuple, cst.SimpleString)):
            return True
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value in READ_METHODS:
                return True  # the earlier read is the sync
            if self._made_on_host(expr):
                return True
            if isinstance(func, cst.Attribute):
                return self._on_host(func.value, depth + 1)
            return False
        if isinstance(expr, cst.Subscript):
            return self._on_host(expr.value, depth + 1)
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Call):
            return self._on_host(expr.value, depth + 1)
        if isinstance(expr, cst.Name):
            values = self._bound(expr)
            return bool(values) and all(self._on_host(v, depth + 1) for v in values)
        return False

    def _made_on_host(self, call: cst.Call) -> bool:
        name = self._names.qualified_name(call.func) or ""
        if name.startswith(HOST_MODULES) or name == "len":
            return True
        if name.startswith("torch.") and name.rsplit(".", 1)[-1] in TORCH_FACTORIES:
            device = next((a for a in call.args if a.keyword and a.keyword.value == "device"), None)
            if device is None or is_cpu_device(device.value, self._names):
                return True
            if isinstance(device.value, cst.Name):
                values = self._bound(device.value)
                return bool(values) and all(is_cpu_device(v, self._names) for v in values)
            return False
        return False

    def _is_tensor(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """Whether something says ``expr`` is a (possibly device) tensor."""
        if depth > _MAX_DEPTH or self._on_host(expr):
            return False
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value in TENSOR_RESULT_METHODS:
                return True
            name = self._names.qualified_name(func) or dotted_name(func) or ""
            if name.startswith("torch.") and not name.startswith(
                ("torch.cuda.", "torch.distributed.")
            ):
                return True
            return bool(_LOSS_CALLABLE.search(name.rsplit(".", 1)[-1]))
        if isinstance(expr, cst.Name):
            return any(self._is_tensor(v, depth + 1) for v in self._bound(expr))
        return False

    def _bound(self, name: cst.Name) -> list[cst.BaseExpression]:
        """The values assigned to ``name`` in its function (plain ``name = value``)."""
        function = self._index.enclosing_function(name)
        if function is None:
            return []
        if function not in self._bindings:
            table: dict[str, list[cst.BaseExpression]] = {}
            for node in self._index.walk_within(function):
                if isinstance(node, cst.Assign):
                    for target in node.targets:
                        if isinstance(target.target, cst.Name):
                            table.setdefault(target.target.value, []).append(node.value)
                elif (
                    isinstance(node, cst.AnnAssign)
                    and node.value is not None
                    and isinstance(node.target, cst.Name)
                ):
                    table.setdefault(node.target.value, []).append(node.value)
            self._bindings[function] = table
        return self._bindings[function].get(name.value, [])
