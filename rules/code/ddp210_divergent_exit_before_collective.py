"""DDP210: retired; an early exit on rank-local state is DDP219's finding."""

from __future__ import annotations

from collections.abc import Iterator

from ddplint.code.context import CodeContext
from ddplint.finding import Finding, Severity
from ddplint.needles import COLLECTIVE_CALL_NEEDLES, COLLECTIVE_NEEDLES
from ddplint.rule import CodeRule


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
    needs_peers = True
    needles = COLLECTIVE_NEEDLES
    more_needles = (COLLECTIVE_CALL_NEEDLES,)

    reads_libcst = False
    retired_for = "DDP219"

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        """Nothing: DDP219 reports each of these root causes."""
        return iter(())
