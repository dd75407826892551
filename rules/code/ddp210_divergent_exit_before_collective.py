"""DDP210: an early exit on rank-local state before a collective."""

from __future__ import annotations

from collections.abc import Iterator

from ddplint.code.collectives.divergent_exits import DivergentExit, ExitKind
from ddplint.code.context import CodeContext
from ddplint.code.syntax.messages import snippet
from ddplint.code.values.divergence import Source
from ddplint.finding import Finding, Severity
from ddplint.needles import COLLECTIVE_CALL_NEEDLES, COLLECTIVE_NEEDLES
from ddplint.rule import CodeRule
from ddplint.rules.code.ddp204_data_dependent_skip import skip_consequence, skipped_text

_SOURCES = frozenset({Source.CONTRIBUTED, Source.PROBE})


class DivergentExitBeforeCollective(CodeRule):
    """
    ## What it does
    Flags, in any function, a `return` / `continue` / `break` taken on a value that
    differs between ranks, placed before a collective (or `backward()`) that the other
    ranks still run, and a collective itself under such a condition. A value differs
    between ranks when it is:
    - what this rank hands to a reducing or gathering collective later in the function
      (`if not local_stats: return {}` before `all_gather_object(out, local_stats)`;
      `if len(self.inflight) == 0: return 0` before an `all_reduce` of that count): a
      rank reduces or gathers a value precisely because it is its own;
    - a local probe: the clock (`time.time() - start > limit`), free memory. (A
      file-system check such as `os.path.exists` is DDP218's, opt-in.)

    Not flagged: conditions on values every rank shares (constants, configuration, the
    world size, a result of `all_reduce` / `all_gather_object` / `broadcast`); the shape
    of a tensor that a tensor collective requires to match anyway (`if grad.numel() == 0`
    before `all_reduce(grad)`); a branch that issues a collective of its own before it
    leaves; conditions on the rank itself (DDP201) or on this rank's batch or loss in a
    training step (DDP204). Where the analysis cannot place a value, it stays quiet.

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
    summary = "an exit on rank-local state skips a collective the other ranks run"
    severity = Severity.ERROR
    #: Preview since issue 23: under the bar of precision on blind code (docs/precision.md).
    default_enabled = False
    needles = COLLECTIVE_NEEDLES
    more_needles = (COLLECTIVE_CALL_NEEDLES,)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        owned_by_ddp204 = {skip.statement for skip in ctx.step_skips.find()}
        for found in ctx.divergent_exits.find(_SOURCES):
            if found.statement in owned_by_ddp204:
                continue
            message = divergent_exit_message(ctx, found)
            summary = divergent_exit_summary(found)
            yield ctx.finding(self, found.statement, message, summary=summary)


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
