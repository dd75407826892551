"""Where training steps run: training loops and Lightning ``training_step`` methods.

A training loop is a ``for``/``while`` whose body reaches ``backward()`` (directly or
through same-module calls: ``loss.backward()``, ``accelerator.backward(loss)``,
``scaler.scale(loss).backward()``, ``self.training_step(...)`` that calls one). A
``training_step`` is the method of that name on a module class; its first parameter
after ``self`` is the batch. A LightningModule optimises manually when it sets
``automatic_optimization = False`` (itself or a base in the same module) or its step
calls ``manual_backward`` / ``self.optimizers()``.
"""

from __future__ import annotations

import libcst as cst

from ddplint.analysis.step_paths import FEW_ITERATIONS
from ddplint.code.collectives.call_reach import CallReach, StepEvent
from ddplint.code.steps.forward_paths import ForwardPaths
from ddplint.code.steps.optimizer_steps import is_optimizer_step
from ddplint.code.syntax.call_graph import LocalFunctions
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import dotted_name
from ddplint.code.values.object_types import ObjectTypes

_BACKWARD = frozenset({StepEvent.BACKWARD})
_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
_MANUAL_OPTIMIZATION_CALLS = frozenset({"self.manual_backward", "self.optimizers"})


#: How many functions the search for an optimizer step inside an inner loop reads.
_STEP_SEARCH_LIMIT = 50


def few_iterations(loop: cst.For | cst.While) -> bool:
    """``for _ in range(3):`` (a unit test or warm-up): no per-step cost to speak of."""
    if not isinstance(loop, cst.For) or not isinstance(loop.iter, cst.Call):
        return False
    if dotted_name(loop.iter.func) != "range" or len(loop.iter.args) != 1:
        return False
    count = loop.iter.args[0].value
    return isinstance(count, cst.Integer) and int(count.value) <= FEW_ITERATIONS


class TrainingSteps:
    """Training loops and ``training_step`` methods of one module."""

    def __init__(
        self,
        index: ModuleIndex,
        forward_paths: ForwardPaths,
        call_reach: CallReach,
        types: ObjectTypes,
    ) -> None:
        self._index = index
        self._types = types
        self._forward_paths = forward_paths
        self._call_reach = call_reach
        self._loops: dict[cst.CSTNode, bool] = {}
        self._local: LocalFunctions | None = None

    def is_training_loop(self, loop: cst.For | cst.While) -> bool:
        """Whether the loop body reaches ``backward()``."""
        if loop not in self._loops:
            self._loops[loop] = self._call_reach.first_in(loop.body, _BACKWARD) is not None
        return self._loops[loop]

    def holds_training_loop(self, node: cst.CSTNode) -> bool:
        """Whether a training loop sits inside ``node`` (same function): an epoch loop
        or a ``run_epoch()`` helper, whose own body runs once per epoch."""
        return any(
            isinstance(inner, (cst.For, cst.While)) and self.is_training_loop(inner)
            for inner in self._index.walk_within(node)
        )

    def is_epoch_loop(self, loop: cst.For | cst.While) -> bool:
        """A loop around a training loop whose own body steps no optimizer, or whose
        inner loop (or the function it calls for one) steps the optimizer itself while
        its own body reaches no ``backward()`` beside it: its body runs once per epoch
        (``train(...); test(...); scheduler.step()``). An outer gradient-accumulation
        loop whose inner micro-batch loop only calls ``backward()`` and which calls
        ``optimizer.step()`` after it runs once per step."""
        inner: list[cst.CSTNode] = [
            node
            for node in self._index.walk_within(loop.body)
            if isinstance(node, (cst.For, cst.While)) and self.is_training_loop(node)
        ]
        if not inner:
            # ``for epoch in ...: train(epoch)`` where ``train`` holds the step loop.
            inner = [
                node
                for node in self._index.walk_within(loop.body)
                if isinstance(node, cst.Call) and self._calls_step_loop(node)
            ]
        if not inner:
            return False
        if any(self._steps_within(node) for node in inner) and not self._backward_beside(
            loop, inner
        ):
            return True
        return not any(
            isinstance(node, cst.Call)
            and is_optimizer_step(node, self._types)
            and not any(self._index.is_inside(node, i) for i in inner)
            for node in self._index.walk_within(loop.body)
        )

    def _backward_beside(self, loop: cst.For | cst.While, inner: list[cst.CSTNode]) -> bool:
        """Whether the loop's body reaches ``backward()`` outside its inner step loops
        (an RL loop that updates every pass and a policy every few): a step loop."""
        return any(
            isinstance(node, cst.Call)
            and not any(node is i or self._index.is_inside(node, i) for i in inner)
            and self._call_reach.reached(node, _BACKWARD) is not None
            for node in self._index.walk_within(loop.body)
        )

    def _steps_within(self, node: cst.CSTNode) -> bool:
        """Whether an optimizer steps inside ``node`` (a loop), or inside the function of
        the module that ``node`` (a call) runs, or one that function's own calls run."""
        if self._local is None:
            self._local = LocalFunctions(self._index)
        pending: list[cst.CSTNode] = [node]
        seen: set[int] = set()
        while pending:
            current = pending.pop()
            if id(current) in seen or len(seen) > _STEP_SEARCH_LIMIT:
                continue
            seen.add(id(current))
            calls = [current] if isinstance(current, cst.Call) else []
            calls += [n for n in self._index.walk_within(current) if isinstance(n, cst.Call)]
            for call in calls:
                if is_optimizer_step(call, self._types):
                    return True
                callee = self._local.callee(call)
                if callee is not None:
                    pending.append(callee)
        return False

    def _calls_step_loop(self, call: cst.Call) -> bool:
        """Whether ``call`` runs a function of the module that holds a training loop."""
        if self._local is None:
            self._local = LocalFunctions(self._index)
        callee = self._local.callee(call)
        return callee is not None and self.holds_training_loop(callee)

    def loop_of(self, node: cst.CSTNode) -> cst.For | cst.While | None:
        """The innermost loop (same function) whose body holds ``node``: the one a
        ``continue`` or ``break`` there leaves."""
        child = node
        for ancestor in self._index.ancestors(node):
            if isinstance(ancestor, _SCOPES):
                return None
            if isinstance(ancestor, (cst.For, cst.While)) and child is ancestor.body:
                return ancestor
            child = ancestor
        return None

    def training_loop_of(self, node: cst.CSTNode) -> cst.For | cst.While | None:
        """The innermost enclosing training loop in the same function."""
        child = node
        for ancestor in self._index.ancestors(node):
            if isinstance(ancestor, _SCOPES):
                return None
            if (
                isinstance(ancestor, (cst.For, cst.While))
                and child is ancestor.body
                and self.is_training_loop(ancestor)
            ):
                return ancestor
            child = ancestor
        return None

    def is_training_step(self, function: cst.FunctionDef | None) -> bool:
        """``training_step`` defined on a module class (LightningModule, NeMo ModelPT)."""
        if function is None or function.name.value != "training_step":
            return False
        owner = self._index.enclosing_class(function)
        return owner is not None and self._forward_paths.is_module_class(owner)

    @staticmethod
    def batch_parameter(function: cst.FunctionDef) -> str | None:
        """The batch: the first parameter after ``self``."""
        params = function.params.params
        return params[1].name.value if len(params) > 1 else None

    def uses_manual_optimization(self, function: cst.FunctionDef) -> bool:
        """Whether the module of this ``training_step`` optimises manually."""
        for node in self._index.walk_within(function.body):
            if isinstance(node, cst.Call) and dotted_name(node.func) in _MANUAL_OPTIMIZATION_CALLS:
                return True
        owner = self._index.enclosing_class(function)
        return owner is not None and self._class_sets_manual(owner, frozenset())

    def _class_sets_manual(self, cls: cst.ClassDef, seen: frozenset[str]) -> bool:
        for node in self._index.walk_within(cls.body, into_functions=True):
            if isinstance(node, cst.FunctionDef) and node.name.value == "automatic_optimization":
                return True
            if isinstance(node, (cst.Assign, cst.AnnAssign)) and _sets_automatic_off(node):
                return True
        classes = self._forward_paths.classes
        for base in cls.bases:
            name = dotted_name(base.value)
            if (
                name in classes
                and name not in seen
                and name != cls.name.value
                and self._class_sets_manual(classes[name], seen | {cls.name.value})
            ):
                return True
        return False


def _sets_automatic_off(node: cst.Assign | cst.AnnAssign) -> bool:
    """``self.automatic_optimization = False`` or a class attribute of that name."""
    if node.value is None or not (isinstance(node.value, cst.Name) and node.value.value == "False"):
        return False
    targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
    return any(
        (dotted_name(t) or "").rsplit(".", 1)[-1] == "automatic_optimization" for t in targets
    )
