"""DDP208: an optimizer, scheduler or scaler step on some ranks only."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ddplint.code.collectives.call_reach import SYNCING, StepEvent
from ddplint.code.collectives.ddp_wrappers import is_ddp_wrapper
from ddplint.code.context import CodeContext
from ddplint.code.steps.step_skips import SkipKind
from ddplint.code.syntax.conditions import guarding_conditions
from ddplint.code.syntax.messages import snippet
from ddplint.finding import Finding, Severity
from ddplint.rule import CodeRule

_STEP = frozenset({StepEvent.OPTIMIZER_STEP})
_SHARE_DECISION = "decide on every rank alike (all_reduce the flag first)"
_CONSEQUENCE = "replicas silently diverge under plain DDP (no error) and ZeRO/FSDP steps hang"


class StepOnSomeRanks(CodeRule):
    """
    ## What it does
    Flags `optimizer.step()`, `lr_scheduler.step()`, `scaler.step(optimizer)`,
    `self.optimizers().step()` and DeepSpeed `engine.step()` (directly, or a call of a
    same-module function that makes one) that runs only on some ranks: under an `if` on
    a rank predicate (`dist.get_rank() == 0`, `self.trainer.is_global_zero`,
    `accelerator.is_main_process`, ...) or on this rank's batch or loss
    (`if not torch.isnan(loss):`), in a `@rank_zero_only` function, or after a
    `continue` / `break` / `return` on this rank's batch or loss placed between backward
    and the step.

    A condition every rank computes alike is not flagged: gradient accumulation
    (`(step + 1) % k == 0`), a gradient norm taken after backward (the gradients are
    already averaged), a flag that went through `all_reduce`.

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
    name = "step-on-some-ranks"
    summary = "optimizer/scheduler/scaler step under a rank or rank-local-data condition"
    severity = Severity.ERROR
    #: Preview since issue 23: under the bar of precision on blind code (docs/precision.md).
    default_enabled = False
    needles = (".step(",)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        if _rpc_roles(ctx):
            return
        findings = [*self._guarded_steps(ctx), *self._skipped_steps(ctx)]
        yield from sorted(findings, key=lambda f: (f.line, f.column))

    def _guarded_steps(self, ctx: CodeContext) -> Iterator[Finding]:
        # A condition that already guards a backward or collective is DDP204's finding.
        reported = {
            s.guard.owner
            for s in ctx.step_skips.find(SYNCING)
            if s.kind is SkipKind.GUARDED and s.guard is not None
        }
        for call in ctx.index.nodes(cst.Call):
            reached = ctx.call_reach.reached(call, _STEP)
            if reached is None:
                continue
            why = self._why_some_ranks(ctx, call, reported)
            if why is None:
                continue
            reason, on_data = why
            through = f" (it reaches `{reached.label}`)" if reached.chain else ""
            remedy = _SHARE_DECISION if on_data else "step on every rank"
            message = (
                f"`{snippet(ctx, call)}`{through} runs only {reason}: the other ranks skip it, "
                f"so {_CONSEQUENCE}; {remedy}"
            )
            summary = f"`{snippet(ctx, call)}` runs only {reason}"
            yield ctx.finding(self, call, message, summary=summary)

    def _why_some_ranks(
        self, ctx: CodeContext, call: cst.Call, reported: set[cst.If | cst.IfExp | cst.While]
    ) -> tuple[str, bool] | None:
        """Why ``call`` runs on some ranks only, for a message, and whether the reason is
        rank-local data: the innermost rank or data condition on it, or the
        ``@rank_zero_only`` function holding it."""
        for guard in guarding_conditions(ctx.index, call):
            if guard.owner in reported:
                return None
            on_rank = ctx.rank_predicates.is_rank_dependent(guard.test)
            if on_rank or ctx.data_dependence.is_data_dependent(guard.test):
                when = "where" if not guard.negated else "where it is false that"
                kind = "a rank predicate" if on_rank else "this rank's batch/loss"
                return f"{when} `{snippet(ctx, guard.test)}` ({kind})", not on_rank
        for ancestor in ctx.index.ancestors(call):
            if isinstance(ancestor, cst.FunctionDef) and ctx.rank_predicates.is_rank_zero_only(
                ancestor
            ):
                return f"on rank 0 (`{ancestor.name.value}` is `@rank_zero_only`)", False
        return None

    def _skipped_steps(self, ctx: CodeContext) -> Iterator[Finding]:
        """Rank-local exits between backward and the step (before backward: DDP204)."""
        syncing = {s.statement for s in ctx.step_skips.find(SYNCING)}
        for skip in ctx.step_skips.find(_STEP):
            guarded = skip.kind is SkipKind.GUARDED  # the guarded step: _guarded_steps
            if guarded or skip.statement in syncing or skip.guard is None:
                continue
            statement = snippet(ctx, skip.statement)
            when = "unless" if skip.guard.negated else "when"
            condition = snippet(ctx, skip.guard.test)
            skipped = skip.skipped.describe()
            message = (
                f"`{statement}` {when} `{condition}` (this rank's batch/loss) skips {skipped} "
                f"on this rank only, so {_CONSEQUENCE}; {_SHARE_DECISION}"
            )
            summary = f"`{statement}` {when} `{condition}` skips {skipped} on this rank only"
            yield ctx.finding(self, skip.statement, message, summary=summary)


def _rpc_roles(ctx: CodeContext) -> bool:
    """A ``torch.distributed.rpc`` program with no data-parallel replicas (a parameter
    server, trainers and workers with roles): ranks step different things by design."""
    if not ctx.names.imports_module("torch.distributed.rpc"):
        return False
    return not any(is_ddp_wrapper(ctx.names, call) for call in ctx.index.nodes(cst.Call))
