"""DDP104: a host synchronisation on some ranks only, every training step (opt-in)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.step_syncs import cost_of
from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import ast_node_text
from ddplint.finding import Finding, Severity
from ddplint.rule import CodeRule
from ddplint.rules.code.ddp214_log_dir_on_some_ranks import guard_related, guard_text

#: Longest call text shown whole in a message.
_SHOWN_LENGTH = 60


class HostSyncOnSomeRanks(CodeRule):
    """
    ## What it does
    Flags a host synchronisation (a tensor read such as `loss.item()` / `.cpu()`, or
    `torch.cuda.empty_cache()`) under a rank guard (`if trainer.is_global_zero:`,
    `if rank == 0:`, a `@rank_zero_only` function) in code that runs on every training
    step: training-loop bodies, a LightningModule's
    `training_step` and per-batch hooks, callback step hooks (`on_train_batch_end`,
    `on_step_end`, `on_before_optimizer_step`), `Trainer.training_step` /
    `compute_loss` overrides, a module's `forward` (what a class is comes from its bases).

    Opt-in (preview). Not flagged: guarded work under a condition that holds once in a
    while (`if trainer.is_global_zero and step % 100 == 0:`, or at the log interval or the
    epoch's last batch, `i_accum % n == 0 or i_accum + 1 == batches`), a read right after one every
    rank made with no device work between (the queue is already drained), a read right
    before one every rank makes on every way on, with no device work every rank queues
    between (the others wait for the same queue there: `if rank == 0: print(loss.item())`
    then `total += loss.item()`; what rank 0 queues after its read is its own work),
    validation /
    epoch hooks, a test every rank answers alike (the loop's own step counter, a flag
    made to agree by a collective: the divergence analysis decides what differs between
    ranks, never a name). This rule is built on the analysis core.

    ## Why is this bad?
    Only the guarded rank stalls: it waits for its GPU queue to drain (or, for
    `empty_cache()`, re-allocates through `cudaMalloc` on the next step) and queues its
    next step late. The other ranks then wait for it at the step's next collective
    (DDP's gradient all-reduce, ZeRO-3's parameter all-gather in the next forward), so
    the whole job runs at the pace of the slowest rank, every step. DeepSpeed ZeRO-3
    says the same of cache flushes: it warns when the allocator flushed its cache and
    asks for `get_accelerator().empty_cache()` calls so "that all ranks flush their
    caches at the same time".

    ## Example
    ```python
    class LossPrinter(pl.Callback):
        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            if trainer.is_global_zero:
                print(outputs["loss"].item())
    ```

    ## Use instead
    ```python
    class LossPrinter(pl.Callback):
        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            if trainer.is_global_zero and batch_idx % 100 == 0:
                print(outputs["loss"].item())
    ```

    ## Fix safety
    No automatic fix: how often to read is the author's choice.

    ## References
    - PyTorch docs, CUDA semantics: asynchronous execution, memory management.
    - DeepSpeed `deepspeed/runtime/zero/stage3.py`: the allocator-cache-flush warning.
    """

    code = "DDP104"
    name = "host-sync-on-some-ranks"
    summary = "host synchronisation on some ranks only, every training step"
    severity = Severity.WARNING
    default_enabled = False
    needs_peers = True
    needles = ("empty_cache", ".item(", ".cpu(", ".tolist(", ".numpy(", ".to(")
    reads_libcst = False

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        for sync in ctx.step_syncs:
            if sync.guard is None:
                continue
            spelled = _spelled(ctx, sync.call)
            message = (
                f"`{spelled}` in {sync.path.describe()} runs {guard_text(sync.guard)}, every "
                f"training step: {cost_of(sync.kind)}; the other ranks then wait for this "
                "one at the step's next collective, so the whole job runs at its pace"
            )
            summary = f"`{spelled}` stalls one rank every step; the others wait"
            yield ctx.ast_finding(
                self, sync.call, message, summary=summary, related=[guard_related(sync.guard)]
            )


def _spelled(ctx: CodeContext, call: ast.Call) -> str:
    """The call as written on one line, shortened: ``float(loss)``, ``x.item()``."""
    text = " ".join(ast_node_text(ctx, call).split())
    if len(text) <= _SHOWN_LENGTH:
        return text
    return " ".join(ast_node_text(ctx, call.func).split()) + "(...)"
