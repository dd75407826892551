"""Loops whose every turn is one optimizer step over micro-batches: a question to the
analysis core.

``AccumulationLoops(analysis).steps_each_turn(loop, scope)``: the loop's own body (not
its inner loops) steps an optimizer, after an inner loop that runs the backward and
steps none (gradient accumulation: ``for update in range(n): for micro in loader:
loss.backward()`` then ``optimizer.step()``). Each turn of such a loop is a training
step, as a turn of the inner loop of a plain training loop is.

What steps is decided by what the receiver *is*: an object made by a call the object
catalogue (``object_kinds.library_kind``) or the project (``project.kind``) says makes
an optimizer, followed through the module (``object_flow``: names, fields, what a
factory of the module returns); never by its name.
"""

from __future__ import annotations

import ast
from functools import cached_property

from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.names import dotted_name
from ddplint.analysis.object_flow import ModuleCode, ObjectFlow
from ddplint.analysis.object_kinds import OPTIMIZER, library_kind

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
Loop = ast.For | ast.AsyncFor | ast.While


class AccumulationLoops:
    """The gradient-accumulation loops of one module."""

    def __init__(self, analysis: ModuleAnalysis) -> None:
        self._analysis = analysis

    def steps_each_turn(self, loop: Loop, scope: ast.AST) -> bool:
        """Whether each turn of ``loop`` (in ``scope``'s own code) is one optimizer step
        taken after inner loops that run the backward."""
        inner = [node for node in own_code(loop.body) if isinstance(node, _LOOPS)]
        if not any(self._runs_backward(i.body) for i in inner):
            return False
        if any(self._steps(i.body, scope) for i in inner):
            return False  # an epoch loop around a loop that steps itself
        return self._steps(loop.body, scope)

    def _runs_backward(self, body: list[ast.stmt]) -> bool:
        return any(
            isinstance(node, ast.Call) and self._analysis.backward_label(node) is not None
            for statement in body
            for node in ast.walk(statement)
        )

    def _steps(self, body: list[ast.stmt], scope: ast.AST) -> bool:
        """The body's own code (inner loops left out) calls ``step()`` of an optimizer."""
        return any(
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "step"
            and isinstance(node.func.value, (ast.Name, ast.Attribute))
            and self._optimizers.carries(node.func.value, scope)
            for node in own_code(body)
        )

    @cached_property
    def _optimizers(self) -> ObjectFlow:
        analysis = self._analysis
        resolve = analysis.names.resolve

        def made(expression: ast.expr, _scope: ast.AST) -> bool:
            if not isinstance(expression, ast.Call):
                return False
            if library_kind(resolve(expression.func) or "") == OPTIMIZER:
                return True
            spelled = dotted_name(expression.func)
            return spelled is not None and analysis.project.kind(spelled, None) == OPTIMIZER

        return ObjectFlow(ModuleCode(analysis.nodes, analysis.names), made)


def own_code(body: list[ast.stmt]) -> list[ast.AST]:
    """The nodes of ``body`` outside its inner loops and nested definitions (the inner
    loops themselves included)."""
    found: list[ast.AST] = []
    pending: list[ast.AST] = list(body)
    while pending:
        node = pending.pop()
        found.append(node)
        if isinstance(node, (*_LOOPS, *_NESTED)):
            continue
        pending.extend(ast.iter_child_nodes(node))
    return found
