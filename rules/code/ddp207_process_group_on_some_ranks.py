"""DDP207: a process group created on some ranks only."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.group_creations import (
    GroupOnSomeRanks,
    creations_within,
    groups_on_some_ranks,
)
from ddplint.analysis.names import dotted_name
from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import (
    ast_node_text,
    insert_before_ast_node,
    remove_ast_statement,
    replace_ast_node,
    shares_a_line,
    shift_continuation_lines,
)
from ddplint.finding import Applicability, Finding, Fix, Severity
from ddplint.needles import COLLECTIVE_CALL_NEEDLES, COLLECTIVE_NEEDLES, RANK_NEEDLES
from ddplint.rule import CodeRule
from ddplint.rules.code.ddp214_log_dir_on_some_ranks import guard_related, guard_text
from ddplint.rules.screens import may_create_a_group


class ProcessGroupOnSomeRanks(CodeRule):
    """
    ## What it does
    Flags `dist.new_group(...)`, `dist.new_subgroups(...)` and `init_device_mesh(...)`
    made on some ranks only: under a rank condition (typically `if rank in ranks:`), its
    `else`, after an early `return` on one, or in a `@rank_zero_only` function.

    Not flagged: a group every rank creates and only its members keep
    (`made = dist.new_group(ranks)` then `if rank in ranks: group = made`); a rank test
    whose branches create the same groups with the same arguments, or whose rank classes
    do across the function (two complementary `if`s); a way only a single-process job
    takes.

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

    This rule is built on the analysis core (rank guards, control dependence and the
    pairing of rank classes on Python's `ast`); the fix is built from `ast` positions.

    ## References
    - PyTorch docs: `torch.distributed.new_group` ("requires that all processes in the
      main group ... enter this function, even if they are not going to be members").
    """

    code = "DDP207"
    needs_peers = True
    name = "process-group-on-some-ranks"
    summary = "a process group created on some ranks only"
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE
    needles = RANK_NEEDLES
    also_needles = COLLECTIVE_NEEDLES
    more_needles = (COLLECTIVE_CALL_NEEDLES,)

    screened_by = staticmethod(may_create_a_group)
    reads_libcst = False

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        for found in groups_on_some_ranks(ctx.analysis):
            called = " ".join(ast_node_text(ctx, found.call.func).split())
            message = (
                f"`{called}()` runs {guard_text(found.guard)}, but every rank must create "
                "every group, in the same order; the first collective on this group then "
                "hangs with no error. Create it on every rank (hoist it out of the guard)"
            )
            yield ctx.ast_finding(
                self,
                found.call,
                message,
                summary=f"process group `{called}()` created on some ranks only",
                related=[guard_related(found.guard)],
                fix=_hoist(ctx, found),
            )


def _hoist(ctx: CodeContext, found: GroupOnSomeRanks) -> Fix | None:
    """Hoist the call above the guard's ``if`` (not an ``elif``): a bare call moves;
    an assignment takes the group from a new name bound above the ``if``."""
    holder, statement, call = found.guard.cause, found.statement, found.call
    if not isinstance(holder, ast.If) or found.guard.test is not holder.test:
        return None
    if not isinstance(statement, (ast.Expr, ast.Assign)):
        return None
    if ctx.source.line_text(holder.lineno)[holder.col_offset :].startswith("elif"):
        return None
    if len(creations_within(ctx.analysis, holder)) != 1:
        return None  # one hoist per `if`: several would need names of their own
    block = holder.body if found.guard.runs_when else holder.orelse
    if not any(s is statement for s in block) or not _alone_on_its_lines(ctx, statement, block):
        return None
    earlier = block[: next(i for i, s in enumerate(block) if s is statement)]
    if _bound_names(earlier) & _read_names(call):
        return None
    holder_line, holder_column = ctx.ast_range(holder)[:2]
    delta = ctx.ast_range(statement)[1] - holder_column
    # The `if`'s own indentation, tabs included, then the file's line end.
    below = ctx.source.newline() + ctx.source.line_text(holder_line)[: holder_column - 1]
    if isinstance(statement, ast.Expr) and statement.value is call:
        text = shift_continuation_lines(ast_node_text(ctx, statement), delta)
        edits = (
            insert_before_ast_node(ctx, holder, f"{text}{below}"),
            remove_ast_statement(ctx, statement, block),
        )
    elif isinstance(statement, ast.Assign) and statement.value is call:
        base = (dotted_name(statement.targets[-1]) or "group").rsplit(".", 1)[-1]
        fresh = _fresh_name(ctx, base)
        text = shift_continuation_lines(ast_node_text(ctx, call), delta)
        edits = (
            insert_before_ast_node(ctx, holder, f"{fresh} = {text}{below}"),
            replace_ast_node(ctx, call, fresh),
        )
    else:
        return None
    return Fix(Applicability.SAFE, edits, "Create the group on every rank (above the `if`)")


def _alone_on_its_lines(ctx: CodeContext, statement: ast.stmt, block: list[ast.stmt]) -> bool:
    """No other statement of the block shares a line with it (``a(); b()``), and its
    first line starts with it."""
    before = ctx.source.line_text(statement.lineno)[: ctx.ast_range(statement)[1] - 1]
    return not shares_a_line(statement, block) and not before.strip()


def _bound_names(statements: list[ast.stmt]) -> set[str]:
    """Plain names the statements bind (assignments, loops, ``with ... as``, imports,
    ``def`` and ``class``)."""
    names: set[str] = set()
    for statement in statements:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.alias):
                names.add((node.asname or node.name).split(".", 1)[0])
    return names


def _read_names(expression: ast.AST) -> set[str]:
    return {node.id for node in ast.walk(expression) if isinstance(node, ast.Name)}


def _fresh_name(ctx: CodeContext, base: str) -> str:
    name = f"{base}_on_all_ranks"
    number = 2
    while name in ctx.source.text:
        name = f"{base}_on_all_ranks_{number}"
        number += 1
    return name
