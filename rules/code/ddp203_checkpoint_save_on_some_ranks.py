"""DDP203: a checkpoint save that synchronises, called on some ranks only."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import shift_continuation_lines
from ddplint.code.edits.edits import replace_node
from ddplint.code.ranks.guard_brief import ranks_brief
from ddplint.code.ranks.rank_reachability import FirstAfterExit, RankGuard
from ddplint.code.torch_floor import LIGHTNING_BEFORE_2_1
from ddplint.finding import Applicability, Finding, Fix, Severity
from ddplint.needles import COLLECTIVE_CALL_NEEDLES, COLLECTIVE_NEEDLES, RANK_NEEDLES
from ddplint.rule import CodeRule


def conjuncts(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """``[a, b, c]`` for ``a and b and c`` (one item for anything else)."""
    if (
        isinstance(expr, cst.BooleanOperation)
        and isinstance(expr.operator, cst.And)
        and not expr.lpar
    ):
        return [*conjuncts(expr.left), *conjuncts(expr.right)]
    return [expr]


def sole_statement(node: cst.If) -> cst.SimpleStatementLine | cst.SimpleStatementSuite | None:
    """The one statement line of an ``if`` without ``else``, with no comment to lose."""
    body = node.body
    if node.orelse is not None:
        return None
    if isinstance(body, cst.SimpleStatementSuite):
        return body if len(body.body) == 1 and body.trailing_whitespace.comment is None else None
    if not isinstance(body, cst.IndentedBlock):
        return None
    if len(body.body) != 1 or body.header.comment is not None or body.footer:
        return None
    line = body.body[0]
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    if any(empty.comment is not None for empty in line.leading_lines):
        return None
    return line


class CheckpointSaveOnSomeRanks(CodeRule):
    """
    ## What it does
    Flags a checkpoint save that every rank must join, made on some ranks only:
    `trainer.save_checkpoint(...)` (Lightning), `accelerator.save_state(...)`
    (accelerate), `engine.save_checkpoint(...)` (DeepSpeed), `fabric.save(...)`,
    `torch.distributed.checkpoint.save(...)` and FSDP full state/optimizer dicts, under
    a rank condition, after an early `return` on one, or in a `@rank_zero_only` function.

    ## Why is this bad?
    These calls synchronise: Lightning's `save_checkpoint` ends with
    `strategy.barrier()`, DeepSpeed and distributed checkpointing write one shard per
    rank, FSDP gathers the full state dict with collectives. Called on rank 0 alone,
    rank 0 waits for the others until the collective timeout (Lightning #19045). They
    already write on rank 0 only where that is what is needed: Lightning's docstring
    says `save_checkpoint` must be called on all processes.

    ## Example
    ```python
    if trainer.is_global_zero:
        trainer.save_checkpoint("last.ckpt")
    ```

    ## Use instead
    ```python
    trainer.save_checkpoint("last.ckpt")  # every rank; Lightning writes on rank 0
    ```

    ## Fix safety
    When the guard holds only the call (an `if` with no `else` whose body is just the
    save), the fix removes the guard: it is safe, the function already writes on the
    right ranks. Conditions that are the same on every rank are kept
    (`if trainer.is_global_zero and epoch % 5 == 0:` becomes `if epoch % 5 == 0:`).

    ## References
    - Lightning docs: `Trainer.save_checkpoint` ("This method needs to be called on all
      processes").
    - Lightning issue #19045; accelerate docs: `Accelerator.save_state`.
    """

    code = "DDP203"
    name = "checkpoint-save-on-some-ranks"
    summary = "a synchronising checkpoint save reached only on some ranks"
    severity = Severity.ERROR
    #: Preview since issue 23: under the bar of precision on blind code (docs/precision.md).
    default_enabled = False
    fix_applicability = Applicability.SAFE
    needles = RANK_NEEDLES
    also_needles = COLLECTIVE_NEEDLES
    more_needles = (COLLECTIVE_CALL_NEEDLES,)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        reachability = ctx.rank_reachability
        old_lightning = _lightning_before_2_1(ctx)
        exits = FirstAfterExit()
        for call, collective, guard in reachability.divergent_collectives(
            lambda c: c.saves_checkpoint and not (c.family == "trainer" and old_lightning)
        ):
            if not exits.first(guard):
                continue
            where = reachability.describe(guard)
            called = " ".join(ctx.node_text(call.func).split())
            assumes = " from Lightning 2.1 on" if collective.family == "trainer" else ""
            message = (
                f"`{called}()` runs {where}, but every rank must call it: it synchronises "
                f"the ranks{assumes} (and already writes only where it should), so this "
                "rank waits for the others until the timeout. Call it on every rank"
            )
            summary = f"`{called}()` runs {ranks_brief(ctx, guard)}, but every rank must call it"
            yield ctx.finding(self, call, message, self._fix(ctx, call, guard), summary=summary)

    @staticmethod
    def _fix(ctx: CodeContext, call: cst.Call, guard: RankGuard) -> Fix | None:
        """Remove the rank test when the guard's ``if`` holds only this call."""
        holder = guard.holder
        if guard.kind != "branch" or not isinstance(holder, cst.If):
            return None
        if isinstance(ctx.index.parent.get(holder), cst.If):
            return None  # an `elif`
        line = sole_statement(holder)
        if line is None:
            return None
        statement = line.body[0]
        if not (isinstance(statement, cst.Expr) and statement.value is call):
            return None
        predicates = ctx.rank_predicates
        kept = [c for c in conjuncts(holder.test) if not predicates.is_rank_dependent(c)]
        if any(predicates.is_rank_dependent(c) for c in kept):
            return None
        if kept:
            test = " and ".join(ctx.node_text(c) for c in kept)
            edit = replace_node(ctx, holder.test, test)
        else:
            indent = ctx.range_of(holder)[1]
            body_indent = ctx.range_of(statement)[1]
            text = shift_continuation_lines(ctx.node_text(statement), body_indent - indent)
            edit = replace_node(ctx, holder, text)
        return Fix(Applicability.SAFE, (edit,), "Call it on every rank (remove the rank test)")


#: Hooks Lightning 2.0 removed: a module that defines them is Lightning 1.x code.
LIGHTNING_1X_HOOKS = frozenset(
    {
        "on_keyboard_interrupt",
        "on_pretrain_routine_start",
        "on_pretrain_routine_end",
        "training_epoch_end",
        "validation_epoch_end",
        "test_epoch_end",
        "on_epoch_start",
        "on_epoch_end",
        "on_batch_start",
        "on_batch_end",
        "on_init_start",
        "on_init_end",
    }
)


def _lightning_before_2_1(ctx: CodeContext) -> bool:
    """``Trainer.save_checkpoint`` synchronises only from Lightning 2.1: before, plain DDP
    writes on rank 0 without a barrier. The project pins an older Lightning, or the module
    defines hooks that Lightning 2.0 removed."""
    if ctx.options.fact(LIGHTNING_BEFORE_2_1):
        return True
    return any(f.name.value in LIGHTNING_1X_HOOKS for f in ctx.index.nodes(cst.FunctionDef))
