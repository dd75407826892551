"""Where this rank's own batch enters a function: the seeds of a batch view.

The divergence analysis counts an unknown value as uniform; the questions that ask
whether a decision reads this rank's *data* (a stop flag set on a NaN loss, a skip
flag broadcast from one rank) ask a view of it seeded here as well
(``ModuleAnalysis.batch_view``):

- the batch (and outputs) a LightningModule's step methods and per-batch hooks are
  handed, by position (``training_step(self, batch, batch_idx)``,
  ``on_train_batch_end(self, outputs, batch, batch_idx)``);
- the items of a training loop: a ``for`` loop whose own body runs ``x.backward(...)``
  (itself, or through a call of a local function that does: ``train_step(batch)``) and
  holds no inner such loop (an epoch loop around one walks epochs), its ``enumerate``
  counter left out.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ddplint.analysis.control_flow import own_nodes
from ddplint.analysis.names import dotted_name

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_LOOPS = (ast.For, ast.AsyncFor)
_DEFINITIONS = (*_FUNCTIONS, ast.ClassDef)
#: A LightningModule's methods handed a batch, and the positions (after ``self``)
#: that hold this rank's batch or outputs.
LIGHTNING_BATCH_POSITIONS: dict[str, tuple[int, ...]] = {
    "training_step": (1,),
    "validation_step": (1,),
    "test_step": (1,),
    "predict_step": (1,),
    "on_train_batch_start": (1,),
    "on_train_batch_end": (1, 2),
    "on_validation_batch_start": (1,),
    "on_validation_batch_end": (1, 2),
    "on_test_batch_start": (1,),
    "on_test_batch_end": (1, 2),
}


@dataclass(frozen=True)
class BatchSeeds:
    """The parameters of a function that hold this rank's batch, and for each loop that
    walks batches (by the loop's id) the parts of its target that hold one."""

    parameters: frozenset[str] = frozenset()
    loops: dict[int, tuple[ast.expr, ...]] = field(default_factory=dict)


def batch_seeds(
    scope: ast.AST, lightning_method: bool, helpers: frozenset[str] = frozenset()
) -> BatchSeeds:
    """Where this rank's batch enters ``scope``; ``lightning_method``: it is a method of
    a LightningModule class; ``helpers``: how calls name the local functions that run a
    backward."""
    parameters: set[str] = set()
    if lightning_method and isinstance(scope, _FUNCTIONS):
        positional = [*scope.args.posonlyargs, *scope.args.args]
        for position in LIGHTNING_BATCH_POSITIONS.get(scope.name, ()):
            if position < len(positional):
                parameters.add(positional[position].arg)
    loops = {id(loop): _batch_targets(loop) for loop in training_loops(scope, helpers)}
    return BatchSeeds(frozenset(parameters), loops)


def training_loops(
    scope: ast.AST, helpers: frozenset[str] = frozenset()
) -> list[ast.For | ast.AsyncFor]:
    """The loops of ``scope``'s own code that walk batches (their body runs a backward,
    itself or through a call of one of ``helpers``; no inner loop of theirs does)."""
    return [
        loop
        for loop in own_nodes(scope)
        if isinstance(loop, _LOOPS) and _training_loop(loop, helpers)
    ]


def step_method(scope: ast.AST, lightning_method: bool) -> bool:
    """A LightningModule's ``training_step`` (or another method handed a batch)."""
    return (
        lightning_method
        and isinstance(scope, _FUNCTIONS)
        and scope.name in LIGHTNING_BATCH_POSITIONS
    )


def _runs_backward(statements: list[ast.stmt], helpers: frozenset[str]) -> bool:
    return any(
        isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Attribute) and node.func.attr == "backward")
            or dotted_name(node.func) in helpers
        )
        for statement in statements
        if not isinstance(statement, _DEFINITIONS)
        for node in (statement, *own_nodes(statement))
    )


def _training_loop(loop: ast.For | ast.AsyncFor, helpers: frozenset[str]) -> bool:
    """A loop whose body runs a backward, with no inner loop that does."""
    if not _runs_backward(loop.body, helpers):
        return False
    return not any(
        isinstance(inner, _LOOPS) and _runs_backward(inner.body, helpers)
        for statement in loop.body
        if not isinstance(statement, _DEFINITIONS)
        for inner in (statement, *own_nodes(statement))
    )


def _batch_targets(loop: ast.For | ast.AsyncFor) -> tuple[ast.expr, ...]:
    """The parts of a loop's target that hold its items (``enumerate``'s counter and a
    ``range`` counter left out)."""
    iterated = loop.iter
    if isinstance(iterated, ast.Call) and isinstance(iterated.func, ast.Name):
        if iterated.func.id == "range":
            return ()
        if iterated.func.id == "enumerate" and isinstance(loop.target, ast.Tuple):
            return tuple(loop.target.elts[1:])
    return (loop.target,)
