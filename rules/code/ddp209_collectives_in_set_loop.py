"""DDP209: collectives issued in a loop over a set."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from ddplint.code.collectives.call_reach import Reached, StepEvent
from ddplint.code.context import CodeContext
from ddplint.code.edits.edits import replace_node
from ddplint.code.syntax.conditions import guarding_conditions
from ddplint.code.syntax.messages import snippet
from ddplint.code.values.data_dependence import bound_names, value_names_read
from ddplint.code.values.set_iteration import SetIteration, SetValues
from ddplint.finding import Applicability, Finding, Fix, Severity
from ddplint.needles import COLLECTIVE_CALL_NEEDLES, COLLECTIVE_NEEDLES
from ddplint.rule import CodeRule
from ddplint.rules.screens import may_loop_over_a_set

_COLLECTIVE = frozenset({StepEvent.COLLECTIVE})
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)


class CollectivesInSetLoop(CodeRule):
    """
    ## What it does
    Flags a `for` loop (or comprehension) over a set that issues a collective per
    element, directly or through a function of the same module: a set literal or
    comprehension, `set(...)` / `frozenset(...)`, set operations (`a | b`,
    `a.union(b)`), `list(s)` / `enumerate(s)` of one, and names or `self.` attributes
    bound only to sets. The collective must depend on the element (an argument or a
    condition reads it); the same call per element (a bare `dist.barrier()`) pairs up
    in any order. Not flagged: a set shown to hold ints, bools, floats or tuples of
    them, whose hashes are not salted, so every rank that builds it alike walks it
    alike: written out (`{0, 5, 10}`), counted (`range(n)`, `len(...)`, `enumerate`'s
    index, `t.tolist()`), computed from such values (`{i * 2 for i in range(n)}`), or
    bound or annotated so in the scope (`ids = [0, 3]`, `indices: set[int]`); and dicts
    (`.keys()` keeps insertion order). A set whose elements nothing shows (a parameter,
    an attribute, `.keys()`) is flagged: strings and objects are the common case.

    ## Why is this bad?
    Collectives pair by order. Set order comes from hashing: string hashes are salted
    per process (`PYTHONHASHSEED` is unset under torchrun) and objects such as tensors
    or modules hash by address, so each rank walks the set in its own order and issues
    the collectives in a different sequence. Tensors of different parameters are then
    reduced together (silently wrong when shapes match) or the ranks hang.

    ## Example
    ```python
    for name in {"encoder", "decoder"}:
        dist.all_reduce(grads[name])
    ```

    ## Use instead
    ```python
    for name in sorted({"encoder", "decoder"}):
        dist.all_reduce(grads[name])
    ```

    ## Fix safety
    The fix iterates `sorted(...)` of the set. It is safe when the elements are written
    out as strings. Otherwise it is offered as unsafe: sorting raises `TypeError` for
    elements that do not order (tensors, modules, strings mixed with numbers); give
    `sorted` a `key=` in that case.

    ## References
    - Python docs: `PYTHONHASHSEED`, `object.__hash__`; logix PR 68.
    """

    code = "DDP209"
    name = "collectives-in-set-loop"
    summary = "collectives issued while iterating a set: the order differs per rank"
    severity = Severity.ERROR
    default_enabled = False
    fix_applicability = Applicability.SAFE
    needles = COLLECTIVE_CALL_NEEDLES
    also_needles = COLLECTIVE_NEEDLES

    screened_by = staticmethod(may_loop_over_a_set)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        if not ctx.collectives:
            return
        sets = SetValues(ctx.index, ctx.names)
        for loop in _loops(ctx):
            iteration = sets.set_iteration(loop.iterable)
            if iteration is None:
                continue
            reached = self._element_collective(ctx, loop)
            if reached is None:
                continue
            yield ctx.finding(
                self,
                loop.iterable,
                self._message(ctx, iteration.source, reached),
                self._fix(ctx, iteration),
                summary=f"collectives in a loop over the set `{snippet(ctx, iteration.source)}`"
                ": order differs per rank",
            )

    @staticmethod
    def _element_collective(ctx: CodeContext, loop: _Loop) -> Reached | None:
        """The first collective the loop issues with something of the element (an
        argument or a condition reads it): identical calls per element, such as a bare
        ``dist.barrier()``, pair up in any order."""
        element = set(loop.targets)
        for body in loop.bodies:
            for node in itertools.chain((body,), ctx.index.walk_within(body)):
                if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                    if node.value is not None and _reads(node.value, element):
                        targets = (
                            [t.target for t in node.targets]
                            if isinstance(node, cst.Assign)
                            else [node.target]
                        )
                        element.update(n for t in targets for n in bound_names(t))
                    continue
                if not isinstance(node, cst.Call):
                    continue
                reached = ctx.call_reach.reached(node, _COLLECTIVE)
                if reached is None:
                    continue
                guards = guarding_conditions(ctx.index, node, body)
                if _reads(node, element) or any(_reads(g.test, element) for g in guards):
                    return reached
        return None

    @staticmethod
    def _message(ctx: CodeContext, source: cst.BaseExpression, reached: Reached) -> str:
        return (
            f"loop over the set `{snippet(ctx, source)}` issues {reached.describe()} per "
            "element: set order depends on per-process hashing, so ranks issue these "
            "collectives in different orders (mismatched tensors reduced together, or a "
            "hang); iterate `sorted(...)`"
        )

    @staticmethod
    def _fix(ctx: CodeContext, iteration: SetIteration) -> Fix:
        text = f"sorted({ctx.node_text(iteration.source)})"
        applicability = Applicability.SAFE if iteration.orderable else Applicability.UNSAFE
        return Fix(
            applicability,
            (replace_node(ctx, iteration.replace, text),),
            "Iterate the set in sorted order",
        )


@dataclass(frozen=True)
class _Loop:
    """An iterable, the names bound to each element, and the code run per element."""

    iterable: cst.BaseExpression
    targets: tuple[str, ...]
    bodies: tuple[cst.CSTNode, ...]


def _reads(expr: cst.CSTNode, names: set[str]) -> bool:
    return any(n.value in names for n in value_names_read(expr))


def _loops(ctx: CodeContext) -> list[_Loop]:
    """``for`` loops and comprehensions, in source order."""
    loops = [
        _Loop(loop.iter, tuple(bound_names(loop.target)), (loop.body,))
        for loop in ctx.index.nodes(cst.For)
    ]
    for comp_type in _COMPREHENSIONS:
        for comp in ctx.index.nodes(comp_type):
            if isinstance(comp, cst.DictComp):
                bodies: tuple[cst.CSTNode, ...] = (comp.key, comp.value)
            elif isinstance(comp, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
                bodies = (comp.elt,)
            else:
                continue
            for_in: cst.CompFor | None = comp.for_in
            while for_in is not None:
                loops.append(_Loop(for_in.iter, tuple(bound_names(for_in.target)), bodies))
                for_in = for_in.inner_for_in
    return sorted(loops, key=lambda loop: ctx.index.order[loop.iterable])
