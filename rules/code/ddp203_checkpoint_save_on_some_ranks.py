"""DDP203: a checkpoint save that synchronises, called on some ranks only."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.checkpoint_saves import SaveOnSomeRanks, saves_on_some_ranks
from ddplint.analysis.divergence import Taint
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.rank_guards import by_rank
from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import ast_node_text, replace_ast_node, shift_continuation_lines
from ddplint.code.torch_floor import LIGHTNING_BEFORE_2_1
from ddplint.finding import Applicability, Edit, Finding, Fix, Severity
from ddplint.needles import COLLECTIVE_CALL_NEEDLES, COLLECTIVE_NEEDLES, RANK_NEEDLES
from ddplint.rule import CodeRule
from ddplint.rules.code.ddp214_log_dir_on_some_ranks import guard_related, guard_text


class CheckpointSaveOnSomeRanks(CodeRule):
    """
    ## What it does
    Flags a checkpoint save that every rank must join, made on some ranks only:
    `trainer.save_checkpoint(...)` (Lightning), `accelerator.save_state(...)`
    (accelerate, where it synchronises), `engine.save_checkpoint(...)` (DeepSpeed),
    `fabric.save(...)`, `torch.distributed.checkpoint.save(...)` and FSDP full
    state/optimizer dicts, under a rank condition, after an early `return` on one, or in a
    `@rank_zero_only` function.

    The saving object is known by what made it, never by a variable's name: a Lightning
    `Trainer` (made, `self.trainer` of a LightningModule, a callback hook's trainer, an
    annotation of the parameter or name, also `Optional[...]` or quoted, or a module
    function's parameter annotated so that the name is handed to: a trainer made by a
    factory such as Hydra's `instantiate`), an `Accelerator` or `Fabric` (made or
    annotated), a DeepSpeed engine from `deepspeed.initialize`. It is built on the
    analysis core (control dependence on the divergence analysis, rank guards,
    conditional effects).

    Not flagged: accelerate's `save_state` in a module that uses neither DeepSpeed, FSDP,
    Megatron-LM nor automatic checkpoint naming (under plain DDP it writes on the calling
    rank without a collective); `trainer.save_checkpoint` in Lightning 1.x code (no barrier
    before Lightning 2.1); a full state-dict read of a model sharded only later.

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
    needs_peers = True
    fix_applicability = Applicability.SAFE
    needles = RANK_NEEDLES
    also_needles = COLLECTIVE_NEEDLES
    more_needles = (COLLECTIVE_CALL_NEEDLES,)

    reads_libcst = False

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        analysis = ctx.analysis
        synchronises = not _lightning_before_2_1(ctx, analysis)
        for save in saves_on_some_ranks(analysis, synchronises):
            called = " ".join(ast_node_text(ctx, save.call.func).split())
            where = _where(save)
            assumes = " from Lightning 2.1 on" if save.what == "trainer" else ""
            if save.condition is not None:
                assumes = f" {save.condition}, which this module uses"
            reaches = f", and it reaches `{save.via}`" if save.via is not None else ""
            message = (
                f"`{called}()` runs {where}{reaches}, but every rank must call it: it "
                "synchronises "
                f"the ranks{assumes} (and already writes only where it should), so this "
                "rank waits for the others until the timeout. Call it on every rank"
            )
            brief = "on rank 0 only" if save.wrapped else "on some ranks only"
            yield ctx.ast_finding(
                self,
                save.call,
                message,
                summary=f"`{called}()` runs {brief}, but every rank must call it",
                related=[] if save.wrapped else [guard_related(save.guard)],
                fix=_fix(ctx, analysis, save),
            )


def _where(save: SaveOnSomeRanks) -> str:
    """Where the save runs, for the message."""
    guard = save.guard
    if save.wrapped:
        return f"only on the ranks `{ast.unparse(guard.test)}` lets through (line {guard.line})"
    return guard_text(guard)


def _fix(ctx: CodeContext, analysis: ModuleAnalysis, save: SaveOnSomeRanks) -> Fix | None:
    """Remove the rank test when the guard's ``if`` holds only this call (no ``else``, no
    comment): the save already writes on the right ranks."""
    holder, guard = save.guard.cause, save.guard
    if not isinstance(holder, ast.If) or holder.orelse or guard.runs_when is not True:
        return None
    if len(holder.body) != 1 or guard.where is None:
        return None
    statement = holder.body[0]
    if not (isinstance(statement, ast.Expr) and statement.value is save.call):
        return None
    whole = ast_node_text(ctx, holder)
    if whole.startswith("elif") or "#" in whole.replace(ast_node_text(ctx, statement), ""):
        return None
    scope, node = guard.where
    divergence = analysis.function(scope).divergence
    conjuncts = _conjuncts(holder.test)
    kept = [c for c in conjuncts if not _rank_test(divergence.taint(c, node))]
    if len(kept) == len(conjuncts):
        return None
    if kept:
        test = " and ".join(ast_node_text(ctx, c) for c in kept)
        edit = replace_ast_node(ctx, holder.test, test)
    else:
        shift = statement.col_offset - holder.col_offset
        text = shift_continuation_lines(ast_node_text(ctx, statement), shift)
        edit = Edit(*ctx.ast_range(holder), text)
    return Fix(Applicability.SAFE, (edit,), "Call it on every rank (remove the rank test)")


def _rank_test(taint: Taint | None) -> bool:
    return taint is not None and by_rank(taint)


def _conjuncts(test: ast.expr) -> list[ast.expr]:
    """``[a, b, c]`` for ``a and b and c`` (one item for anything else)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [part for value in test.values for part in _conjuncts(value)]
    return [test]


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


def _lightning_before_2_1(ctx: CodeContext, analysis: ModuleAnalysis) -> bool:
    """``Trainer.save_checkpoint`` synchronises only from Lightning 2.1: before, plain DDP
    writes on rank 0 without a barrier. The project pins an older Lightning, or the module
    defines hooks that Lightning 2.0 removed."""
    if ctx.options.fact(LIGHTNING_BEFORE_2_1):
        return True
    return any(f.name in LIGHTNING_1X_HOOKS for f in analysis.nodes.functions())
