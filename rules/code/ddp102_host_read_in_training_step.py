"""DDP102: a tensor read on the host in every training step (opt-in)."""

from __future__ import annotations

from collections.abc import Iterator

from ddplint.analysis.step_syncs import SyncKind, cost_of
from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import ast_node_text
from ddplint.finding import Finding, Severity
from ddplint.rule import CodeRule

#: Longest call text shown whole in a message.
_SHOWN_LENGTH = 60


class HostReadInTrainingStep(CodeRule):
    """
    ## What it does
    Flags a device-to-host read of a tensor (`t.item()`, `t.cpu()`, `t.tolist()`,
    `t.numpy()`, `t.to("cpu")`, `float(t)` / `int(t)` / `bool(t)` of a tensor) in code
    that runs on every training step: a LightningModule's `training_step` and per-batch
    hooks (`on_train_batch_end`, `on_before_optimizer_step`, ...), a callback's step
    hooks (Lightning `Callback`, Hugging Face `TrainerCallback.on_step_end`, ...), a
    `Trainer` subclass's `training_step` / `compute_loss`, the body of a training loop,
    and the functions of the same file those call. Not a module's `forward` (nor what
    only a `forward` calls): a forward runs at inference too, and its reads often shape
    the computation (a data-dependent length, an expert's index); DDP101 and DDP103
    report their waits there.

    Opt-in (preview): such reads are common and often intended (a progress bar, a
    data-dependent shape). Select it with `--select DDP102` or `--preview`.

    Not flagged: a read under a condition that holds once in a while
    (`if batch_idx % log_every == 0:`, `if batch_idx == 0:`; a flag's name, such as
    `if self.should_log:`, says nothing of how often it holds),
    `float(x)` / `int(x)` where nothing in the function says `x` is a tensor, a read of
    a value already on the host (`torch.tensor(3.0).item()` created without a device,
    NumPy values, the second read of `x.cpu().numpy()`, the unpacked parts of a tensor
    copied with `.cpu()`, a tensor a function of the same file returns built without a
    device, a cast that keeps the device, `x.to(torch.int64)`, the items a `DataLoader`
    made in the function yields that the loop never moves, a field of the class every
    assignment of which is such a value), a read after another wait of the same pass
    with no new device work between, in a function or in a script's module-level loop;
    where some ways ran the step's backward, those ways alone (an evaluation pass of the
    same loop that skips the backward does not count; nor the rare way of a periodic
    test, `if step % k == 0: save(model)`, nor of a helper that returns one) (the queue
    is already
    drained: the wait is a read, `float(x.sum())`, an upload, a test of a tensor such
    as `if not torch.isfinite(loss):` or `if loss > 1e4:`, a tensor known to be on the
    device given to `float`/`int`/`str`/`print` or formatted in an f-string or with
    `%` (not a logger's lazy arguments), a backward run in anomaly mode with its NaN
    check (`with torch.autograd.set_detect_anomaly(True):`),
    a `torch.cuda.synchronize()` (DDP101 reports that one), a gradient scaler's
    `step(optimizer)` (it reads its inf/NaN check on the host; the scaler known by the
    `GradScaler(...)` that made it, in this file), a DeepSpeed engine's `step()` (its
    throughput timer, enabled and synchronized by default, synchronises the device at
    the end of every step when `deepspeed.initialize` got no `training_data` and the
    file runs the engine's own forward, `engine(batch)`; not where a config in the file
    turns the timer off; the engine known from
    `engine, *_ = deepspeed.initialize(...)` in this file or a field or factory of
    another project module), a blocking `dist.barrier()` on a group that can be NCCL
    (not a known gloo one), a kernel whose result's size the device computes
    (`mask.nonzero()`, `torch.unique(x)`, `x[mask]` with a boolean mask, a mask's
    `.any()` tested in an `if`) or a call of the module's function that
    returns after a wait on every path, or a call that may end with a wait (no
    submodule or helper called after it): a function of this or another project module
    whose code (or the call its last work makes) reads a tensor on the host, sizes a
    result on the device (`torch.nonzero`, `x[mask]`), tests a reduction
    (`if mask.sum() > 0:`) or uploads a tensor built on the host
    (`torch.tensor([0], device=d)`, `torch.eye(n).cuda()`), an instance of a project class
    whose `forward` does (`loss = criterion(out, y)` with `criterion = MaskedLoss()`,
    `model = DDP(Net().cuda())`, `self.criterion` assigned one), a synchronous Horovod
    collective (`hvd.allgather(x)`), the `step()` of a DeepSpeed engine where a config
    the project ships enables fp16 (its overflow check) and of an optimizer an
    `Accelerator` prepared under fp16 mixed precision (given, an option's default, or a
    config or launch script of the project: its `GradScaler` reads on the host); a model
    handed in as a parameter is unknown and drains nothing; a few kernels on values
    already computed, such as `(a - b).mean()` or `x.topk(k)`, a `torch.nn` layer built
    from host values and called (`softmax = nn.Softmax(dim=-1)`), gradient clipping and
    the `step()` of an
    optimizer made in the file or known to the project (but not kernels in a loop that
    walks a tensor in pieces, `for i in range(chunks):` over `t[:, i * n:(i + 1) * n]`:
    new work each turn; views such as `.squeeze()` or `.view(-1)` are no work even there), a
    collective of values already computed (`dist.all_reduce(loss)`, not one of each
    parameter a loop walks), a method of a Python list (`found.append(t)`),
    host work such as `meter.update(loss.item(), args.batch_size)`
    with `args` the parsed command line, and a helper of the module that queues no
    device work are no new work), a
    read that fills a field of the module once (`if self.scale is None:`), a read that
    runs only now and then (in an `except` handler, on the rare way of a periodic test
    on a counter or of a time interval, after a function's early return on a flag every
    call hands a periodic test, `evaluate(..., should_val=step % k == 0)`, once under a
    flag the guarded code sets, `if not self.ready: self.prepare()`, in the
    single-process arm of the run's switch: the arm whose other way wraps the model in
    DDP or reduces; in a module that only programs starting no process
    group run: no `init_process_group`, DDP wrap, `Accelerator`, Lightning `Trainer` in the
    script or the project modules it imports), a loop nested in the training loop and run under
    `torch.no_grad()`, validation / test / epoch hooks, and reads under a rank guard
    (DDP104 reports those). What a helper or a data loader is called decides nothing: a
    helper called on every pass of the training loop reads every step. This rule is
    built on the analysis core.

    ## Why is this bad?
    CUDA work is asynchronous: the host queues kernels and runs ahead. A device-to-host
    copy makes the CPU wait until the GPU has drained its queue; the next step's
    kernels are queued only after that, so the GPU idles while Python builds them. Paid
    on every step, on every rank; with DDP the gradient all-reduce of the step is in the
    queue too, so the wait includes communication.

    ## Example
    ```python
    class LitModel(pl.LightningModule):
        def training_step(self, batch, batch_idx):
            loss = self.loss_fn(self(batch["x"]), batch["y"])
            self.log("train_loss", loss.item())
            return loss
    ```

    ## Use instead
    ```python
    class LitModel(pl.LightningModule):
        def training_step(self, batch, batch_idx):
            loss = self.loss_fn(self(batch["x"]), batch["y"])
            self.log("train_loss", loss)  # Lightning reads it when it logs
            return loss
    ```
    or read it every N steps (`if batch_idx % 50 == 0:`).

    ## Fix safety
    No automatic fix: the value may be needed on the host (a shape, a branch).

    ## References
    - PyTorch docs, CUDA semantics: asynchronous execution.
    - PyTorch Performance Tuning Guide: "Avoid unnecessary CPU-GPU synchronization".
    - Lightning docs: `LightningModule.log` accepts tensors.
    """

    code = "DDP102"
    name = "host-read-in-training-step"
    summary = "tensor read on the host (`.item()`, `.cpu()`, ...) every training step"
    severity = Severity.WARNING
    default_enabled = False
    needs_peers = True
    needles = (".item(", ".cpu(", ".tolist(", ".numpy(", '"cpu"', "'cpu'", "float(", "int(")

    reads_libcst = False

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        for sync in ctx.step_syncs:
            if sync.kind is not SyncKind.READ or sync.guard is not None or sync.path.forward:
                continue
            spelled = " ".join(ast_node_text(ctx, sync.call).split())
            if len(spelled) > _SHOWN_LENGTH:
                spelled = " ".join(ast_node_text(ctx, sync.call.func).split()) + "(...)"
            message = (
                f"`{spelled}` in {sync.path.describe()} reads a tensor on the host "
                f"every training step: {cost_of(sync.kind)} (every step, every rank); log "
                "the tensor itself or read it every N steps"
            )
            summary = f"`{spelled}` waits for the GPU every training step"
            yield ctx.ast_finding(self, sync.call, message, summary=summary)
