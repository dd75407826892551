"""DDP219: where ranks stop issuing the same collectives (the analysis core's answer)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.decisions import decided_by_some_ranks
from ddplint.analysis.divergence import Source, Taint
from ddplint.analysis.point_to_point import (
    CrossedReceives,
    UnansweredTransfer,
    crossed_receives,
    unanswered_transfers,
)
from ddplint.analysis.questions import Parting, where_ranks_part
from ddplint.analysis.root_causes import RootCauses
from ddplint.analysis.some_ranks import rank_class_parting
from ddplint.code.context import CodeContext
from ddplint.finding import Finding, Severity
from ddplint.needles import COLLECTIVE_CALL_NEEDLES, COLLECTIVE_NEEDLES, IMPLICIT_NEEDLES
from ddplint.rule import CodeRule

_LIMIT = 80


class RanksPartBeforeCollective(CodeRule):
    """
    ## What it does
    Flags the place where ranks stop issuing the same sequence of collectives: a
    `return` / `break` / `continue`, or an exit with status 0 (`sys.exit()`,
    `sys.exit(0)`, `os._exit(0)`, `raise SystemExit`, or a status the code computes),
    taken on a value that differs between ranks, a collective under such a test, or a
    loop whose trip count differs between ranks around a collective. The finding sits at
    the root cause (the `break`, not the barrier of the next iteration) and names the
    first collective one side runs and the other does not, also when it is issued by a
    function of the same module (whose own tests the call's constant arguments and
    defaults settle, two calls down). Where rank 0 and the other ranks issue the same
    collectives in another order, across the branches of one test or through two
    complementary rank tests (`if rank == 0: all_reduce(a)`, `broadcast(b)`, `if rank
    != 0: all_reduce(a)`), one finding at the rank test names the first difference
    (rank 0's collective and the others'). Both branches of a rank test that begin
    their point-to-point traffic with a blocking `recv` wait for each other (a
    deadlock): reported at the test (a `send` or `isend` first on one side is correct).
    A `send` / `isend` under a rank test whose other branch calls nothing, in a program
    that starts its process group itself and names no receive anywhere (or a `recv` /
    `irecv` and no send), has no peer on any rank: reported at the call (a module that
    names the other side anywhere, uses `batch_isend_irecv`, or does not start its
    group, a library whose peer may run another module, is not judged).

    Implicit collectives count: the forward of a model wrapped in
    `DistributedDataParallel` (it broadcasts the buffers, unless
    `broadcast_buffers=False`; not after `model = model.module`), the forward of a
    model sharded (`FSDP`, `fully_shard`) or made tensor-parallel
    (`parallelize_module`), a `backward()` in a module that wraps one (it all-reduces
    the gradients; not inside `no_sync()`), and accelerate's and Fabric's `backward`.

    A value differs between ranks when it reads the rank (`dist.get_rank()`,
    `RANK` / `LOCAL_RANK`, also kept in a module global bound once, `.rank`,
    `.is_main_process`, the first parameter of a
    function handed to `mp.spawn`), a local clock or memory probe, what this rank
    hands to a reduction, or the output of a model's forward (`token.item()` of a
    sampled token), or was set under a test on one of those; a rank's slice of a
    list differs in length, and so does the item a rank picks from a list of lists
    (`for x in work[rank]` with `work = [[1, 2], [3]]`). A field of `self` differs
    when any method of the class stores such a value in it, or the module constructs
    the class with one (`Trainer(args, local_rank)`). A list or mapping that some ranks add items to
    under such a test (`self.pending[step] = loss`, `.append(...)`) differs in length
    and keys, in the other methods too: `if not self.pending: return` before the
    collective that reduces it parts the ranks (DDP211 reports it, naming the record).
    An `except` handler that leaves with `continue`,
    `break` or `return` parts the ranks when its `try` body computed on such values
    (out of memory on this rank's batch); a `try` that reads a shared file raises on
    every rank or none. Where the ranks part on a value some ranks set under such a
    test (`if rank == 0: stop = ...` then `if stop: break`), the finding is DDP211's,
    which names the flag: one finding per root cause.

    Not flagged: a failing `assert`, a `raise`, or an exit with an error status
    (`sys.exit(1)`, `sys.exit("message")`, `os._exit(1)`, `raise SystemExit(1)`): the
    process fails, and torchrun's agent stops every other worker, so nobody waits;
    `rank != -1` or `local_rank >= 0` on the rank as read
    (whether the job was launched; on a value computed from the rank or from this
    rank's data it is a test like any other); a run name stamped with the clock,
    tested for being set (its text differs, not whether there is one); a rank's strided
    share `pieces[rank::n]` of pieces padded to a multiple of `n` (every share is as
    long); an `except` handler whose exit only a one-process job reaches (it re-raises
    under `dist.is_initialized()`); file-system checks (a shared file system answers
    every rank alike: DDP218 is the opt-in rule for node-local disks); values made the
    same by a collective (`all_reduce(flag)` then
    `flag.item()`, `broadcast`, `all_gather_object`); a name bound again; placement
    (`torch.load(..., map_location=f"cuda:{rank}")`, `.to(device)`); `len()` of a list
    whose items, not length, differ; branches that issue the same collectives (send and
    receive arms; one rank broadcasts a value and the others read it back); complementary
    rank tests (main-process-first: `if not main: barrier()` ... `if main: barrier()`,
    also around a `yield`, with the rank in a field or a name bound to the test, and
    `local_rank > 0`, `>= 1` or `0 < local_rank` against `== 0` or `< 1`; an `assert`
    on the rank between them counts as passing; when another rank test breaks the
    pairing, only that test is reported); a way on
    which `dist.is_initialized()` is false (one process); a name only one arm of a rank
    test binds (the other ranks would stop with a `NameError`, loudly); accelerate's
    `save_state`, which synchronises only under DeepSpeed, FSDP or Megatron-LM, in a
    module that uses none of them. A collective that a test on the rank itself gives to
    one rank class and not the other (`if rank == 0: barrier()`, a `return` under it)
    is DDP201's finding, at the same place: one finding per root cause (trip counts
    and orders decided by the rank stay here). Likewise a DDP model's forward under
    a rank test is DDP213's, a process group made under one DDP207's, and an exit
    on this rank's own data (`if torch.isnan(loss): continue` before `backward()`)
    DDP204's (`analysis.root_causes`).

    This rule is built on the analysis core (control flow, post-dominators, a
    flow-sensitive divergence analysis): preview while its precision on code nobody
    tuned on is measured. DDP210 is retired for it.

    ## Why is this bad?
    Collectives pair by order. The rank that left the loop (or skipped the branch)
    never joins the collective its peers enter: they wait until the timeout (10 minutes
    with NCCL by default), or pair it with the leaving rank's next collective and go on
    with wrong data.

    ## Example
    ```python
    for step, batch in enumerate(loader):
        if rank == 0 and step > max_steps:
            break
        loss = train_step(batch)
        dist.all_reduce(loss)
    ```

    ## Use instead
    ```python
    for step, batch in enumerate(loader):
        if step > max_steps:  # a decision every rank takes alike
            break
        loss = train_step(batch)
        dist.all_reduce(loss)
    ```
    or decide together: `all_reduce` a stop flag with `MAX` and test its result.

    ## Fix safety
    No automatic fix: where every rank should join is the author's call.

    ## References
    - PyTorch docs, `torch.distributed`: collectives "must be called by all processes in
      the group".
    - Saillard et al., "PARCOACH": collectives control-dependent on rank-dependent
      conditions.
    """

    code = "DDP219"
    reads_libcst = False
    name = "ranks-part-before-collective"
    summary = "ranks stop issuing the same collectives here"
    severity = Severity.ERROR
    default_enabled = False
    needs_peers = True
    needles = (*COLLECTIVE_NEEDLES, *IMPLICIT_NEEDLES)
    more_needles = ((*COLLECTIVE_CALL_NEEDLES, *IMPLICIT_NEEDLES, "recv", "send"),)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        root_causes = RootCauses(ctx.analysis)
        for parting in where_ranks_part(ctx.analysis):
            if decided_by_some_ranks(parting):
                continue  # DDP211's finding: it names the flag (one per root cause)
            if rank_class_parting(parting):
                continue  # DDP201's finding: decided by the rank itself
            if root_causes.parting_owned_elsewhere(parting):
                continue  # DDP213's, DDP207's or DDP204's finding
            yield ctx.ast_finding(
                self,
                parting.cause,
                parting_message(parting),
                summary=_summary(parting),
                related=parting_related(parting),
            )
        for crossed in crossed_receives(ctx.analysis):
            yield ctx.ast_finding(
                self,
                crossed.test,
                crossed_message(crossed),
                summary="both branches receive first: each rank waits for the other",
                related=[(crossed.second, "the other branch's first `recv`")],
            )
        for unanswered in unanswered_transfers(ctx.analysis):
            yield ctx.ast_finding(
                self,
                unanswered.call,
                unanswered_message(unanswered),
                summary=f"`{unanswered.kind}` that no rank answers",
                related=[(unanswered.test, "the rank test that sends only some ranks here")],
            )


def unanswered_message(unanswered: UnansweredTransfer) -> str:
    """The explanation of a send (or receive) that no rank answers."""
    kind = unanswered.kind
    sending = kind in ("send", "isend")
    peer = "receive" if sending else "send"
    calls = "`recv` / `irecv`" if sending else "`send` / `isend`"
    return (
        f"`{kind}` runs only where `{header_text(unanswered.test.test)}` "
        f"{'holds' if unanswered.holds else 'does not hold'}, and no "
        f"rank ever posts the matching {peer}: the module names no {calls}, and "
        f"the other ranks' branch calls nothing; the `{kind}` (or the wait on its "
        f"handle) never returns and the job hangs; issue the matching `{peer}` on the "
        "peer rank (the other branch of the test)"
    )


def crossed_message(crossed: CrossedReceives) -> str:
    """The explanation of two branches that both block in a ``recv`` first."""
    return (
        f"both branches of `{header_text(crossed.test)}` begin their point-to-point "
        f"traffic with a blocking `recv` (line {crossed.first.lineno} and line "
        f"{crossed.second.lineno}): each rank waits for a message its peer sends only "
        "after its own `recv` returns, a deadlock; let one side send first (or use "
        "`isend` / `irecv` and wait on both)"
    )


def _spelled(node: ast.AST) -> str:
    return _spelled_text(ast.unparse(node))


def header_text(node: ast.AST) -> str:
    """A statement's header (a test, a loop, a handler) or an expression, spelled short."""
    if isinstance(node, (ast.If, ast.While)):
        return _spelled(node.test)
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return f"for {_spelled(node.target)} in {_spelled(node.iter)}"
    if isinstance(node, ast.ExceptHandler):
        caught = f" {_spelled(node.type)}" if node.type is not None else ""
        return f"except{caught}" + (f" as {node.name}" if node.name else "")
    return _spelled(node)


def reason_text(taint: Taint) -> str:
    """Why a value differs between ranks, for a message."""
    if taint.source is Source.RANK:
        return f"it reads the rank (`{_spelled_text(taint.spelled)}`, line {taint.line})"
    if taint.source is Source.DECIDED:
        return f"it is set under a test that differs between ranks (line {taint.line})"
    return f"it reads {taint.source.value} (`{_spelled_text(taint.spelled)}`, line {taint.line})"


def _spelled_text(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _LIMIT else text[: _LIMIT - 3] + "..."


def missed_text(parting: Parting) -> str:
    """The collective a parting skips, with where it is and what reaches it."""
    missed = f"`{parting.missed.name}` (line {parting.missed.line})"
    if parting.through is not None:
        missed += f" through `{parting.through}()`"
    if parting.missed.via is not None:
        missed += f" {parting.missed.via}"
    if parting.missed.condition is not None:
        missed += f", which synchronises {parting.missed.condition}"
    return missed


def parting_message(parting: Parting, reason: str | None = None) -> str:
    """The whole explanation of one parting (``reason``: why the test differs between
    ranks, in the caller's words; by default from the parting's taint)."""
    missed = missed_text(parting)
    reason = reason or reason_text(parting.taint)
    consequence = (
        "the ranks that skip it leave their peers waiting in it until the timeout, or "
        "pair them with their next collective"
    )
    if parting.loop:
        return (
            f"the number of trips of `{header_text(parting.test)}` differs between ranks, "
            f"because {reason}, and each trip runs {missed}: {consequence}"
        )
    if parting.order is not None and parting.classes:
        mine, theirs = parting.order
        return (
            f"rank 0 and the other ranks issue collectives in another order: rank 0 "
            f"issues `{mine.name}` (line {mine.line}) first where the others issue "
            f"`{theirs.name}` (line {theirs.line}), decided by `{header_text(parting.test)}`"
            f", which differs between ranks because {reason}: the ranks pair different "
            "collectives, a hang or wrong data; issue them in one order on every rank"
        )
    if parting.order is not None:
        mine, theirs = parting.order
        return (
            f"the branches of `{header_text(parting.test)}` issue collectives in another "
            f"order: one issues `{mine.name}` (line {mine.line}) first where the other "
            f"issues `{theirs.name}` (line {theirs.line}), and which branch a rank takes "
            f"differs between ranks because {reason}: the ranks pair different "
            "collectives, a hang or wrong data; issue them in one order on every rank"
        )
    if parting.cause is parting.test:
        return (
            f"{missed} runs only where `{header_text(parting.test)}` holds, which differs "
            f"between ranks because {reason}: {consequence}; reach it on every rank or "
            "decide together first"
        )
    return (
        f"`{_spelled(parting.cause)}` under `{header_text(parting.test)}` (line "
        f"{parting.test_line}) skips {missed} on some ranks only, because {reason}: "
        f"{consequence}; decide together first (all_reduce the flag with MAX)"
    )


def parting_related(parting: Parting) -> list[tuple[ast.AST, str]]:
    """The places the finding names besides its own: the test that parts the ranks,
    the collective one side skips, and where the differing value comes from."""
    places: list[tuple[ast.AST, str]] = []
    if parting.test is not parting.cause:
        places.append((parting.test, "the test whose answer differs between ranks"))
    skipped = f"`{parting.missed.name}`, which some ranks skip"
    if parting.through is not None:
        skipped += f" (through `{parting.through}()`)"
    places.append((parting.missed.call, skipped))
    return places


def _summary(parting: Parting) -> str:
    if parting.order is not None:
        mine, theirs = parting.order
        return f"ranks part here: `{mine.name}` first on one side, `{theirs.name}` on the other"
    if parting.loop:
        return f"trip count differs between ranks around `{parting.missed.name}`"
    return f"ranks part here: `{parting.missed.name}` is skipped on some ranks"
