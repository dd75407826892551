"""Conditions that hold once in a while: a branch under one does not run every step.

A test is *sparse* when it takes a modulo (``step % log_every == 0``), compares a step /
batch counter with a number for equality (``batch_idx == 0``), draws a random number
(``random.random() < 0.002``), or names logging, debugging or plotting
(``if self.should_log:``), or holds in evaluation only (``not self.training``). A
negated test is not (``if not self.debug:`` is the usual path). Only the ``if`` body (or
the right side of ``and``) is under the condition.
"""

from __future__ import annotations

import re

import libcst as cst

from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import dotted_name

#: Names in a condition that make a branch occasional (logging, debugging, a counter
#: test that is true once in a while).
_SPARSE_NAME = re.compile(
    r"log|print|verbose|debug|profil|every|interval|last_batch|is_last|first|visual|plot|dump",
    re.I,
)
#: Calls that draw a random number: a test on one holds on a sample of the steps.
_RANDOM_DRAWS = frozenset({"random", "rand", "uniform"})
_COUNTER_NAME = re.compile(r"step|batch|idx|iter|epoch", re.I)


def under_sparse_condition(index: ModuleIndex, node: cst.CSTNode) -> bool:
    """An ``if`` / conditional expression of the same function makes it occasional."""
    child: cst.CSTNode = node
    for ancestor in index.ancestors(node):
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return False
        test = None
        if isinstance(ancestor, (cst.If, cst.IfExp)) and child is ancestor.body:
            test = ancestor.test
        elif (
            isinstance(ancestor, cst.BooleanOperation)
            and isinstance(ancestor.operator, cst.And)
            and child is ancestor.right
        ):
            test = ancestor.left
        if test is not None and is_sparse(test):
            return True
        child = ancestor
    return False


def is_sparse(test: cst.BaseExpression) -> bool:
    """A test that holds once in a while: a modulo, ``counter == N``, a logging or
    debugging switch (a negated test is not: ``if not self.debug`` is the usual case)."""
    nodes = _walk(test)
    if any(_eval_only(node) for node in nodes):
        return True  # ``if not self.training and ...:`` runs in evaluation only
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return False
    for node in nodes:
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo):
            return True
        if isinstance(node, cst.Comparison) and any(
            isinstance(c.operator, cst.Equal) for c in node.comparisons
        ):
            operands = [node.left, *(c.comparator for c in node.comparisons)]
            if any(_COUNTER_NAME.search(last_name(o)) for o in operands) and any(
                isinstance(o, cst.Integer) for o in operands
            ):
                return True
        if isinstance(node, (cst.Name, cst.Attribute)) and _SPARSE_NAME.search(last_name(node)):
            return True
        if isinstance(node, cst.Call) and last_name(node.func) in _RANDOM_DRAWS:
            return True  # ``if random.random() < 0.002:``: a sampled branch
    return False


def _eval_only(node: cst.CSTNode) -> bool:
    """``not self.training``: the module is in evaluation mode."""
    return (
        isinstance(node, cst.UnaryOperation)
        and isinstance(node.operator, cst.Not)
        and last_name(node.expression) == "training"
    )


def last_name(expr: cst.BaseExpression) -> str:
    """The last part of a dotted name (`global_step` for `self.global_step`)."""
    name = dotted_name(expr)
    return name.rsplit(".", 1)[-1] if name else ""


def _walk(root: cst.CSTNode) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []
    stack = [root]
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(node.children)
    return found
