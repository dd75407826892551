"""What one file's rules ask the project model (``ProjectView``, ``CoreFacts``).

The engine hands each file the facts the project index gives about the names it uses
(``ProjectIndex.facts_for``), encoded in the lint options; the view decodes them and
hands them to the analysis core (``CoreFacts``: is this call a project function of
another module that reaches a collective, does it return a rank test, is this attribute
a rank test), by names as the file spells them. Without facts (a file linted on its own,
a test) every answer is "unknown": no.
"""

from __future__ import annotations

from dataclasses import astuple

from ddplint.analysis.project import CallSummary, Reached
from ddplint.code.project.encoding import decode_facts
from ddplint.code.project.facts import (
    FileFacts,
    NameFacts,
    OwnFunctionFacts,
    ReachedCollective,
)


class ProjectView:
    """The project facts of one file: the core's (``core_facts``) and the file's own."""

    def __init__(self, facts: FileFacts) -> None:
        self._facts = facts
        self._by_name = CoreFacts(facts)

    @classmethod
    def decode(cls, encoded: str | None) -> ProjectView:
        """The view of encoded facts; an empty one when absent or unreadable."""
        return cls(decode_facts(encoded))

    def __bool__(self) -> bool:
        return bool(self._facts)

    def core_facts(self) -> CoreFacts:
        """The same facts, for the analysis core (names as the file spells them)."""
        return self._by_name

    def off_training(self) -> bool:
        """Whether no program of the project that runs this file trains: its code runs
        in no training step."""
        return self._facts.off_training

    def never_runs(self, definition: str | None) -> bool:
        """Whether nothing in the project can run the file's code in its top-level
        function or class ``definition`` (None: at its top level): the file is run by
        nothing, or the definition is referenced by nothing (``project.reach``)."""
        return self._facts.never_runs(definition)

    def never_runs_anything(self) -> bool:
        """Whether any of the file's code is run by nothing in the project."""
        return self._facts.unrun or bool(self._facts.unreferenced)


_NOTHING = NameFacts()
_NO_CALLERS = OwnFunctionFacts()


def _chain_text(reach: ReachedCollective) -> str:
    """``through `a.f` -> `b.g` (b.py:12)``: the calls to another module's collective."""
    return "through " + " -> ".join(f"`{step}`" for step in reach.chain) + f" ({reach.where})"


class CoreFacts:
    """The project view's answers to the analysis core's questions
    (``ddplint.analysis.project.ProjectFacts``), asked with names as the file spells
    them."""

    def __init__(self, facts: FileFacts) -> None:
        self._facts = facts

    def fact(self, name: str, owner: str | None) -> NameFacts:
        """The facts of a name as spelled (``self.x`` keyed by its ``owner`` class)."""
        if name.split(".", 1)[0] in ("self", "cls"):
            if owner is None:
                return _NOTHING
            name = f"{owner}:{name}"
        return self._facts.names.get(name, _NOTHING)

    def sharded_arguments(self, name: str, owner: str | None) -> frozenset[int]:
        return frozenset(self.fact(name, owner).sharded_arguments)

    def reached(self, name: str, owner: str | None) -> Reached | None:
        fact = self.fact(name, owner)
        reach = fact.reaches
        if reach is None or fact.rank_zero_only:
            return None
        switch = reach.switch
        switched = None if switch is None else astuple(switch)
        return Reached(reach.op or reach.api, _chain_text(reach), switched, reach.api)

    def ddp_parameters(self, function: str) -> frozenset[int]:
        return frozenset(self._facts.functions.get(function, _NO_CALLERS).ddp_parameters)

    def rank_parameters(self, function: str) -> frozenset[int]:
        return frozenset(self._facts.functions.get(function, _NO_CALLERS).rank_parameters)

    def loader_parameters(self, function: str) -> frozenset[int]:
        return frozenset(self._facts.functions.get(function, _NO_CALLERS).loader_parameters)

    def parameter_kinds(self, function: str) -> dict[int, str]:
        return dict(self._facts.functions.get(function, _NO_CALLERS).parameter_kinds)

    def returns_rank_test(self, name: str, owner: str | None) -> bool:
        fact = self.fact(name, owner)
        return fact.rank_test and not fact.held

    def rank_items(self, name: str, owner: str | None) -> frozenset[int]:
        return frozenset(self.fact(name, owner).rank_items)

    def holds_rank_test(self, name: str, owner: str | None) -> bool:
        fact = self.fact(name, owner)
        return fact.rank_test and fact.held

    def call_summary(self, name: str, owner: str | None) -> CallSummary | None:
        agreement = self.fact(name, owner).agreement
        if agreement is None:
            return None
        reaching, items = agreement.reaching, agreement.items
        return CallSummary(
            agreement.parameters,
            None if reaching is None else frozenset(reaching),
            frozenset(agreement.agreeing),
            None if items is None else tuple(None if i is None else frozenset(i) for i in items),
        )

    def chooses_device(self, name: str, owner: str | None) -> bool:
        return self.fact(name, owner).chooses_device

    def callers_choose_device(self, function: str) -> bool:
        return self._facts.functions.get(function, _NO_CALLERS).callers_choose_device

    def runs_alone(self) -> bool:
        return self._facts.runs_alone

    def main_runs_alone(self) -> bool:
        return self._facts.main_alone

    def kind(self, name: str, owner: str | None) -> str | None:
        return self.fact(name, owner).kind

    def may_wait(self, name: str, owner: str | None) -> bool:
        return self.fact(name, owner).may_wait

    def instances_may_wait(self, name: str, owner: str | None) -> bool:
        return self.fact(name, owner).instances_may_wait
