"""DDP209: collectives issued in a loop over a set."""

from __future__ import annotations

from collections.abc import Iterator

from ddplint.analysis.set_loops import SetLoopCollective, set_loop_collectives
from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import ast_node_text, replace_ast_node
from ddplint.finding import Applicability, Finding, Fix, Severity
from ddplint.needles import COLLECTIVE_CALL_NEEDLES, COLLECTIVE_NEEDLES
from ddplint.rule import CodeRule
from ddplint.rules.screens import may_loop_over_a_set


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
    This rule is built on the analysis core (`set_iteration` and `element_hashing` for
    the set, the effects for the collective a pass issues, also through a function of
    the module).

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
    needs_peers = True
    fix_applicability = Applicability.SAFE
    reads_libcst = False
    needles = COLLECTIVE_CALL_NEEDLES
    also_needles = COLLECTIVE_NEEDLES

    screened_by = staticmethod(may_loop_over_a_set)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        for found in set_loop_collectives(ctx.analysis):
            source = ast_node_text(ctx, found.iteration.source)
            yield ctx.ast_finding(
                self,
                found.iterable,
                _message(source, found),
                summary=f"collectives in a loop over the set `{source}`: order differs per rank",
                fix=_fix(ctx, found, source),
            )


def _message(source: str, found: SetLoopCollective) -> str:
    through = f" (through `{found.through}`)" if found.through else ""
    return (
        f"loop over the set `{source}` issues `{found.collective.name}`{through} per "
        "element: set order depends on per-process hashing, so ranks issue these "
        "collectives in different orders (mismatched tensors reduced together, or a "
        "hang); iterate `sorted(...)`"
    )


def _fix(ctx: CodeContext, found: SetLoopCollective, source: str) -> Fix:
    iteration = found.iteration
    applicability = Applicability.SAFE if iteration.orderable else Applicability.UNSAFE
    return Fix(
        applicability,
        (replace_ast_node(ctx, iteration.replace, f"sorted({source})"),),
        "Iterate the set in sorted order",
    )
