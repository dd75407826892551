"""DDP221: collective arguments that every rank must pass alike but do not (the analysis
core's answer)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.arguments import (
    Disagreement,
    MisplacedList,
    OutsideGroup,
    disagreeing_arguments,
    misplaced_lists,
    outside_groups,
)
from ddplint.code.context import CodeContext
from ddplint.finding import Finding, Severity
from ddplint.needles import AGREED_CALL_NEEDLES
from ddplint.rule import CodeRule
from ddplint.rules.code.ddp219_ranks_part_before_collective import reason_text

#: The words a file must hold: torch.distributed (or deepspeed.comm), and a collective
#: with arguments every rank must pass alike.
NEEDLES = ("torch.distributed", "import distributed", "deepspeed")

_CONSEQUENCE = {
    "value": "the ranks pair with different roots or reductions: wrong results, or a hang",
    "shape": (
        "NCCL pairs buffers by size: a mismatch hangs, fails, or reads past the end of "
        "the smaller buffer"
    ),
    "dtype": "NCCL pairs buffers by bytes: a mismatch hangs or mixes numbers of two types",
    "length": (
        "it holds one entry per rank of the group: a rank whose list is longer or "
        "shorter fails there or pairs the wrong pieces, and the others wait in the exchange"
    ),
    "members": (
        "groups are named by the order every rank makes them in, so groups of other "
        "members made at the same call share one name, and their ranks' connection "
        "set-up crosses (a hang at the first collective on the group, or a communicator "
        "joined with the wrong peers)"
    ),
}


class CollectiveArgumentsDiffer(CodeRule):
    """
    ## What it does
    Flags a collective of `torch.distributed` whose arguments that every rank must pass
    alike differ between ranks:

    - the root: `src` / `dst` (positional too), `group_src` / `group_dst` of
      `broadcast`, `reduce`, `scatter`, `gather` and their `_object` / `_object_list`
      forms;
    - the reduction `op` of `all_reduce`, `reduce`, `reduce_scatter*`,
      `all_reduce_coalesced`;
    - the shape and dtype of the tensor of `all_reduce`, `broadcast`, `reduce`,
      `all_gather_into_tensor`, `reduce_scatter_tensor`, `all_to_all_single` (without
      split sizes), `all_gather`'s own tensor and its output list (its length and
      its tensors), `reduce_scatter`'s output and input list;
    - the length of the lists of `all_to_all` and of the split sizes of
      `all_to_all_single` (one entry per rank; the sizes in them may differ);
    - the root, op or group two ways pass where the ranks issue the same collectives
      in the same order (`if rank == 0: dist.reduce(t, dst=0)` / `else:
      dist.reduce(t, dst=1)`; the default group on one way, a named group on the other);
    - the list of `scatter` / `gather` (`scatter_list`, `gather_list`), which the root
      alone passes, walked as rank 0 and as another rank with a literal root (none
      given is rank 0): the root without one (`dist.scatter(out, src=0)` on every
      rank), or another rank with one the same on every rank (`dist.gather(t,
      gathered, dst=0)` with `gathered` built on every rank). torch raises a
      `ValueError` on that rank, and the others wait in the collective.
    - the members of a group being made (`new_group(ranks)`,
      `new_subgroups_by_enumeration`'s list) when they differ between ranks: each rank
      making only the group it belongs to (`new_group(list(range(first, first + size)))`
      with `first` from the rank). Every rank must make every group, with the same
      list, in the same order; only `use_local_synchronization=True` names a group by
      its members and lets each rank make its own;
    - the group of `new_group` with literal members (`new_group([0, 1])`) where the
      rank tests around the collective give it to a rank outside the group (`if rank
      == 2: dist.all_reduce(t, group=g)`: nothing happens there) or to some members
      only.

    A value differs between ranks as for DDP219: it reads the rank, a local clock, or
    what this rank hands to a reduction, or was set under a test on one of those. A
    root or an op differs by its value; a tensor by its shape (`torch.zeros(rank + 1)`,
    `torch.cat([block] * (rank + 1))`,
    `torch.zeros(len(my_shard))` where `my_shard` is this rank's slice, a tensor made of
    another literal size on each arm of a rank test) or its dtype
    (`dtype=torch.float16 if rank == 0 else torch.float32`, `t = t.double()` or
    `t.to(torch.int64)` on one arm of a rank test). The finding names the
    argument and, as a related location, the line where its value was decided.

    Not flagged: a constant root; a root agreed before (broadcast, all-reduced) or
    computed from the world size or the configuration; a tensor whose numbers differ
    but whose shape does not (every loss you all-reduce); a tensor padded to a size
    every rank shares (`torch.cat([mine, torch.full((most - n,), -1)])` with `most`
    gathered); placement (`.to(device)`,
    `map_location`); the objects of `all_gather_object` / `gather_object` (any size);
    point-to-point `send` / `recv` (their peer is per rank by design); a collective on
    a named process group (the group, and its root, follow the rank); two different
    named groups on two ways (each rank in its own group); branches that issue the same
    collectives (the holder's `broadcast(t, src=rank)` against the others'
    `broadcast(t, src=holder)`: only literal roots, ops and groups are compared there);
    a root that reads the rank where a test has just found the rank equal to a shared
    value (`reduce(t, rank) if i == rank else ...`, `if rank == turn: gather(.., dst=rank)`);
    a tensor padded to a size the ranks gathered (`torch.empty(max_size - local_size)`:
    a size decided per rank or counted from this rank's share is not taken as a shape);
    a window of one width (`x[rank * k : (rank + 1) * k]`); a conversion on both arms,
    or under a test every rank answers alike (`if half: t = t.half()`); a
    `scatter` / `gather` list chosen per rank (`pieces if rank == 0 else None`), or on
    a named group or `group_src` / `group_dst` (the root is the group's); a
    collective on a group that every rank issues (outside the group it does nothing,
    as meant), or under a test that reads more than the rank; every group made on
    every rank in a loop (`for first in range(0, world, size): g = new_group(...)`,
    keeping the one whose members hold the rank); a group made with
    `use_local_synchronization=True`; a group of this rank alone (`new_group([rank])`:
    no peer whose set-up could cross).

    This rule is built on the analysis core: preview while its precision on code nobody
    tuned on is measured.

    ## Why is this bad?
    Every rank of a collective must name the same root and the same reduction, and hand
    tensors of the same shape and dtype: NCCL and Gloo pair the ranks' buffers by
    position and size. A rank that names another root waits for a send nobody makes (a
    hang until the timeout) or receives into the wrong buffer; another op reduces with
    mixed operators; buffers of other sizes hang, fail with an unhelpful error, or read
    past the end of the smaller one.

    ## Example
    ```python
    rank = dist.get_rank()
    counts = torch.zeros(len(my_shard))  # the length of this rank's shard
    dist.all_reduce(counts)
    dist.broadcast(weights, src=rank)
    ```

    ## Use instead
    ```python
    counts = torch.zeros(num_classes)  # a shape every rank agrees on
    dist.all_reduce(counts)
    dist.broadcast(weights, src=0)
    ```
    To gather items of per-rank sizes, use `all_gather_object`, or all-gather the sizes
    first and pad to the largest.

    ## Fix safety
    No automatic fix: which root, op or shape every rank should use is the author's call.

    ## References
    - PyTorch docs, `torch.distributed`: tensors "must have the same number of elements
      in all processes"; `src` / `dst` is the rank of the root on every process;
      `new_group` must be entered by all processes, in the same order, with the
      identical `ranks` list (a group's name is the count of groups made so far
      unless `use_local_synchronization=True` names it by its members).
    - "Designing Quality MPI Correctness Benchmarks" (Correctness@SC24): root, op, type
      and size mismatches of collectives.
    """

    code = "DDP221"
    name = "collective-arguments-differ"
    summary = "an argument every rank must pass alike differs between ranks"
    severity = Severity.ERROR
    default_enabled = False
    needs_peers = True
    needles = NEEDLES
    more_needles = (AGREED_CALL_NEEDLES,)
    reads_libcst = False

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        for found in disagreeing_arguments(ctx.analysis):
            yield ctx.ast_finding(
                self,
                found.collective.call,
                message(found),
                summary=_summary(found),
                related=_related(found),
            )
        for misplaced in misplaced_lists(ctx.analysis):
            yield ctx.ast_finding(
                self,
                misplaced.collective.call,
                list_message(misplaced),
                summary=_list_summary(misplaced),
            )
        for outside in outside_groups(ctx.analysis):
            yield ctx.ast_finding(
                self,
                outside.collective.call,
                group_message(outside),
                summary=_group_summary(outside),
                related=[(outside.made, "the group's members")],
            )


def message(found: Disagreement) -> str:
    """The whole explanation of one disagreement."""
    name = found.collective.name
    consequence = _CONSEQUENCE[found.what]
    if found.apart is not None:
        apart = found.apart
        if apart.keyword == "group":
            consequence = (
                "the default group's collective waits for every rank, also those in the "
                "named group's: a hang, or buffers paired with the wrong collective"
            )
        return (
            f"some ranks issue `{name}` here and the others at line {apart.second.line}, "
            f"at the same place of their collective sequences, but with `{apart.keyword}` "
            f"{apart.values[0]} here and {apart.values[1]} there: {consequence}; "
            "pass every rank the same value"
        )
    assert found.taint is not None
    remedy = f"every rank must pass the same {'value' if found.what == 'value' else found.what}"
    if found.what == "members":
        remedy = (
            "make every group on every rank with the same list (keep the one that holds "
            "this rank), or pass `use_local_synchronization=True`"
        )
    return f"{_summary(found)}, because {reason_text(found.taint)}: {consequence}; {remedy}"


def list_message(found: MisplacedList) -> str:
    """The explanation of a ``scatter`` / ``gather`` list on the wrong ranks."""
    keyword = found.keyword
    return (
        f"{_list_summary(found)}: torch raises a ValueError there (`{keyword}` must be "
        f"given on the root, rank {found.root}, and on no other rank), and the ranks that "
        "went on wait in the collective until the timeout; pass the list on the root "
        f"only (`{keyword} if rank == {found.root} else None`)"
    )


def group_message(found: OutsideGroup) -> str:
    """The explanation of a collective on a group that the rank tests around it give
    to a rank outside it, or take from some of its members."""
    members = ", ".join(map(str, found.members))
    if found.member:
        return (
            f"{_group_summary(found)}: the members of the group ({members}) that issue it "
            "wait for this one until the timeout; let every member of the group issue it"
        )
    return (
        f"{_group_summary(found)} ({members}): there torch returns at once and reduces, "
        "sends or receives nothing, and the members wait for their peers or go on with "
        "numbers that never left; issue it on the members of the group"
    )


def _group_summary(found: OutsideGroup) -> str:
    name = found.collective.name
    if found.member:
        return f"rank {found.rank}, a member of the group, skips `{name}` on it"
    return f"`{name}` runs on rank {found.rank}, which is not a member of its group"


def _list_summary(found: MisplacedList) -> str:
    who = "rank 0" if found.zero else "the ranks other than 0"
    role = "its root" if found.zero and found.root == 0 else f"not its root ({found.root})"
    passes = "passes" if found.given else "passes no"
    return f"`{found.collective.name}` on {who}, {role}, {passes} `{found.keyword}`"


def _summary(found: Disagreement) -> str:
    what = {
        "value": "",
        "shape": "the shape of ",
        "dtype": "the dtype of ",
        "length": "the length of ",
        "members": "",
    }[found.what]
    return f"{what}`{found.keyword}` of `{found.collective.name}` differs between ranks"


def _related(found: Disagreement) -> list[tuple[ast.AST, str]]:
    if found.apart is not None:
        return [(found.apart.second.call, f"the other ranks' `{found.apart.second.name}`")]
    if found.decided is not None:
        return [(found.decided, f"where the `{found.keyword}` value is decided per rank")]
    return []
