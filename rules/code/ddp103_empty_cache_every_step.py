"""DDP103: ``torch.cuda.empty_cache()`` on every training step (opt-in)."""

from __future__ import annotations

from collections.abc import Iterator

from ddplint.analysis.step_syncs import SyncKind, cost_of
from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import ast_node_text, remove_ast_call_statement
from ddplint.finding import Applicability, Finding, Fix, Severity
from ddplint.rule import CodeRule


class EmptyCacheEveryStep(CodeRule):
    """
    ## What it does
    Flags `torch.cuda.empty_cache()` (and `torch.xpu` / `torch.mps` / DeepSpeed
    `get_accelerator().empty_cache()`) in code that runs on every training step: the
    body of a training loop that calls `backward()`, a LightningModule's
    `training_step` and per-batch hooks, a callback's step hooks (`on_train_batch_end`,
    `on_step_end`, ...), a `Trainer` subclass's `training_step` / `compute_loss`, a
    `forward` of any module class, and the functions of the same file those call. What
    a class is comes from its bases (`nn.Module`, `LightningModule`, Lightning's and
    Hugging Face's callback classes, Hugging Face's `Trainer`), never from its name.

    Opt-in (preview). Not flagged: a call under a condition that holds once in a while
    (`if step % 1000 == 0:`), one in an `except` handler (an out-of-memory fallback; a
    `finally` runs every step and is flagged), one under a rank guard (DDP104),
    validation / epoch hooks. This rule is built on the analysis core.

    ## Why is this bad?
    `empty_cache()` returns the caching allocator's unused blocks to the driver. The
    next step needs the same memory again and gets it through `cudaMalloc`, which
    synchronises the device, and the release itself waits for the blocks' pending
    work. So every step pays allocator calls and a device synchronisation, for memory
    that the process would have reused anyway; it does not lower the peak that causes
    out-of-memory errors.

    ## Example
    ```python
    for batch in loader:
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch.cuda.empty_cache()
    ```

    ## Use instead
    ```python
    for step, batch in enumerate(loader):
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    ```
    (set `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` against fragmentation).

    ## Fix safety
    The fix removes the statement (a block left empty gets `pass`). It is unsafe: a
    process that shares the GPU with another one may rely on the release. Apply with
    `--unsafe-fixes`.

    ## References
    - PyTorch docs, CUDA semantics: memory management (`empty_cache`,
      `PYTORCH_CUDA_ALLOC_CONF`).
    - PyTorch `torch.cuda.empty_cache` documentation.
    """

    code = "DDP103"
    name = "empty-cache-every-step"
    summary = "`empty_cache()` every training step (re-allocation through cudaMalloc)"
    severity = Severity.WARNING
    default_enabled = False
    needs_peers = True
    fix_applicability = Applicability.UNSAFE
    needles = ("empty_cache",)
    reads_libcst = False

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        for sync in ctx.step_syncs:
            if sync.kind is not SyncKind.EMPTY_CACHE or sync.guard is not None:
                continue
            spelled = " ".join(ast_node_text(ctx, sync.call).split())
            message = (
                f"`{spelled}` in {sync.path.describe()} runs every training step: "
                f"{cost_of(sync.kind)} (every step); the memory is not freed for good, the "
                "peak stays the same"
            )
            edit = remove_ast_call_statement(ctx, sync.call)
            fix = Fix(Applicability.UNSAFE, (edit,), "Remove the cache release") if edit else None
            summary = f"`{spelled}` makes the next step re-allocate (sync)"
            yield ctx.ast_finding(self, sync.call, message, fix=fix, summary=summary)
