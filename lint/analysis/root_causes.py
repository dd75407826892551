"""One finding per root cause: which question owns a decision that several see.

One test can answer several questions: a rank test that skips a DDP model's forward is
a parting (``questions.where_ranks_part``) and a forward on some ranks
(``ddp_forwards``); a rank test around ``new_group`` is a parting and a group made on
some ranks (``group_creations``); a ``continue`` on this rank's NaN loss is a parting
and a skip on this rank's data (``step_skips``); a test of a flag that some ranks set is
a decided parting and, where the flag comes from this rank's loss, a skip on its data.
The question that says most about the cause owns it and the general one defers:

- ``parting_owned_elsewhere``: a parting whose test a forward's or a group's rank guard
  is (for that collective), or whose exit is a skip on this rank's data;
- ``skip_owned_elsewhere``: a skip whose test is the test of a decided parting (the
  parting names the flag and where some ranks set it).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cached_property

from ddplint.analysis.api import GROUP_CREATIONS
from ddplint.analysis.ddp_forwards import ddp_forwards_on_some_ranks
from ddplint.analysis.decisions import decided_by_some_ranks
from ddplint.analysis.effects import DDP_FORWARD
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.group_creations import groups_on_some_ranks
from ddplint.analysis.questions import Parting, where_ranks_part
from ddplint.analysis.rank_guards import RankGuard
from ddplint.analysis.step_skips import DataSkip, data_dependent_skips


class RootCauses:
    """The decisions of one module that a specific question owns."""

    def __init__(self, analysis: ModuleAnalysis) -> None:
        self._analysis = analysis

    @cached_property
    def _forward_tests(self) -> set[int]:
        return _guard_tests(f.guard for f in ddp_forwards_on_some_ranks(self._analysis))

    @cached_property
    def _group_tests(self) -> set[int]:
        return _guard_tests(g.guard for g in groups_on_some_ranks(self._analysis))

    @cached_property
    def _skip_exits(self) -> set[int]:
        """The exits of skips on this rank's data (a handler's skip is not an exit)."""
        skips = data_dependent_skips(self._analysis, lambda handler: False)
        return {id(skip.at) for skip in skips if skip.exit}

    @cached_property
    def _decided_tests(self) -> set[int]:
        found: set[int] = set()
        for parting in where_ranks_part(self._analysis):
            if decided_by_some_ranks(parting):
                test = parting.test
                found |= {id(test), id(getattr(test, "test", test))}
        return found

    def parting_owned_elsewhere(self, parting: Parting) -> bool:
        """Whether a more specific question reports the parting's decision: a DDP
        forward or a process group under a rank test, an exit on this rank's data."""
        name = parting.missed.name
        test = id(parting.test)
        if name == DDP_FORWARD and test in self._forward_tests:
            return True
        if name.rsplit(".", 1)[-1] in GROUP_CREATIONS and test in self._group_tests:
            return True
        return id(parting.cause) in self._skip_exits

    def skip_owned_elsewhere(self, skip: DataSkip) -> bool:
        """Whether the skip's test is the test of a parting decided by a flag some ranks
        set: that parting names the flag (one finding per root cause)."""
        return skip.test is not None and id(skip.test) in self._decided_tests


def _guard_tests(guards: Iterable[RankGuard]) -> set[int]:
    """The statements and tests of rank guards, by id."""
    return {id(node) for guard in guards for node in (guard.cause, guard.test)}
