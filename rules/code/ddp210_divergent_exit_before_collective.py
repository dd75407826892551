"""DDP210: retired; an early exit on rank-local state is DDP219's finding."""

from __future__ import annotations

from collections.abc import Iterator

from ddplint.code.collectives.call_reach import Reached, StepEvent
from ddplint.code.collectives.divergent_exits import DivergentExit, ExitKind
from ddplint.code.context import CodeContext
from ddplint.code.syntax.messages import snippet
from ddplint.code.values.divergence import Source
from ddplint.finding import Finding, Severity
from ddplint.needles import COLLECTIVE_CALL_NEEDLES, COLLECTIVE_NEEDLES
from ddplint.rule import CodeRule
from ddplint.rules.code.ddp204_data_dependent_skip import consequence_of_skipping


def skipped_text(ctx: CodeContext, reached: Reached) -> str:
    """``loss.backward()`` / ``torch.distributed.all_reduce``, with the call chain."""
    label = snippet(ctx, reached.target) if reached.kind is StepEvent.BACKWARD else reached.label
    if reached.chain:
        return f"`{label}` (through `{'` -> `'.join(reached.chain)}`)"
    return f"`{label}`"


def skip_consequence(reached: Reached) -> str:
    """What the peers of a rank that skipped ``reached`` run into."""
    return consequence_of_skipping(reached.kind is StepEvent.BACKWARD)


class DivergentExitBeforeCollective(CodeRule):
    """
    ## What it does
    Retired: reports nothing. Its question, an exit or a collective decided by a value
    that differs between ranks (this rank's own share of a later reduction or gather,
    a clock or memory probe), is the one DDP219 asks of the analysis core for every
    such value, the rank included, and DDP219 reports it at the root cause (the
    `return` / `break` / `continue`, or the test). Asked beside DDP219, DDP210 would
    report each of those root causes a second time; one finding per root cause, so the
    code stays (a `# noqa: DDP210` or a selection of it is still understood) and its
    findings are DDP219's. Select DDP219 (preview) for them.

    ## Why is this bad?
    Collectives pair by order. The rank whose list is empty, whose clock ran out first or
    whose file check answered differently leaves; its peers enter the collective and wait
    for it until the timeout (10 minutes with NCCL by default), or pair it with the
    leaving rank's next collective and go on with wrong data.

    ## Example
    ```python
    def gather_stats(local_stats):
        if not local_stats:
            return {}
        out = [None] * dist.get_world_size()
        dist.all_gather_object(out, local_stats)
        return merge(out)
    ```

    ## Use instead
    ```python
    def gather_stats(local_stats):
        out = [None] * dist.get_world_size()
        dist.all_gather_object(out, local_stats)  # every rank, empty or not
        if not any(out):
            return {}
        return merge(out)
    ```
    or decide the exit together: `all_reduce` a flag with `MAX` and exit on its result.

    ## Fix safety
    No automatic fix: where every rank should join the collective is the author's call.

    ## References
    - PyTorch docs, `torch.distributed`: collectives "must be called by all processes in
      the group".
    - PyTorch docs, `torch.distributed.all_gather_object`.
    """

    code = "DDP210"
    name = "divergent-exit-before-collective"
    summary = "retired: an exit on rank-local state is reported by DDP219"
    severity = Severity.ERROR
    #: Preview since issue 23: under the bar of precision on blind code (docs/precision.md).
    default_enabled = False
    needles = COLLECTIVE_NEEDLES
    more_needles = (COLLECTIVE_CALL_NEEDLES,)

    reads_libcst = False
    retired_for = "DDP219"

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        """Nothing: DDP219 reports each of these root causes."""
        return iter(())


# The messages DDP211 and DDP218 (still on the LibCST layer) give their findings.


def _reason(ctx: CodeContext, found: DivergentExit) -> str:
    divergent = found.divergent
    if divergent.source is Source.CONTRIBUTED:
        line = ctx.range_of(divergent.origin)[0]
        return f"`{divergent.key}` is this rank's own share of the collective on line {line}"
    if divergent.source is Source.PROBE:
        return f"`{snippet(ctx, divergent.origin)}` answers on each rank for itself"
    if divergent.source is Source.FILE_CHECK:
        return (
            f"each rank asks `{snippet(ctx, divergent.origin)}` at its own moment (a rank "
            "that asks after another one wrote the file, or on a node-local disk, answers "
            "differently)"
        )
    return f"it reads {divergent.source.value}"


def divergent_exit_message(ctx: CodeContext, found: DivergentExit) -> str:
    """The whole explanation of a divergent exit or guarded collective."""
    condition = snippet(ctx, found.guard.test)
    when = "unless" if found.guard.negated else "when"
    skipped = skipped_text(ctx, found.skipped)
    reason = _reason(ctx, found)
    consequence = skip_consequence(found.skipped)
    remedy = "decide together first (all_reduce the flag with MAX) or reach it on every rank"
    if found.kind is ExitKind.GUARDED:
        return (
            f"{skipped} runs only {when} `{condition}`, and {reason}: on a rank that skips "
            f"it, {consequence}; {remedy}"
        )
    statement = snippet(ctx, found.statement)
    return (
        f"`{statement}` {when} `{condition}` skips {skipped} on some ranks only, because "
        f"{reason}: {consequence}; {remedy}"
    )


_SUMMARY_REASONS = {
    Source.CONTRIBUTED: "this rank's own share",
    Source.PROBE: "a local probe (clock, memory)",
    Source.FILE_CHECK: "a per-rank file-system check",
}


def divergent_exit_summary(found: DivergentExit) -> str:
    """The short clause: what is skipped, decided by what."""
    reason = _SUMMARY_REASONS.get(found.divergent.source, found.divergent.source.value)
    if found.kind is ExitKind.GUARDED:
        return f"collective reached only where {reason} says so"
    return f"exit on {reason} skips a collective on some ranks"
