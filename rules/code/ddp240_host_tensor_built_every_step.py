"""DDP240: a tensor built from host data on the GPU every training step (preview)."""

from __future__ import annotations

from collections.abc import Iterator

from ddplint.analysis.step_uploads import step_uploads
from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import ast_node_text
from ddplint.finding import Finding, Severity
from ddplint.rule import CodeRule

_SHOWN_LENGTH = 60


class HostTensorBuiltEveryStep(CodeRule):
    """
    ## What it does
    Flags `torch.tensor(values, device=...)` / `torch.as_tensor(values, device=...)` in
    a forward path (`forward` / `training_step` of an `nn.Module` or `LightningModule`
    and the functions of the module they call, a `Trainer`'s `compute_loss`) when
    `values` is made on the host: a list, tuple or comprehension, a number, `len(...)`,
    a shape, or a name last assigned one of those before the call. Not flagged: a CPU
    target (`"cpu"`, `torch.device("cpu")`), data that may already be a tensor, a call
    under an occasional condition (`if step % 100 == 0:`), one that fills a cache of the
    module (`if self.table is None:`, the first step only), one after a host read or
    another upload of the same pass with no new device work between (the queue is
    already drained; a few kernels on values already computed are no new work), one
    whose stall the host takes right after anyway (the next thing done to the queue on
    every way on is a host read or a blocking collective, `hvd.allgather(copy)`, not
    another copy), one
    that runs only while exporting or tracing (`if torch.onnx.is_in_onnx_export():`),
    in an `except` handler or a single-process arm, in a module that only programs starting
    no process group run, evaluation steps, test files. A name is judged by the value
    bound to it before the call (a re-bound name is its new value). This rule is built on
    the analysis core.

    Opt-in, with the other host-sync rules (DDP101-DDP104). Preview: 27 of 36 judged
    findings right on repositories it was not built on (75%): a module that only ever
    runs at inference (a vendored annotator, a post-processor) is on a forward path too,
    and a fallback branch that runs once in a while (an empty mask) is reported as if it
    ran every step.

    ## Why is this bad?
    Building the tensor copies pageable host memory to the device, and PyTorch ends that
    copy with a stream synchronisation: the CPU waits for every kernel queued before it,
    every step, on every rank. The GPU then idles while the CPU queues the rest of the
    step; under DDP the slowest rank's stall delays every gradient all-reduce.

    ## Example
    ```python
    class Encoder(nn.Module):
        def forward(self, src, spatial_shapes):
            shapes = torch.as_tensor(spatial_shapes, dtype=torch.long, device=src.device)
            ...
    ```

    ## Use instead
    ```python
    class Encoder(nn.Module):
        def forward(self, src, spatial_shapes: torch.Tensor):  # built once by the caller
            ...
    ```
    or keep a constant as a registered buffer (`self.register_buffer(...)`), or build it
    from pinned memory with `non_blocking=True` (`torch.tensor(v).pin_memory().to(device,
    non_blocking=True)`).

    ## Fix safety
    No automatic fix: where the values can be built once depends on the model.

    ## References
    - PyTorch Performance Tuning Guide: "Avoid unnecessary CPU-GPU synchronization"
      (memory copies such as `tensor.cuda()` / `tensor.to(device)`, which
      `torch.tensor(values, device=...)` makes, are listed among the operations that
      synchronise).
    - PyTorch docs, CUDA semantics: "Use pinned memory buffers" (pageable copies are
      synchronous); CUDA Runtime API, "API synchronization behavior" (a copy from
      pageable host memory to the device performs a stream synchronisation first).
    - IDEA-Research/DINO `models/dino/deformable_transformer.py` and
      facebookresearch/detr `models/detr.py` (`torch.as_tensor([num_boxes], ...,
      device=...)` in the criterion's forward, every step).
    """

    code = "DDP240"
    name = "host-tensor-built-every-step"
    summary = "tensor built from host data on the device every training step"
    severity = Severity.WARNING
    default_enabled = False
    needs_peers = True
    needles = ("tensor(",)
    required = ("device",)

    reads_libcst = False

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        for upload in step_uploads(ctx.analysis, ctx.step_paths, ctx.device_queue):
            text = " ".join(ast_node_text(ctx, upload.call).split())
            if len(text) > _SHOWN_LENGTH:
                text = ast_node_text(ctx, upload.call.func) + "(...)"
            message = (
                f"`{text}` in {upload.path.describe()} copies host data to the device "
                "every training step, and the copy ends in a stream synchronisation: the CPU "
                "waits for every kernel queued before it (every step, every rank); build it "
                "once (a buffer, an argument) or from pinned memory with `non_blocking=True`"
            )
            summary = f"`{text}` copies host data to the device every step"
            yield ctx.ast_finding(self, upload.call, message, summary=summary)
