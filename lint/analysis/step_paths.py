"""Which code runs on every training step, and why: a question to the analysis core.

``StepPaths(analysis).reason(call)``: why ``call`` runs on every training step (a
``StepPath``: the entry and the chain of calls that reach it, for messages), or None.
The step path is

- the body of a training loop (``batches.training_loops``: a loop whose body runs a
  backward, itself or through a local function that holds no training loop of its own;
  an epoch loop around one, or one that calls ``train_one_epoch()``, is not; one whose
  own body runs a backward beside an inner loop that does is), unless
  the loop is a short test or warm-up loop (``for _ in range(3)``), the call sits in an
  evaluation loop nested in it and run with autograd off (``with torch.no_grad(): for
  batch in val_loader: ...``), or once per run of the loop (``step_frequency.once_per_run``:
  on a way that leaves the loop before its next pass, ``if step >= total: evaluate();
  return``, or under a local flag the guarded code turns off, ``if first: ...; first =
  False``);
- the step methods of a class, decided by what the class *is* (its bases: the object
  catalogue through ``objects.class_kinds``, a class of the module, a project class),
  never by its name: ``forward``, ``training_step`` and the per-batch hooks of a module
  class (``nn.Module``, a LightningModule, NeMo's ``ModelPT``); the per-batch hooks of a
  Lightning or Hugging Face callback; ``training_step`` / ``compute_loss`` of a Hugging
  Face trainer subclass; with ``evaluation=True`` also a module's ``validation_step`` /
  ``test_step`` / ``predict_step``;
- every function of the module those run through calls (``self.helper()``,
  ``helper()``), the chain kept; a call that runs only now and then
  (``step_frequency``) or a function that holds a training loop itself (its loop body is
  the step) is not followed.

A call on the path still does not run every step when it runs only now and then (on an
error, a periodic test, once under a flag it sets, an export, a single-process run, an
option off by default, in evaluation mode (a module's ``self.training`` false):
``step_frequency``, which also reads a conditional expression or ``and`` around the
call), only while a cache of the
object is empty (``host_waits.filled_once``), or in an arm no run takes (``if not
USE_WANDB:`` with ``USE_WANDB = True``: ``literal_values``). A file that runs in no
training step (``in_training=False``: a test, an export script) has no step path, nor
has a module that only programs starting no process group run (the project's
``runs_alone``: a script with no ``init_process_group``, DDP wrap, ``Accelerator``,
Lightning ``Trainer`` ... in it or in the project modules it imports): no peer shares
its steps. A module no program of the project runs (a library's) is unknown, and keeps
its step path.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ddplint.analysis.accumulation_loops import AccumulationLoops, own_code
from ddplint.analysis.api import MODULE_STEP_METHODS
from ddplint.analysis.batches import Loop, training_loops
from ddplint.analysis.control_flow import COMPREHENSIONS, SCOPE_TYPES, own_nodes
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.host_waits import HostWaits
from ddplint.analysis.names import dotted_name
from ddplint.analysis.object_kinds import MODULE_KINDS
from ddplint.analysis.step_frequency import StepFrequency

#: Methods of a module class that run every evaluation step.
MODULE_EVALUATION_METHODS = frozenset({"validation_step", "test_step", "predict_step"})
#: Lightning hooks that run once per training batch (module or callback).
LIGHTNING_BATCH_HOOKS = frozenset(
    {
        "on_train_batch_start",
        "on_train_batch_end",
        "on_before_backward",
        "on_after_backward",
        "on_before_optimizer_step",
        "on_before_zero_grad",
    }
)
#: Hugging Face ``TrainerCallback`` hooks that run once per optimizer step or substep.
HF_STEP_HOOKS = frozenset(
    {"on_step_begin", "on_step_end", "on_substep_end", "on_pre_optimizer_step", "on_optimizer_step"}
)
#: Methods of a Hugging Face trainer subclass that run every step.
TRAINER_STEP_METHODS = frozenset({"training_step", "compute_loss"})
_LIGHTNING_PACKAGES = ("lightning.pytorch", "pytorch_lightning", "lightning")
#: Library callback classes: Lightning's ``Callback`` (and its callbacks package),
#: Hugging Face's ``TrainerCallback``.
_CALLBACK_CLASSES = frozenset(
    {
        *(f"{package}.Callback" for package in _LIGHTNING_PACKAGES),
        *(f"{package}.callbacks.Callback" for package in _LIGHTNING_PACKAGES),
        "transformers.TrainerCallback",
        "transformers.trainer_callback.TrainerCallback",
    }
)
_CALLBACK_PACKAGES = tuple(f"{package}.callbacks." for package in _LIGHTNING_PACKAGES)
#: The Hugging Face trainers (``transformers.Trainer``, ``Seq2SeqTrainer``, TRL's).
_HF_TRAINERS = re.compile(r"^(?:transformers|trl)\.(?:[a-z_0-9]+\.)*\w*Trainer$")
#: Context managers that turn autograd off: a loop run under one evaluates.
NO_GRAD_CONTEXTS = frozenset({"torch.no_grad", "torch.inference_mode"})
#: A loop of at most this many constant turns is a test or a warm-up, not training.
FEW_ITERATIONS = 10
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
Function = ast.FunctionDef | ast.AsyncFunctionDef
#: How a training loop is named in messages.
TRAINING_LOOP = "a training loop that calls backward()"


@dataclass(frozen=True)
class StepPath:
    """Why code runs every step: the entry (``Model.forward``, or the training loop) and
    the chain of calls from it; ``loop`` is the training loop whose body holds it."""

    entry: str
    chain: tuple[str, ...] = ()
    loop: Loop | None = None
    #: The entry is a module class's ``forward`` (which also runs at inference).
    forward: bool = False

    def describe(self) -> str:
        if self.loop is not None and not self.chain:
            return TRAINING_LOOP
        if not self.chain:
            return f"`{self.entry}`"
        return f"`{self.chain[-1]}` (called from `{self.entry}`)"


def host_waits_of(analysis: ModuleAnalysis) -> HostWaits:
    """The host-wait questions of the analysed module, on the analysis's own nodes,
    names and graphs (one walk and one graph per scope for both)."""
    return HostWaits(analysis.module, analysis.nodes, analysis.names, analysis.graphs)


class StepPaths:
    """The step path of one module."""

    def __init__(
        self,
        analysis: ModuleAnalysis,
        *,
        in_training: bool = True,
        waits: HostWaits | None = None,
    ) -> None:
        self._analysis = analysis
        self._in_training = in_training
        self.waits = waits if waits is not None else host_waits_of(analysis)
        self.frequency = StepFrequency(
            self.waits,
            analysis.project,
            analysis.fallback_defaults,
            self._module_method,
            analysis.single_process,
            analysis.callee_of,
        )
        self._classes = {c.name: c for c in analysis.nodes.of_type(ast.ClassDef)}
        self._helpers = self._step_helpers()
        self._accumulation = AccumulationLoops(analysis)
        self._loops: dict[int, list[Loop]] = {}
        self._holders: dict[int, bool] = {}
        self._never: set[int] | None = None
        self._functions: dict[bool, dict[Function, StepPath]] = {}

    def _step_helpers(self) -> frozenset[str]:
        """The local functions that run a backward with no training loop of their own
        (``train_step(batch)``): a loop that calls one walks batches. A loop that calls
        ``train_one_epoch()`` walks epochs or data files."""
        every = frozenset(self._analysis.backward_functions)
        found = set()
        for name in every:
            definition = self._analysis.local_function(name)
            if definition is not None and not training_loops(definition, every):
                found.add(name)
        return frozenset(found)

    # -- the question --------------------------------------------------------------------

    def reason(self, call: ast.Call, *, evaluation: bool = False) -> StepPath | None:
        """Why ``call`` runs on every training step (with ``evaluation``, every step of
        training or evaluation), or None."""
        if not self._in_training or self._analysis.project.runs_alone():
            return None
        scope = self.function_of(call)
        found: StepPath | None = None
        if scope is not None:
            found = self.functions(evaluation).get(scope)
        if found is None:
            loop = self.training_loop_of(call)
            found = StepPath(TRAINING_LOOP, loop=loop) if loop is not None else None
        if found is None or self.occasional(call):
            return None
        return found

    def occasional(self, call: ast.Call) -> bool:
        """``call`` runs only now and then, only on the first step, or never."""
        if self.frequency.occasional(call) is not None or self.waits.filled_once(call):
            return True
        found = self.waits.node_of(call, module_code=True)
        if found is None:
            found = self.waits.inline_node(call)  # ``[x.item() for x in losses]``
            if found is None:
                return False
            if self.frequency.occasional_node(*found) is not None:
                return True
        statement = found[1].statement
        if statement is not None and self.frequency.occasional_within(
            call, statement, found[0].scope
        ):
            return True
        return id(statement) in self._never_run()

    def functions(self, evaluation: bool = False) -> dict[Function, StepPath]:
        """The functions that run every step, each with why."""
        found = self._functions.get(evaluation)
        if found is None:
            entries = [*self._method_entries(evaluation), *self._loop_entries()]
            # a function a step hook or a loop reaches is on the step path through it,
            # whether or not a ``forward`` reaches it too
            entries.sort(key=lambda entry: entry[1].forward)
            found = self._functions[evaluation] = self._reach(entries)
        return found

    def training_loop_of(self, node: ast.AST) -> Loop | None:
        """The training loop of ``node``'s own function whose every turn runs it (not a
        short test loop, not an evaluation loop without autograd nested in it)."""
        scope = self.function_of(node) or self._analysis.module
        for loop in self._training_loops(scope):
            inside = _path_in(loop, node)
            if (
                inside is not None
                and not _few_iterations(loop)
                and not self._evaluates(inside)
                and not (isinstance(node, ast.Call) and self.frequency.once_per_run(node, loop))
            ):
                return loop
        return None

    def function_of(self, node: ast.AST) -> Function | None:
        """The function whose own code evaluates ``node`` (comprehensions run inline)."""
        scope: ast.AST | None = (
            self._analysis.nodes.call_scopes.get(id(node))
            if isinstance(node, ast.Call)
            else self._analysis.nodes.scope_of.get(node)
        )
        while scope is not None and not isinstance(scope, (*_FUNCTIONS, ast.Module)):
            if isinstance(scope, (ast.Lambda, ast.ClassDef)):
                return None
            scope = self._analysis.nodes.scope_of.get(scope)
        return scope if isinstance(scope, _FUNCTIONS) else None

    def _module_method(self, scope: ast.AST) -> bool:
        """``scope`` is a method of a module class (``nn.Module``, a LightningModule)."""
        owner = self._analysis.nodes.scope_of.get(scope)
        return (
            isinstance(owner, ast.ClassDef)
            and self._analysis.objects.class_kinds.kind(owner) in MODULE_KINDS
        )

    # -- entries -------------------------------------------------------------------------

    def _method_entries(self, evaluation: bool) -> Iterator[tuple[Function, StepPath]]:
        for cls in self._classes.values():
            wanted = self._step_methods(cls, evaluation, frozenset())
            for name, method in self._methods_of(cls, frozenset()).items():
                if name in wanted:
                    yield method, StepPath(f"{cls.name}.{name}", forward=name == "forward")

    def _step_methods(
        self, cls: ast.ClassDef, evaluation: bool, seen: frozenset[str]
    ) -> frozenset[str]:
        """The names of ``cls``'s methods that run every step, by what its bases are."""
        wanted: set[str] = set()
        if self._analysis.objects.class_kinds.kind(cls) in MODULE_KINDS:
            wanted |= MODULE_STEP_METHODS | LIGHTNING_BATCH_HOOKS
            if evaluation:
                wanted |= MODULE_EVALUATION_METHODS
        for base in cls.bases:
            resolved = self._analysis.names.resolve(base)
            if resolved is not None and (
                resolved in _CALLBACK_CLASSES or resolved.startswith(_CALLBACK_PACKAGES)
            ):
                wanted |= LIGHTNING_BATCH_HOOKS | HF_STEP_HOOKS
            if resolved is not None and _HF_TRAINERS.match(resolved):
                wanted |= TRAINER_STEP_METHODS
            local = self._classes.get(dotted_name(base) or "")
            if local is not None and local.name not in seen and local is not cls:
                wanted |= self._step_methods(local, evaluation, seen | {cls.name})
        return frozenset(wanted)

    def _methods_of(self, cls: ast.ClassDef, seen: frozenset[str]) -> dict[str, Function]:
        """``cls``'s methods by name, with those it inherits from classes of the module."""
        found: dict[str, Function] = {}
        for base in reversed(cls.bases):
            local = self._classes.get(dotted_name(base) or "")
            if local is not None and local.name not in seen and local is not cls:
                found.update(self._methods_of(local, seen | {cls.name}))
        found.update({s.name: s for s in cls.body if isinstance(s, _FUNCTIONS)})
        return found

    def _loop_entries(self) -> Iterator[tuple[Function, StepPath]]:
        """The local functions a training loop's body calls every turn."""
        for scope in (self._analysis.module, *self._analysis.nodes.functions()):
            for loop in self._training_loops(scope):
                if _few_iterations(loop):
                    continue
                caller = self._label(scope) if isinstance(scope, _FUNCTIONS) else None
                for call in _calls_in(loop.body):
                    if self._evaluates(_path_in(loop, call) or []) or self.frequency.once_per_run(
                        call, loop
                    ):
                        continue
                    callee = self._callee(call, scope)
                    if callee is None or callee is scope or not self._follows(call, callee):
                        continue
                    label = self._label(callee)
                    yield (
                        callee,
                        (StepPath(caller, (label,)) if caller is not None else StepPath(label)),
                    )

    # -- reach ---------------------------------------------------------------------------

    def _reach(self, entries: list[tuple[Function, StepPath]]) -> dict[Function, StepPath]:
        reached: dict[Function, StepPath] = {}
        work = list(reversed(entries))
        while work:
            function, path = work.pop()
            if function in reached:
                continue
            reached[function] = path
            for call in self._analysis.nodes.calls_by_scope.get(function, []):
                callee = self._callee(call, function)
                if callee is None or callee in reached or not self._follows(call, callee):
                    continue
                chain = (*path.chain, self._label(callee))
                work.append((callee, StepPath(path.entry, chain, forward=path.forward)))
        return reached

    def _follows(self, call: ast.Call, callee: Function) -> bool:
        """Whether ``call`` runs ``callee`` every step: not now and then, and ``callee``
        holds no training loop of its own (``run_epoch()``: its loop body is the step)."""
        if self._holds_training_loop(callee):
            return False
        return self.frequency.occasional(call) is None

    def _callee(self, call: ast.Call, caller: ast.AST) -> Function | None:
        name = dotted_name(call.func)
        if name is None:
            return None
        if name.startswith("self.") and name.count(".") == 1:
            owner = self._owner(caller)
            method = self._methods_of(owner, frozenset()).get(name[5:]) if owner else None
            return method
        if "." in name:
            return None
        found = self._analysis.local_function(name)
        return found if found is not None and self._owner(found) is None else None

    def _owner(self, scope: ast.AST) -> ast.ClassDef | None:
        """The class whose method ``scope`` is (or is nested in)."""
        current: ast.AST | None = scope
        while current is not None and not isinstance(current, ast.Module):
            parent = self._analysis.nodes.scope_of.get(current)
            if isinstance(parent, ast.ClassDef):
                return parent
            current = parent
        return None

    def _label(self, function: Function) -> str:
        owner = self._owner(function)
        return f"{owner.name}.{function.name}" if owner is not None else function.name

    # -- loops ---------------------------------------------------------------------------

    def _training_loops(self, scope: ast.AST) -> list[Loop]:
        """``batches.training_loops``, and a loop whose own body runs a backward beside
        an inner loop that also does (an outer step with inner perturbation steps) or
        steps an optimizer after inner loops that run the backward (``accumulation_loops``)."""
        found = self._loops.get(id(scope))
        if found is None:
            found = training_loops(scope, self._helpers)
            found += [
                loop
                for loop in own_nodes(scope)
                if isinstance(loop, _LOOPS)
                and loop not in found
                and (self._steps_beside(loop) or self._accumulation.steps_each_turn(loop, scope))
            ]
            self._loops[id(scope)] = found
        return found

    def _steps_beside(self, loop: Loop) -> bool:
        """The loop's body runs a backward outside its inner loops."""
        return any(
            self._analysis.runs_backward(node, self._helpers) for node in own_code(loop.body)
        )

    def _holds_training_loop(self, function: Function) -> bool:
        found = self._holders.get(id(function))
        if found is None:
            found = self._holders[id(function)] = bool(self._training_loops(function))
        return found

    def _evaluates(self, inside: list[ast.AST]) -> bool:
        """A loop nested in the training loop and run with autograd off, on the way."""
        nested = any(isinstance(n, (ast.For, ast.AsyncFor, ast.While)) for n in inside)
        return nested and any(
            isinstance(n, (ast.With, ast.AsyncWith))
            and any(
                isinstance(item.context_expr, ast.Call)
                and self._analysis.names.resolve(item.context_expr.func) in NO_GRAD_CONTEXTS
                for item in n.items
            )
            for n in inside
        )

    # -- arms no run takes ---------------------------------------------------------------

    def _never_run(self) -> set[int]:
        if self._never is None:
            self._never = {
                id(node)
                for arm in self._analysis.literal_values.never_taken()
                for statement in arm
                for node in ast.walk(statement)
                if isinstance(node, ast.stmt)
            }
        return self._never


def _path_in(loop: Loop, node: ast.AST) -> list[ast.AST] | None:
    """The nodes between ``loop``'s body and ``node`` (its own code), None when the body
    does not hold it."""
    pending: list[tuple[ast.AST, list[ast.AST]]] = [(s, []) for s in loop.body]
    while pending:
        current, way = pending.pop()
        if current is node:
            return way
        if isinstance(current, SCOPE_TYPES) and not isinstance(current, COMPREHENSIONS):
            continue
        pending.extend((child, [*way, current]) for child in ast.iter_child_nodes(current))
    return None


def _few_iterations(loop: Loop) -> bool:
    """``for _ in range(3):`` (a unit test or warm-up): no per-step cost to speak of."""
    if not isinstance(loop, ast.For) or not isinstance(loop.iter, ast.Call):
        return False
    iterable = loop.iter
    if dotted_name(iterable.func) != "range" or len(iterable.args) != 1:
        return False
    count = iterable.args[0]
    return (
        isinstance(count, ast.Constant)
        and isinstance(count.value, int)
        and count.value <= FEW_ITERATIONS
    )


def _calls_in(statements: list[ast.stmt]) -> Iterator[ast.Call]:
    for statement in statements:
        if isinstance(statement, (*_FUNCTIONS, ast.ClassDef)):
            continue
        for node in own_nodes(statement):
            if isinstance(node, ast.Call):
                yield node
