"""DDP213: a DistributedDataParallel model's forward run on some ranks only."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ddplint.code.collectives.wrapped_forwards import WrappedForward
from ddplint.code.context import CodeContext
from ddplint.code.edits.edits import replace_node
from ddplint.code.syntax.names import dotted_name
from ddplint.finding import Applicability, Finding, Fix, Severity
from ddplint.rule import CodeRule


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
    `DistributedDataParallel(model)`.

    Not flagged: a wrapper built with `broadcast_buffers=False`; calls of the inner
    module (`ddp_model.module(x)`); a model the analysis cannot tie to a DDP wrapper.

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
    not.

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
    fix_applicability = Applicability.UNSAFE
    needles = ("DistributedDataParallel",)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        reachability = ctx.rank_reachability
        for forward in ctx.wrapped_forwards.find():
            guard = reachability.guard_of(forward.call)
            if guard is None:
                continue
            where = reachability.describe(guard)
            if forward.wrapper is not None:
                origin = f"DistributedDataParallel, line {ctx.range_of(forward.wrapper)[0]}"
            else:
                origin = "a DistributedDataParallel model its callers pass in"
            if forward.inner is None:
                subject = f"`{forward.model}` ({origin}) is called"
            else:
                inner_line = ctx.range_of(forward.inner)[0]
                subject = (
                    f"`{forward.model}` ({origin}) is passed to a "
                    f"function that calls it (line {inner_line}), and this runs"
                )
            message = (
                f"{subject} {where}: DDP's forward broadcasts the module's buffers from "
                "rank 0 when the previous forward ran with grad enabled (the default "
                "`broadcast_buffers=True`), so the ranks that skip it leave this one waiting "
                f"until the timeout. Call `{forward.model}.module` here, or run it on every rank"
            )
            yield ctx.finding(
                self,
                forward.call,
                message,
                self._fix(ctx, forward),
                summary="DDP forward (buffer broadcast) on some ranks only",
            )

    @staticmethod
    def _fix(ctx: CodeContext, forward: WrappedForward) -> Fix | None:
        """``m(x)`` -> ``m.module(x)``; ``f(m)`` -> ``f(m.module)``."""
        call = forward.call
        if forward.inner is None:
            target: cst.CSTNode = call.func
            if isinstance(call.func, cst.Attribute) and call.func.attr.value == "forward":
                target = call.func.value
        else:
            target = next(
                (a.value for a in call.args if dotted_name(a.value) == forward.model), call
            )
            if target is call:
                return None
        edit = replace_node(ctx, target, f"{forward.model}.module")
        message = f"Call the inner module (`{forward.model}.module`): no buffer broadcast"
        return Fix(Applicability.UNSAFE, (edit,), message)
