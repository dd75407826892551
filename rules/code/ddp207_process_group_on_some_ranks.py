"""DDP207: a process group created on some ranks only."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ddplint.code.context import CodeContext
from ddplint.code.edits.edits import (
    insert_before,
    remove_small_statement,
    replace_node,
    shift_continuation_lines,
)
from ddplint.code.ranks.guard_brief import ranks_brief
from ddplint.code.ranks.rank_reachability import RankGuard
from ddplint.code.syntax.names import dotted_name
from ddplint.finding import Applicability, Finding, Fix, Severity
from ddplint.needles import COLLECTIVE_CALL_NEEDLES, COLLECTIVE_NEEDLES, RANK_NEEDLES
from ddplint.rule import CodeRule
from ddplint.rules.screens import may_create_a_group


def _assigned_names(statement: cst.CSTNode, ctx: CodeContext) -> set[str]:
    """Plain names a statement binds (assignment, loop, ``with ... as``, ``def``)."""
    names: set[str] = set()
    for node in (statement, *ctx.index.walk_within(statement)):
        targets: list[cst.CSTNode] = []
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor)):
            targets = [node.target]
        elif isinstance(node, cst.AsName):
            targets = [node.name]
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            names.add(node.name.value)
        for target in targets:
            names.update(
                n.value for n in (target, *ctx.index.walk_within(target)) if isinstance(n, cst.Name)
            )
    return names


def _fresh_name(ctx: CodeContext, base: str) -> str:
    name = f"{base}_on_all_ranks"
    number = 2
    while name in ctx.source.text:
        name = f"{base}_on_all_ranks_{number}"
        number += 1
    return name


class ProcessGroupOnSomeRanks(CodeRule):
    """
    ## What it does
    Flags `dist.new_group(...)`, `dist.new_subgroups(...)` and `init_device_mesh(...)`
    made on some ranks only: under a rank condition (typically `if rank in ranks:`), its
    `else`, after an early `return` on one, or in a `@rank_zero_only` function.

    ## Why is this bad?
    Creating a group is itself a collective over the whole default group: the torch
    docs require every rank to call `new_group` with the same arguments, in the same
    order, even ranks that are not members. Called on the members only, the call
    returns at once and nothing fails until the group's first collective, which hangs
    with no error.

    ## Example
    ```python
    for ranks in [[0, 1], [2, 3]]:
        if dist.get_rank() in ranks:
            group = dist.new_group(ranks)
    ```

    ## Use instead
    ```python
    for ranks in [[0, 1], [2, 3]]:
        created = dist.new_group(ranks)  # every rank creates every group
        if dist.get_rank() in ranks:
            group = created
    ```

    ## Fix safety
    The fix hoists the call out of the guard: a bare call moves above the `if`; an
    assignment keeps its place and takes the group from a new variable made above the
    `if`, so the guarded ranks bind the same group as before. It is safe: the guarded
    code sees the same values, and the other ranks now join the creation. No fix when
    the arguments use names set inside the guard, the guard is not a plain `if`, or the
    `if` creates more than one group.

    ## References
    - PyTorch docs: `torch.distributed.new_group` ("requires that all processes in the
      main group ... enter this function, even if they are not going to be members").
    """

    code = "DDP207"
    name = "process-group-on-some-ranks"
    summary = "a process group created on some ranks only"
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE
    needles = RANK_NEEDLES
    also_needles = COLLECTIVE_NEEDLES
    more_needles = (COLLECTIVE_CALL_NEEDLES,)

    screened_by = staticmethod(may_create_a_group)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        reachability = ctx.rank_reachability
        for call, _, guard in reachability.divergent_collectives(lambda c: c.creates_group):
            where = reachability.describe(guard)
            called = " ".join(ctx.node_text(call.func).split())
            message = (
                f"`{called}()` runs {where}, but every rank must create every group, in "
                "the same order; the first collective on this group then hangs with no "
                "error. Create it on every rank (hoist it out of the guard)"
            )
            summary = f"process group `{called}()` created {ranks_brief(ctx, guard)}"
            yield ctx.finding(self, call, message, self._fix(ctx, call, guard), summary=summary)

    def _fix(self, ctx: CodeContext, call: cst.Call, guard: RankGuard) -> Fix | None:
        """Hoist the call above the guard's ``if`` (not an ``elif``)."""
        holder = guard.holder
        if guard.kind not in ("branch", "else") or not isinstance(holder, cst.If):
            return None
        if isinstance(ctx.index.parent.get(holder), cst.If):
            return None
        creations = [
            node
            for node in ctx.index.walk_within(holder)
            if isinstance(node, cst.Call)
            and (made := ctx.rank_reachability.own_collective(node)) is not None
            and made.creates_group
        ]
        if len(creations) != 1:
            return None  # one hoist per `if`: several would need names of their own
        small = ctx.index.parent.get(call)
        line = ctx.index.parent.get(small) if small is not None else None
        block = ctx.index.parent.get(line) if line is not None else None
        arm = ctx.index.parent.get(block) if block is not None else None
        if arm is not holder and not (isinstance(arm, cst.Else) and arm is holder.orelse):
            return None
        if not isinstance(line, cst.SimpleStatementLine) or not isinstance(
            block, cst.IndentedBlock
        ):
            return None
        earlier = block.body[: block.body.index(line)]
        bound = set().union(*(_assigned_names(s, ctx) for s in earlier)) if earlier else set()
        if any(isinstance(n, cst.Name) and n.value in bound for n in ctx.index.walk_within(call)):
            return None
        holder_line, indent = ctx.range_of(holder)[:2]
        delta = ctx.range_of(line)[1] - indent
        # The `if`'s own indentation, tabs included, then the file's line end.
        below = ctx.source.newline() + ctx.source.line_text(holder_line)[: indent - 1]
        if isinstance(small, cst.Expr) and small.value is call and len(line.body) == 1:
            text = shift_continuation_lines(ctx.node_text(small), delta)
            removal = remove_small_statement(ctx, small)
            if removal is None:
                return None
            edits = (insert_before(ctx, holder, f"{text}{below}"), removal)
        elif isinstance(small, cst.Assign) and small.value is call:
            target = small.targets[-1].target
            base = (dotted_name(target) or "group").rsplit(".", 1)[-1]
            fresh = _fresh_name(ctx, base)
            text = shift_continuation_lines(ctx.node_text(call), delta)
            edits = (
                insert_before(ctx, holder, f"{fresh} = {text}{below}"),
                replace_node(ctx, call, fresh),
            )
        else:
            return None
        return Fix(Applicability.SAFE, edits, "Create the group on every rank (above the `if`)")
