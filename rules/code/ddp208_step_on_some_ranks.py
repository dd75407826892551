"""DDP208: an optimizer, scheduler or scaler step on some ranks only."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.steps import StepParting, steps_on_some_ranks
from ddplint.code.context import CodeContext
from ddplint.finding import Finding, Severity
from ddplint.rule import CodeRule
from ddplint.rules.code.ddp219_ranks_part_before_collective import header_text, reason_text

_SHARE_DECISION = "decide on every rank alike (all_reduce the flag first)"
_CONSEQUENCE = "replicas silently diverge under plain DDP (no error) and ZeRO/FSDP steps hang"


class StepOnSomeRanks(CodeRule):
    """
    ## What it does
    Flags the test that makes an optimizer, scheduler or gradient-scaler step run on
    some ranks only: `opt.step()`, `scheduler.step()`, `scaler.step(opt)`,
    `self.optimizers().step()` or a DeepSpeed engine's `step()` (directly, or through
    a function of the same module) under an `if` / `while` (or a `continue` / `break`
    / `return` before it) whose answer may differ between ranks: it reads the rank
    (`dist.get_rank() == 0`, `self.trainer.is_global_zero`,
    `accelerator.is_main_process`), this rank's model output or loss
    (`if not torch.isnan(loss):`), or a value set under such a test; or a
    `@rank_zero_only` function that steps. The finding sits at the test and names the
    step as its related place.

    What steps is decided by what the object is, not by its name: made by an optimizer
    library (`torch.optim.AdamW(...)`, a `torch.optim.lr_scheduler` class,
    `GradScaler()`, `transformers`' schedule factories, `deepspeed.initialize`),
    handed back by `accelerator.prepare`, annotated as one, or a LightningModule's own
    `self.optimizers()` / `self.lr_schedulers()`.

    Not flagged: a test every rank answers alike (gradient accumulation
    `(step + 1) % k == 0`, a global step against its budget, the world size, a flag
    that went through `all_reduce` or `broadcast`); a test whose every branch takes the
    same step; a test whose branches already issue different collectives (DDP219's
    finding there: the ranks part at that test); a step whose optimizer's listed
    parameters are broadcast to every rank right after the branches meet (rank 0
    updates a Lagrange multiplier, `dist.broadcast(self.log_lambda, src=0)`); a
    `torch.distributed.rpc` program without data-parallel replicas.

    This rule is built on the analysis core (control dependence on a flow-sensitive
    divergence analysis).

    ## Why is this bad?
    DDP keeps replicas identical only because every rank applies the same averaged
    gradients with the same optimizer step. A rank that skips a step (or steps alone)
    keeps different weights from then on: the model silently diverges across ranks and
    no error is raised. Under DeepSpeed ZeRO or FSDP the step itself gathers or
    partitions parameters, so the ranks that step wait for the others: a hang.

    ## Example
    ```python
    loss.backward()
    if torch.isfinite(loss):
        optimizer.step()
    ```

    ## Use instead
    ```python
    loss.backward()
    finite = torch.isfinite(loss).float()
    dist.all_reduce(finite, op=dist.ReduceOp.MIN)  # every rank decides alike
    if finite.item():
        optimizer.step()
    ```

    ## Fix safety
    No automatic fix: the decision has to be shared between ranks first.

    ## References
    - PyTorch docs: `DistributedDataParallel` and the "Distributed Data Parallel" design
      note (gradients are averaged in backward; every rank's optimizer then applies the
      same update).
    - DeepSpeed docs: `engine.step()` (ZeRO partitions and gathers parameters in it).
    """

    code = "DDP208"
    reads_libcst = False
    name = "step-on-some-ranks"
    summary = "optimizer/scheduler/scaler step under a rank or rank-local-data condition"
    severity = Severity.ERROR
    #: Preview since issue 23: under the bar of precision on blind code (docs/precision.md).
    default_enabled = False
    needs_peers = True
    needles = (".step(",)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        for parting in steps_on_some_ranks(ctx.analysis):
            step = _step_text(parting)
            yield ctx.ast_finding(
                self,
                parting.cause,
                _message(parting, step),
                summary=f"{step} runs on some ranks only",
                related=[(parting.step, f"{step}, which some ranks skip")],
            )


def _step_text(parting: StepParting) -> str:
    step = f"`{header_text(parting.step)}`"
    if parting.through is not None:
        step += f" (it reaches `{parting.through}`)"
    return step


def _message(parting: StepParting, step: str) -> str:
    remedy = _SHARE_DECISION if parting.on_data else "step on every rank"
    if isinstance(parting.cause, ast.expr):
        where = f"on one rank only (the function is decorated `@{header_text(parting.cause)}`)"
    else:
        where = f"only as `{header_text(parting.test)}` decides"
    return (
        f"{step} runs {where}, which differs between ranks because "
        f"{reason_text(parting.taint)}: the other ranks skip it, so {_CONSEQUENCE}; {remedy}"
    )
