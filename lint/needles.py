"""The words of the text pre-filters (a file is parsed for a rule only if it holds
them) and the test itself: plain data, importable without LibCST, so the engine can
drop a file before any rule module is imported (``rules/catalogue.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

#: Text a file must contain to hold a rank predicate or a rank-only decorator: the
#: pre-filter of the rank-reachability rules.
RANK_NEEDLES = (
    "rank",
    "RANK",  # the launcher's variables read alone: ``os.environ["RANK"]``, ``LOCAL_RANK``
    "_zero",
    "main_process",
    "process_index",
    "last_process",
    "on_process",
    "local_process",
)

#: Text one of which every call of a catalogued collective holds, whatever the spelling
#: (an aliased import still names the function in its import): the function or method
#: name, or the module it comes from. A pre-filter, used with ``COLLECTIVE_NEEDLES``.
COLLECTIVE_CALL_NEEDLES = (
    "barrier",
    "reduce",
    "gather",
    "broadcast",
    "scatter",
    "all_to_all",
    "new_group",
    "new_subgroups",
    "device_mesh",
    "save_checkpoint",
    "wait_for_everyone",
    "save_state",
    "sync_dist",
    "summon_full_params",
    "state_dict",
    "pad_across",
    "save(",
    "distributed.checkpoint",
)

#: Text one of which every call holds whose arguments every rank must pass alike
#: (``analysis.api.AGREED_ARGUMENTS``): DDP221's pre-filter.
AGREED_CALL_NEEDLES = (
    "reduce",
    "gather",
    "broadcast",
    "scatter",
    "all_to_all",
    "barrier",
    "new_group",
    "new_subgroups",
)

#: Text one of which every module with a catalogued collective contains (the import of
#: ``torch.distributed`` / ``deepspeed``, or the framework receiver's name): a cheap
#: pre-filter for rules that need a collective in the module (``Rule.needles``).
COLLECTIVE_NEEDLES = (
    "torch.distributed",
    "import distributed",
    "deepspeed",
    "strategy",
    "save_checkpoint",
    "fabric",
    "accelerator",
    "all_gather",
    "sync_dist",
)

#: What implies a collective without naming one (a DDP model's forward and backward
#: synchronise gradients): DDP219 counts them with the collectives' words.
IMPLICIT_NEEDLES = ("DistributedDataParallel", "backward")

#: Text one of which every choice of this rank's GPU holds (``torch.cuda.set_device``, a
#: DDP model's ``device_ids``, a ``cuda:`` device string): DDP503's pre-filter.
DEVICE_CHOICE_NEEDLES = ("set_device", "device_ids", "cuda:", '"cuda"', "'cuda'")

#: Text one of which each group of DDP402's pre-filter holds: a distributed sampler and
#: the loader built on it (a project fact stands for both: a loader on a distributed
#: sampler handed in by callers in other modules).
SAMPLED_LOADER_NEEDLES = ("DistributedSampler", "DataLoader")

#: The words a project fact can stand for (``FileFacts.informs_rules``): a rank test, a
#: collective, a DDP model, a device choice made by a project function under another
#: name, or a loader on a distributed sampler handed in. A file with such facts passes
#: a pre-filter group holding one of these words without the word; a rule's other
#: groups and its required words it must still hold.
PROJECT_STAND_INS = frozenset(
    (
        *RANK_NEEDLES,
        *COLLECTIVE_CALL_NEEDLES,
        *COLLECTIVE_NEEDLES,
        *IMPLICIT_NEEDLES,
        *DEVICE_CHOICE_NEEDLES,
        *SAMPLED_LOADER_NEEDLES,
    )
)

Words = tuple[str, ...]


def holds_words(raw: bytes, required: Words, groups: Sequence[Words]) -> bool:
    """Whether ``raw`` holds every ``required`` word and one word of each non-empty
    group (``needles``, ``also_needles``, each ``more_needles`` group)."""
    encoded_required, encoded_groups = _encoded(required, tuple(groups))
    return all(word in raw for word in encoded_required) and all(
        any(needle in raw for needle in group) for group in encoded_groups
    )


def without_stand_ins(groups: Sequence[Words]) -> list[Words]:
    """The word groups a file with project facts must still hold one word of: those no
    project fact can stand for (``PROJECT_STAND_INS``). A rule's required words are
    its own (the call it reports is spelled in the file) and stay required."""
    return [group for group in groups if not PROJECT_STAND_INS.intersection(group)]


@lru_cache(maxsize=256)
def _encoded(
    required: Words, groups: tuple[Words, ...]
) -> tuple[tuple[bytes, ...], tuple[tuple[bytes, ...], ...]]:
    """The words as bytes, empty groups left out (made once per set of words)."""
    return (
        tuple(word.encode() for word in required),
        tuple(tuple(needle.encode() for needle in group) for group in groups if group),
    )
