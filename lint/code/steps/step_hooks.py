"""Which functions run on every training step besides ``forward``: the step hooks.

A step hook is ``training_step`` and the per-batch hooks of a module class (Lightning's
``on_train_batch_end``, ``on_before_optimizer_step`` ...), the same hooks on a callback
class (a base named ``*Callback``: Lightning ``Callback``, Hugging Face
``TrainerCallback`` with ``on_step_end`` ...), ``training_step`` / ``compute_loss`` of
a trainer class (a class or base named ``*Trainer``: Hugging Face ``Trainer``
overrides), and ``forward`` of a loss module (a module class named ``*Loss`` /
``*Criterion``). Every function of the module those call is on the step path too, and
so is every function of the module that the body of a training loop calls
(``compute_loss(...)`` inside ``for batch in loader: ... loss.backward()``).
Validation, test and epoch hooks are not step hooks.
"""

from __future__ import annotations

import re

import libcst as cst

from ddplint.analysis.step_paths import HF_STEP_HOOKS, LIGHTNING_BATCH_HOOKS, TRAINER_STEP_METHODS
from ddplint.code.steps.forward_paths import ForwardPaths, PathReason
from ddplint.code.steps.sparse_conditions import under_sparse_condition
from ddplint.code.steps.step_waits import StepWaits
from ddplint.code.steps.training_steps import TrainingSteps, few_iterations
from ddplint.code.syntax.call_graph import LocalFunctions
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import ImportTable, dotted_name

_CALLBACK_NAME = re.compile(r"Callback$")
_TRAINER_NAME = re.compile(r"Trainer$")
_LOSS_NAME = re.compile(r"(Loss|Criterion)$")


class StepHooks:
    """The step hooks of one module and the functions they reach."""

    def __init__(
        self,
        index: ModuleIndex,
        forward_paths: ForwardPaths,
        names: ImportTable,
        training_steps: TrainingSteps,
        waits: StepWaits | None = None,
    ) -> None:
        self._index = index
        self._waits = waits
        self._forward_paths = forward_paths
        self._names = names
        self._training_steps = training_steps
        self.functions = forward_paths.reach(self._entries(), self._runs_every_step)
        self._loop_helpers: dict[cst.FunctionDef, PathReason] | None = None

    def reason_for(self, function: cst.FunctionDef | None) -> PathReason | None:
        """Why ``function`` runs every training step, or None."""
        if function is None:
            return None
        found = self.functions.get(function)
        if found is None:
            found = self.loop_helpers().get(function)
        return found

    def loop_helpers(self) -> dict[cst.FunctionDef, PathReason]:
        """Functions of the module that training-loop bodies call, and what they call
        (computed on first use: it asks which loops reach ``backward()``)."""
        if self._loop_helpers is None:
            local = LocalFunctions(self._index)
            entries: list[tuple[cst.FunctionDef, cst.ClassDef | None, PathReason]] = []
            loops: list[cst.For | cst.While] = [
                *self._index.nodes(cst.For),
                *self._index.nodes(cst.While),
            ]
            for loop in loops:
                if few_iterations(loop) or not self._training_steps.is_training_loop(loop):
                    continue
                if self._training_steps.is_epoch_loop(loop):
                    continue  # an epoch loop: its helpers run once per epoch
                caller = self._index.enclosing_function(loop)
                for node in self._index.walk_within(loop.body):
                    if not isinstance(node, cst.Call):
                        continue
                    callee = local.callee(node)
                    if (
                        callee is not None
                        and callee is not caller
                        and self._runs_every_step(node, callee)
                    ):
                        label = local.label(callee)
                        reason = (
                            PathReason(local.label(caller), (label,))
                            if caller is not None
                            else PathReason(label, ())
                        )
                        entries.append((callee, self._index.enclosing_class(callee), reason))
            self._loop_helpers = self._forward_paths.reach(entries, self._runs_every_step)
        return self._loop_helpers

    def _runs_every_step(self, call: cst.Call, callee: cst.FunctionDef) -> bool:
        """Whether a call on the step path runs its callee every step: not under a sparse
        condition, not a function that holds a training loop itself (whatever the callee
        is called: what decides is where the call runs)."""
        if self._training_steps.holds_training_loop(callee):
            return False  # ``run_epoch()``: its loop body is found as a training loop
        if self._waits is not None and self._waits.occasional(call) is not None:
            return False
        return not under_sparse_condition(self._index, call)

    def _entries(self) -> list[tuple[cst.FunctionDef, cst.ClassDef | None, PathReason]]:
        entries: list[tuple[cst.FunctionDef, cst.ClassDef | None, PathReason]] = []
        for owner in self._forward_paths.classes.values():
            wanted = self._step_methods(owner, frozenset())
            for name, method in self._forward_paths.methods_of(owner).items():
                if name in wanted:
                    entries.append((method, owner, PathReason(f"{owner.name.value}.{name}", ())))
        return entries

    def _step_methods(self, cls: cst.ClassDef, seen: frozenset[str]) -> frozenset[str]:
        """The method names of ``cls`` that run every training step."""
        wanted: set[str] = set()
        if self._forward_paths.is_module_class(cls):
            wanted |= LIGHTNING_BATCH_HOOKS | {"training_step"}
            if _LOSS_NAME.search(cls.name.value):
                wanted.add("forward")
        if _TRAINER_NAME.search(cls.name.value):
            wanted |= TRAINER_STEP_METHODS
        for base in cls.bases:
            spelled = dotted_name(base.value) or ""
            qualified = self._names.qualified_name(base.value) or spelled
            last = qualified.rsplit(".", 1)[-1]
            if _CALLBACK_NAME.search(last):
                wanted |= LIGHTNING_BATCH_HOOKS | HF_STEP_HOOKS
            if _TRAINER_NAME.search(last):
                wanted |= TRAINER_STEP_METHODS
            local = self._forward_paths.classes.get(spelled)
            if local is not None and spelled not in seen and local is not cls:
                wanted |= self._step_methods(local, seen | {cls.name.value})
        return frozenset(wanted)
