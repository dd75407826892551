"""The ``ast`` screens by which some rules say they cannot report on a module, kept out
of the rule modules (which import LibCST) so that the catalogue can ask them: each
takes the module's CPython ``ast`` and the run's options, and says False only where the
rule's ``check`` would report nothing (``CodeRule.may_report``). A file every rule of
which is screened out is linted without importing a rule module or LibCST."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from ddplint.analysis.api import GROUP_CREATORS, STEP_FAILURES
from ddplint.analysis.forms import (
    caught_exception_names,
    defines,
    holds_a_loop_statement,
    loops_over_selected_values,
    may_iterate_a_set,
    may_shard_by_rank,
    mentions,
    passes_true,
)
from ddplint.code.collectives.kinds import DEVICE_MESH_CREATORS
from ddplint.code.project.encoding import OPTIONS_KEY, decode_facts
from ddplint.settings import LintOptions

#: The last names of the functions that create a process group.
GROUP_CREATOR_NAMES = GROUP_CREATORS | {name.rsplit(".", 1)[-1] for name in DEVICE_MESH_CREATORS}

#: Exceptions that end iteration, stop the program or report a missing feature: not a
#: rank-local condition of the data.
NOT_DATA_EXCEPTIONS = frozenset(
    {
        "StopIteration",
        "StopAsyncIteration",
        "KeyboardInterrupt",
        "SystemExit",
        "GeneratorExit",
        "ImportError",
        "ModuleNotFoundError",
        "NotImplementedError",
    }
)


def names_a_data_exception(names: Iterable[str]) -> bool:
    """Whether an ``except`` clause naming ``names`` catches an exception a batch can
    raise on one rank: it names some, none of them a step failure (out of memory,
    ``RuntimeError``: DDP204's) or an exception that is not about the data."""
    spelled = list(names)
    return bool(spelled) and not any(
        name in STEP_FAILURES or name in NOT_DATA_EXCEPTIONS for name in spelled
    )


def logs_with_sync_dist(tree: ast.Module, options: LintOptions) -> bool:
    """DDP202: only ``sync_dist=True`` makes a log call a collective (another module's
    function never reaches a Lightning log): a module that passes none has none."""
    return passes_true(tree, "sync_dist")


def defines_training_step(tree: ast.Module, options: LintOptions) -> bool:
    """DDP205: it reads the module's own ``training_step`` methods only."""
    return defines(tree, "training_step")


def may_create_a_group(tree: ast.Module, options: LintOptions) -> bool:
    """DDP207: a group is created by a call that spells a group creator (however
    imported) or by another module's function whose project facts say it creates one."""
    if mentions(tree, GROUP_CREATOR_NAMES):
        return True
    facts = decode_facts(options.fact(OPTIONS_KEY)).names.values()
    return any(fact.reaches is not None and fact.reaches.creates_group for fact in facts)


def may_loop_over_a_set(tree: ast.Module, options: LintOptions) -> bool:
    """DDP209: a loop that may iterate a set."""
    return may_iterate_a_set(tree)


def catches_a_data_exception(tree: ast.Module, options: LintOptions) -> bool:
    """DDP212: only an ``except`` clause naming a data exception can report."""
    return any(names_a_data_exception(names) for names in caught_exception_names(tree))


def loops_over_values(tree: ast.Module, options: LintOptions) -> bool:
    """DDP217: a loop over the values selected from a batch (``y.unique()``)."""
    return loops_over_selected_values(tree)


def may_shard_a_list_by_rank(tree: ast.Module, options: LintOptions) -> bool:
    """DDP405: a slice or split that may shard a list by rank."""
    return may_shard_by_rank(tree)


def has_a_loop_statement(tree: ast.Module, options: LintOptions) -> bool:
    """DDP402: both its findings sit at an epoch loop of the module (a ``for`` or
    ``while`` statement); a module without one cannot report."""
    return holds_a_loop_statement(tree)
