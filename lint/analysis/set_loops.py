"""Loops over a set whose passes issue a collective with the element (DDP209): each
rank walks a set of strings (or of objects hashed by address) in its own order, so the
ranks issue per-element collectives in different orders.

A pass counts when a call in it issues a collective (the effects' catalogue, or a
function of the module that reaches one) and the call's arguments or a condition
around it read the element, or a value computed from it earlier in the pass:
identical calls per element, such as a bare ``dist.barrier()``, pair up in any order.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from ddplint.analysis.control_flow import COMPREHENSIONS
from ddplint.analysis.effects import Collective
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.set_iteration import SetIteration


@dataclass(frozen=True)
class SetLoopCollective:
    """A loop over a set (``iteration``), the first collective a pass issues with the
    element, and the module function it is reached through (None: issued right there)."""

    iteration: SetIteration
    iterable: ast.expr
    collective: Collective
    through: str | None


@dataclass(frozen=True)
class _Loop:
    iterable: ast.expr
    targets: frozenset[str]
    bodies: tuple[ast.AST, ...]


def set_loop_collectives(analysis: ModuleAnalysis) -> list[SetLoopCollective]:
    """Every loop over a set (``for`` or comprehension) whose passes issue a collective
    with the element, in the order of the text."""
    found = []
    for loop in _loops(analysis.module):
        iteration = analysis.set_values.set_iteration(loop.iterable)
        if iteration is None:
            continue
        reached = _element_collective(analysis, loop)
        if reached is not None:
            found.append(SetLoopCollective(iteration, loop.iterable, *reached))
    return found


def _element_collective(
    analysis: ModuleAnalysis, loop: _Loop
) -> tuple[Collective, str | None] | None:
    element = set(loop.targets)
    for body in loop.bodies:
        for node, guards in _walk_guarded(body, ()):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
                if node.value is not None and _reads(node.value, element):
                    targets: list[ast.expr] = (
                        node.targets if isinstance(node, ast.Assign) else [node.target]
                    )
                    element.update(_stored_names(targets))
                continue
            if not isinstance(node, ast.Call):
                continue
            reached = analysis.call_reaches(node, analysis.nodes.scope_of_call(node))
            if reached is not None and (
                _reads(node, element) or any(_reads(test, element) for test in guards)
            ):
                return reached
    return None


def _walk_guarded(
    node: ast.AST, guards: tuple[ast.expr, ...]
) -> Iterator[tuple[ast.AST, tuple[ast.expr, ...]]]:
    """``node`` and every node under it, in the order of the text, with the tests of
    the branches (``if``, ``while``, conditional expressions) around each."""
    yield node, guards
    if isinstance(node, (ast.If, ast.While, ast.IfExp)):
        yield from _walk_guarded(node.test, guards)
        inner = (*guards, node.test)
        arms: tuple[ast.AST, ...] = (
            (node.body, node.orelse) if isinstance(node, ast.IfExp) else (*node.body, *node.orelse)
        )
        for child in arms:
            yield from _walk_guarded(child, inner)
        return
    for child in ast.iter_child_nodes(node):
        yield from _walk_guarded(child, guards)


def _reads(node: ast.AST, names: set[str]) -> bool:
    return any(
        isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in names
        for n in ast.walk(node)
    )


def _stored_names(targets: list[ast.expr]) -> Iterator[str]:
    for target in targets:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                yield node.id


def _loops(module: ast.Module) -> list[_Loop]:
    """``for`` loops and comprehensions, in the order of their iterables in the text."""
    loops = []
    for node in ast.walk(module):
        if isinstance(node, (ast.For, ast.AsyncFor)):
            loops.append(
                _Loop(node.iter, frozenset(_stored_names([node.target])), tuple(node.body))
            )
        elif isinstance(node, COMPREHENSIONS):
            bodies: tuple[ast.AST, ...] = (
                (node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,)
            )
            for generator in node.generators:
                targets = frozenset(_stored_names([generator.target]))
                loops.append(_Loop(generator.iter, targets, bodies))
    return sorted(loops, key=lambda loop: (loop.iterable.lineno, loop.iterable.col_offset))
