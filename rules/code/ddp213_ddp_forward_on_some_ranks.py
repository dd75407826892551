"""DDP213: a DistributedDataParallel model's forward run on some ranks only."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import replace

from ddplint.analysis.ddp_forwards import ForwardOnSomeRanks, ddp_forwards_on_some_ranks
from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import ast_node_text, replace_ast_node
from ddplint.finding import Applicability, Finding, Fix, Severity
from ddplint.rule import CodeRule
from ddplint.rules.code.ddp214_log_dir_on_some_ranks import guard_related, guard_text


class DdpForwardOnSomeRanks(CodeRule):
    """
    ## What it does
    Flags a call of a `DistributedDataParallel` model's forward that runs on some ranks
    only: `ddp_model(x)` or `ddp_model.forward(x)` under `if rank == 0:`, after a
    rank-guarded early exit or in a `@rank_zero_only` function, and a call that hands
    the wrapped model to a function of the same module that calls it
    (`if rank == 0: evaluate(ddp_model, loader)`). The wrapped model is a name or
    `self.attr` bound to `DistributedDataParallel(...)` in the same function (or class),
    or a parameter that callers hand a wrapped model in, in this module or (by the
    project model) another one: `evaluate(model, ...)` in `eval_utils.py` that returns
    early on ranks other than 0 and then calls `model(x)`, when `train.py` passes it
    `DistributedDataParallel(model)`. Where a training forward (one that feeds a
    backward) is skipped because some ranks jump out (a `break` or `return` taken on a
    rank test: early stopping decided on rank 0 alone), the finding sits at that jump,
    the root cause, and names the forward the other ranks go on running.

    Not flagged: a wrapper built with `broadcast_buffers=False`; calls of the inner
    module (`ddp_model.module(x)`) or of a model unwrapped first (`model = model.module`);
    a forward that feeds no backward and that every way reaches after a forward of the
    same model under `torch.no_grad()` with no forward with grad between (rank 0's
    second evaluation in a row: DDP broadcasts buffers only when the previous forward
    ran with grad); a model whose class, defined in the same file, holds no buffers
    (only layers such as `nn.Linear`, `nn.Embedding`, `nn.LayerNorm` and containers of
    them, no `register_buffer`, no batch norm: DDP then syncs nothing in the forward),
    also when the file's own callers hand it to the function; a model the analysis
    cannot tie to a DDP wrapper. It is built on the
    analysis core (the effects' implicit DDP forward, control dependence on the
    divergence analysis, rank guards).

    ## Why is this bad?
    DDP's forward is a collective: before running the module it broadcasts the module's
    buffers (BatchNorm statistics, registered buffers) from rank 0 whenever the previous
    forward ran with grad enabled (`broadcast_buffers=True` is the default), so the first
    evaluation after a training step synchronises even under `torch.no_grad()`. Run on
    rank 0 only, that broadcast waits for peers that never join: the job hangs until the
    timeout, or rank 0's broadcast pairs with the others' next collective.

    ## Example
    ```python
    model = DistributedDataParallel(model, device_ids=[local_rank])
    train(model, loader)
    if dist.get_rank() == 0:
        evaluate(model, val_loader)  # evaluate calls model(x)
    ```

    ## Use instead
    ```python
    if dist.get_rank() == 0:
        evaluate(model.module, val_loader)  # the plain module: no collective
    ```
    or evaluate on every rank (with a `DistributedSampler`) and reduce the metrics.

    ## Fix safety
    Unsafe: `model.module` skips the buffer broadcast, so it computes with this rank's
    own buffers. On rank 0 those are the ones DDP would broadcast, so the result is the
    same there; on another rank, or where the buffers must first be synchronised, it is
    not. No fix is offered where the forward runs in training (its result reaches a
    backward in the same function, with autograd on; for a function handed the model,
    the forward inside it): the inner module's backward does not reduce gradients, so
    the fix would turn a hang into ranks that silently train apart.

    ## References
    - PyTorch docs, `DistributedDataParallel` (`broadcast_buffers`: "Flag that enables
      syncing (broadcasting) buffers of the module at beginning of the forward function").
    - PyTorch source, `torch/nn/parallel/distributed.py`: `_pre_forward` calls
      `_sync_buffers()` when `will_sync_module_buffers()`.
    """

    code = "DDP213"
    name = "ddp-forward-on-some-ranks"
    summary = "a DDP model's forward (buffer broadcast) runs on some ranks only"
    severity = Severity.ERROR
    #: Preview since issue 23: under the bar of precision on blind code (docs/precision.md).
    default_enabled = False
    needs_peers = True
    fix_applicability = Applicability.UNSAFE
    needles = ("DistributedDataParallel",)

    reads_libcst = False

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        jumps: set[int] = set()  # one finding per jump: the first forward it skips
        for forward in ddp_forwards_on_some_ranks(ctx.analysis):
            if forward.trains and forward.exit is not None:
                if id(forward.exit) in jumps:
                    continue
                jumps.add(id(forward.exit))
            model = ast_node_text(ctx, forward.model)
            where = guard_text(forward.guard)
            if forward.wrapping is not None:
                origin = f"DistributedDataParallel, line {forward.wrapping.lineno}"
            else:
                origin = "a DistributedDataParallel model its callers pass in"
            if forward.inner is None:
                subject = f"`{model}` ({origin}) is called"
            else:
                subject = (
                    f"`{model}` ({origin}) is passed to a function that calls it (line "
                    f"{forward.inner.lineno}), and this runs"
                )
            message = (
                f"{subject} {where}: DDP's forward broadcasts the module's buffers from "
                "rank 0 when the previous forward ran with grad enabled (the default "
                "`broadcast_buffers=True`), so the ranks that skip it leave this one waiting "
                f"until the timeout. Call `{model}.module` here, or run it on every rank"
            )
            related = [guard_related(forward.guard)]
            if forward.inner is not None:
                related.append((forward.inner, "the forward it runs"))
            at: ast.AST = forward.call
            summary = "DDP forward (buffer broadcast) on some ranks only"
            if forward.trains and forward.exit is not None:
                # A training step the ranks that jump leave: the cause is the jump
                # (calling the inner module there would end gradient reduction).
                at = forward.exit
                jump = ast_node_text(ctx, forward.exit).split("\n", 1)[0]
                taken = guard_text(replace(forward.guard, runs_when=not forward.guard.runs_when))
                message = (
                    f"`{jump}`, taken {taken}, skips the training forward of `{model}` "
                    f"({origin}) on line {forward.call.lineno} that the other ranks go on "
                    "running: DDP's forward "
                    "and the backward's gradient all-reduce wait for every rank, so they "
                    "hang until the timeout. Decide the jump together (reduce the test's "
                    "value first, or broadcast the decision)"
                )
                related.append((forward.call, "the forward the other ranks run"))
                summary = f"`{jump}` on some ranks only skips the DDP training forward"
            yield ctx.ast_finding(
                self,
                at,
                message,
                summary=summary,
                related=related,
                fix=_fix(ctx, forward, model),
            )


def _fix(ctx: CodeContext, forward: ForwardOnSomeRanks, model: str) -> Fix | None:
    """``m(x)`` -> ``m.module(x)``; ``m.forward(x)`` -> ``m.module.forward(x)``;
    ``f(m)`` -> ``f(m.module)``, and so for the later forwards under the same guard that
    this one's no-grad run kept quiet (``shadowed``); none where the forward runs in
    training (its result reaches a backward with autograd on): the inner module has no
    gradient reduction."""
    if forward.trains or not isinstance(forward.model, (ast.Name, ast.Attribute)):
        return None
    edits = tuple(
        replace_ast_node(ctx, used, f"{model}.module")
        for used in (forward.model, *forward.shadowed)
    )
    message = f"Call the inner module (`{model}.module`): no buffer broadcast"
    return Fix(Applicability.UNSAFE, edits, message)
