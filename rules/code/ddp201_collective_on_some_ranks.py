"""DDP201: a collective reached only on some ranks (the analysis core's rank classes)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.questions import Parting
from ddplint.analysis.some_ranks import rank_class_partings
from ddplint.code.context import CodeContext
from ddplint.finding import Finding, Severity
from ddplint.needles import COLLECTIVE_CALL_NEEDLES, COLLECTIVE_NEEDLES, RANK_NEEDLES
from ddplint.rule import CodeRule
from ddplint.rules.code.ddp219_ranks_part_before_collective import missed_text, reason_text


class CollectiveOnSomeRanks(CodeRule):
    """
    ## What it does
    Flags a collective (`dist.barrier()`, `all_reduce`, `broadcast`, `strategy.barrier()`,
    `accelerator.wait_for_everyone()`, an implicit one such as a DDP model's forward, ...)
    that rank 0 and the other ranks (or local rank 0 and the others) do not both issue:
    the whole function is walked as each rank class, and where their collective
    sequences differ the finding sits at the root cause, where the ranks part (the rank
    test, or the `return` / `continue` / `break` taken on it), and names as related
    locations the first collective one class issues and the other does not (and the
    test, when the parting is an exit). The collective may be
    issued through a function of the same module or of another module of the project
    (the chain is named), inside `if rank == 0:` or its `else`, a conditional expression
    or `cond and call()`, after a `return` / `continue` / `break` taken on some ranks
    only (a `break` out of a loop skips the collectives of its later trips and after
    it), or in a `@rank_zero_only` function. The rank is read in any spelling, a
    module global bound once to it (`RANK = int(os.environ["RANK"])`, unless a
    parameter of the same name shadows it) and a parameter the script's top level
    hands it in (`main(int(os.environ["LOCAL_RANK"]))` under `if __name__ ==
    "__main__":`, in this module or another) and the item of a tuple a function of
    the module returns that reads the rank (`rank, world_size = init_distributed()`)
    included.

    Not flagged: the same collective on both arms of a rank test (also the two arms
    of a conditional expression, `reduce(own, rank) if i == rank else reduce(g[i], i)`);
    a test on another key of a settings mapping that holds the rank under one key
    (`opt["world_size"] > 1` beside `opt["rank"] = rank`); complementary tests
    (main-process-first: `if not main: barrier()` ... `if main: barrier()`, also when
    the other ranks' barrier sits before an early `return` and rank 0's after its work;
    one process at a time: `for turn in range(world): if rank != turn: barrier()` ...
    `if rank == turn: barrier()`, every rank one barrier per turn);
    a way on which one process runs (`dist.is_initialized()` false, `world_size > 1`
    false, the launcher's `RANK` / `LOCAL_RANK` read as -1); an error exit (`raise`,
    `assert`, `sys.exit(1)`: the launcher stops every rank, nobody waits); a call of a
    helper whose collective its arguments switch off (a helper that all-reduces only a
    tensor, handed a Python float); a `group=` made under the test; collectives other
    rules own when called directly (`self.log(sync_dist=True)`: DDP202; checkpoint
    saving: DDP203; making a group: DDP207), and a DDP model's forward or backward,
    however reached (DDP213).

    This rule asks the analysis core (rank classes, `lint/analysis/some_ranks.py`).
    One finding per root cause: DDP219 asks where ranks part for every value that
    differs between ranks and leaves these partings, decided by the rank itself, to
    DDP201; a trip count decided by the rank (`for _ in range(rank)` around a
    collective) and two orders of the same collectives stay DDP219's.

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
    needs_peers = True
    needles = RANK_NEEDLES
    also_needles = COLLECTIVE_NEEDLES
    more_needles = (COLLECTIVE_CALL_NEEDLES,)

    reads_libcst = False

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        for parting in rank_class_partings(ctx.analysis):
            yield ctx.ast_finding(
                self,
                parting.cause,
                _message(parting),
                summary=f"`{parting.missed.name}` reached on some ranks only",
                related=_related(parting),
            )


def _related(parting: Parting) -> list[tuple[ast.AST, str]]:
    """The rank test (when the ranks part at an exit under it) and the collective one
    rank class skips: the call of this function that issues it (or calls what does);
    in a rank-only function, the collective itself."""
    places: list[tuple[ast.AST, str]] = []
    if parting.test is not parting.cause:
        places.append((parting.test, "the rank test that decides who reaches it"))
    skipped = f"`{parting.missed.name}`, which some ranks skip"
    places.append((_site(parting), skipped))
    return places


def _site(parting: Parting) -> ast.AST:
    call = parting.missed.call
    within = parting.site if parting.site is not None else parting.function
    if any(node is call for node in ast.walk(within)):
        return call
    return parting.site if parting.site is not None else parting.cause


def _message(parting: Parting) -> str:
    missed = missed_text(parting)
    if parting.missed.condition is not None:
        missed += ","
    consequence = (
        "the other ranks never do, so they wait until the timeout or pair it with a "
        "later, different collective"
    )
    function = parting.function
    if parting.test in getattr(function, "decorator_list", ()):
        name = getattr(function, "name", "")
        return (
            f"{missed} is issued by one rank only: `@{ast.unparse(parting.test)}` runs "
            f"`{name}` (line {parting.test_line}) on one rank; {consequence}. Call it "
            "on every rank (outside the rank-only function)"
        )
    return (
        f"{missed} is issued by some ranks only: the test on line {parting.test_line} "
        f"sends rank 0 and the other ranks different ways, because "
        f"{reason_text(parting.taint)}, and only one way issues it; {consequence}. Call "
        "it on every rank (hoist it out of the rank test, or before the early exit)"
    )
