"""The conditions a statement runs under, inside its own function.

``guarding_conditions(index, node)`` lists the tests of the ``if`` / ``elif`` / ``while``
statements and conditional expressions that decide whether ``node`` runs, innermost
first, stopping at the enclosing ``def`` (or at a given ancestor). A node in an ``else``
branch is guarded by the negation of the test; the test itself guards nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ddplint.code.syntax.module_index import ModuleIndex

_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)


@dataclass(frozen=True)
class Guard:
    """One test ``node`` depends on; ``negated`` when ``node`` runs where it is false."""

    test: cst.BaseExpression
    owner: cst.If | cst.IfExp | cst.While
    negated: bool


def guarding_conditions(
    index: ModuleIndex, node: cst.CSTNode, stop: cst.CSTNode | None = None
) -> list[Guard]:
    """Tests controlling ``node``, innermost first, up to ``stop`` or the enclosing def."""
    guards: list[Guard] = []
    child = node
    for ancestor in index.ancestors(node):
        if ancestor is stop or isinstance(ancestor, _SCOPES):
            break
        if isinstance(ancestor, (cst.If, cst.While)):
            if child is ancestor.body:
                guards.append(Guard(ancestor.test, ancestor, False))
            elif child is ancestor.orelse and isinstance(ancestor, cst.If):
                guards.append(Guard(ancestor.test, ancestor, True))
        elif isinstance(ancestor, cst.IfExp):
            if child is ancestor.body:
                guards.append(Guard(ancestor.test, ancestor, False))
            elif child is ancestor.orelse:
                guards.append(Guard(ancestor.test, ancestor, True))
        child = ancestor
    return guards
