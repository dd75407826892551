"""Work one rank does while the others wait for it: the body of
a context manager that waits in a barrier (a project's ``torch_distributed_zero_first(rank)``,
by its code) or the libraries' ``main_process_first()`` (accelerate, transformers
``TrainingArguments``), and a rank-guarded block (``if rank == 0:``)
followed by a barrier in the same function. The waiting ranks sit in a collective, so
the process group's timeout bounds how long that work may take.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from ddplint.code.collectives.call_reach import CallReach, StepEvent
from ddplint.code.collectives.catalogue import Collective
from ddplint.code.ranks.rank_predicates import RankPredicates
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import dotted_name

#: The libraries' context managers that run their body on one rank first while the
#: others wait (accelerate's ``Accelerator`` / ``PartialState`` and transformers'
#: ``TrainingArguments``): their code is not the project's, so their API names say it.
LIBRARY_ONE_RANK_FIRST = frozenset({"main_process_first", "local_main_process_first"})
#: Calls that take no time worth a timeout (logging, paths, conversions).
_QUICK_CALLS = frozenset(
    {
        "print",
        "len",
        "str",
        "int",
        "float",
        "bool",
        "isinstance",
        "range",
        "enumerate",
        "format",
        "exists",
        "isdir",
        "isfile",
        "join",
        "makedirs",
        "mkdir",
        "info",
        "debug",
        "warning",
        "warn",
        "log",
        "write",
        "flush",
        "get_rank",
        "get_world_size",
    }
)
_WAITS = frozenset({"barrier", "wait_for_everyone", "monitored_barrier"})
_COLLECTIVES = frozenset({StepEvent.COLLECTIVE})


@dataclass(frozen=True)
class RankZeroWork:
    """A block run by one rank while the others wait; ``work`` is its first call that
    does real work, ``how`` says where it runs (for messages)."""

    block: cst.CSTNode
    work: cst.Call
    how: str


def rank_zero_work(
    index: ModuleIndex,
    rank_predicates: RankPredicates,
    collectives: dict[cst.Call, Collective],
    call_reach: CallReach,
) -> Iterator[RankZeroWork]:
    """Every such block of the module, in source order: the body of a ``with`` whose
    context manager waits in a barrier (a project helper such as
    ``torch_distributed_zero_first``, by what its code reaches, whatever it is called)
    or is one of the libraries' ``main_process_first``, and a rank-guarded block
    followed by a barrier."""
    for with_node in index.nodes(cst.With):
        for item in with_node.items:
            call = item.item
            if not isinstance(call, cst.Call):
                continue
            name = (dotted_name(call.func) or "").rsplit(".", 1)[-1]
            if name in LIBRARY_ONE_RANK_FIRST or _waits(call, collectives, call_reach):
                work = _first_work(index, with_node.body)
                if work is not None:
                    yield RankZeroWork(with_node, work, f"inside `{name}()`")
    for branch in index.nodes(cst.If):
        if not rank_predicates.truth_is_rank_dependent(branch.test):
            continue
        wait = _later_wait(index, collectives, branch)
        work = _first_work(index, branch.body)
        if wait is not None and work is not None:
            test = " ".join(index.module.code_for_node(branch.test).split())
            yield RankZeroWork(branch, work, f"under `if {test}:`")


def _waits(call: cst.Call, collectives: dict[cst.Call, Collective], call_reach: CallReach) -> bool:
    """Running ``call`` reaches a barrier (in a function of this module, or of another
    module of the project)."""
    reached = call_reach.reached(call, _COLLECTIVES)
    return (
        reached is not None
        and reached.target in collectives
        and collectives[reached.target].op in _WAITS
    )


def _first_work(index: ModuleIndex, body: cst.CSTNode) -> cst.Call | None:
    for node in index.walk_within(body):
        if isinstance(node, cst.Call):
            name = (dotted_name(node.func) or "").rsplit(".", 1)[-1]
            quick = name in _QUICK_CALLS or name in _WAITS or name.startswith("log")
            if name and not quick:
                return node
    return None


def _later_wait(
    index: ModuleIndex, collectives: dict[cst.Call, Collective], branch: cst.If
) -> cst.Call | None:
    """A barrier after ``branch`` in the same function (or module)."""
    scope = index.enclosing_function(branch) or index.module
    after = index.order[branch]
    for node in index.walk_within(scope):
        if (
            isinstance(node, cst.Call)
            and index.order[node] > after
            and not index.is_inside(node, branch)
            and node in collectives
            and collectives[node].op in _WAITS
        ):
            return node
    return None
