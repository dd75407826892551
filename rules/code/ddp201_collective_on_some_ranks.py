"""DDP201: a collective reached only on some ranks."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ddplint.code.context import CodeContext
from ddplint.code.ranks.guard_brief import ranks_brief
from ddplint.code.ranks.rank_reachability import FirstAfterExit, ReachedCollective
from ddplint.finding import Finding, Severity
from ddplint.needles import COLLECTIVE_CALL_NEEDLES, COLLECTIVE_NEEDLES, RANK_NEEDLES
from ddplint.rule import CodeRule


def _has_own_rule(reached: ReachedCollective) -> bool:
    """Direct calls that DDP202 (logging), DDP203 (checkpoints) and DDP207 (groups) own."""
    collective = reached.collective
    return not reached.chain and (
        collective.syncs_logged_metric or collective.saves_checkpoint or collective.creates_group
    )


_HOIST = "Call it on every rank (hoist it out of the `if`)"
_SUGGESTIONS = {
    "branch": _HOIST,
    "else": _HOIST,
    "and": "Call it on every rank (not behind the rank test)",
    "or": "Call it on every rank (not behind the rank test)",
    "early_exit": "Call it on every rank (before the early exit)",
    "decorator": "Call it on every rank (outside the rank-only function)",
    "wrapper": "Call it on every rank (not through `rank_zero_only`)",
}


class CollectiveOnSomeRanks(CodeRule):
    """
    ## What it does
    Flags a collective (`dist.barrier()`, `all_reduce`, `broadcast`, `strategy.barrier()`,
    `accelerator.wait_for_everyone()`, ...) that only some ranks reach: inside
    `if rank == 0:` or its `else`, a conditional expression or `cond and call()` on a
    rank predicate, after a `return`/`continue`/`break`/`raise` taken on some ranks only,
    in a `@rank_zero_only` function, or through a call to a function of the same module
    that issues one (`if rank == 0: self._save()` where `_save` calls `dist.barrier()`).

    It stays quiet when the other ranks issue the same collective anyway: the same call
    in both arms, paired guards (`if not is_main: barrier()` ... `if is_main: barrier()`),
    rank-0 work followed by a barrier outside the `if`, a `group=` made of exactly the
    guarded ranks, conditions that are the same on every rank (`world_size > 1`,
    `dist.is_initialized()`), and point-to-point `send`/`recv`.

    ## Why is this bad?
    Collectives pair by order inside a process group, not by call site. When one rank
    skips a collective the others wait for it until the group timeout (10 minutes by
    default with NCCL, 30 under Lightning), or, worse, pair it with a later, different
    collective and carry on with mixed data.

    ## Example
    ```python
    if dist.get_rank() == 0:
        save(model)
        dist.barrier()  # ranks 1..N never get here
    ```

    ## Use instead
    ```python
    if dist.get_rank() == 0:
        save(model)
    dist.barrier()  # every rank
    ```

    ## Fix safety
    No automatic fix: moving a collective changes what every rank computes. Where the
    guarded statement is only the collective, or its inputs exist on every rank, hoist
    it above the guard.

    ## References
    - PyTorch docs: `torch.distributed`, "collective functions ... must be called by
      all processes in the group".
    - Lightning issues #19783, #19045, #16541; accelerate issue #1171.
    """

    code = "DDP201"
    name = "collective-on-some-ranks"
    summary = "a collective reached only on some ranks"
    severity = Severity.ERROR
    #: Preview since issue 23: under the bar of precision on blind code (docs/precision.md).
    default_enabled = False
    needles = RANK_NEEDLES
    also_needles = COLLECTIVE_NEEDLES
    more_needles = (COLLECTIVE_CALL_NEEDLES,)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        reachability = ctx.rank_reachability
        exits = FirstAfterExit()
        for call in ctx.index.nodes(cst.Call):
            reached = reachability.reached_by_call(call)
            if not reached or all(_has_own_rule(r) for r in reached):
                continue
            callee = reachability.callee_of(call)
            if callee is not None and ctx.rank_predicates.is_rank_zero_only(callee):
                continue  # its body is guarded: findings are reported inside it
            guard = reachability.divergent_guard(call)
            if guard is None or not exits.first(guard):
                continue
            where = reachability.describe(guard)
            message = self._message(ctx, call, reached[0], where)
            called = " ".join(ctx.node_text(call.func).split())
            summary = f"`{called}()` reached {ranks_brief(ctx, guard)}"
            yield ctx.finding(self, call, f"{message}. {_SUGGESTIONS[guard.kind]}", summary=summary)

    @staticmethod
    def _message(ctx: CodeContext, call: cst.Call, reached: ReachedCollective, where: str) -> str:
        called = " ".join(ctx.node_text(call.func).split())
        if reached.chain:
            through = ctx.rank_reachability.local.label(reached.chain[-1])
            line = ctx.range_of(reached.collective.node)[0]
            subject = (
                f"`{called}()` reaches `{reached.collective.api}` (in `{through}`, line {line})"
                f" and runs {where}"
            )
        elif reached.collective.via:
            collective = reached.collective
            subject = f"`{called}()` reaches `{collective.api}` {collective.via} and runs {where}"
        else:
            subject = f"`{called}()` runs {where}"
        return (
            f"{subject}; the other ranks never issue it, so they wait until the timeout "
            "or pair it with a later, different collective"
        )
