"""What the semantic layer of one file asks the project model (``ProjectView``).

The engine hands each file the facts the project index gives about the names it uses
(``ProjectIndex.facts_for``), encoded in the lint options; this view answers the
LibCST-side questions from them: is this call a project function of another module that
reaches a collective, does it return a rank test, is this attribute a rank test.
Without facts (a file linted on its own, a test) every answer is "unknown": no.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cached_property

import libcst as cst

from ddplint.analysis.project import CallSummary, Reached
from ddplint.code.collectives.catalogue import Collective
from ddplint.code.project.encoding import decode_facts
from ddplint.code.project.facts import (
    FileFacts,
    NameFacts,
    OwnFunctionFacts,
    ReachedCollective,
    Switch,
)
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import dotted_name


class ProjectView:
    """The project facts of one file, asked with its LibCST nodes."""

    def __init__(self, facts: FileFacts, index_of: Callable[[], ModuleIndex]) -> None:
        self._facts = facts
        self._index_of = index_of
        self._by_name = CoreFacts(facts)

    @classmethod
    def decode(cls, encoded: str | None, index_of: Callable[[], ModuleIndex]) -> ProjectView:
        """The view of encoded facts; an empty one when absent or unreadable.
        ``index_of`` gives the file's LibCST index when a question needs it (the core's
        facts do not: a file whose rules answer on ``ast`` is not parsed for them)."""
        return cls(decode_facts(encoded), index_of)

    @cached_property
    def _index(self) -> ModuleIndex:
        return self._index_of()

    def __bool__(self) -> bool:
        return bool(self._facts)

    def core_facts(self) -> CoreFacts:
        """The same facts, for the analysis core (names, not LibCST nodes)."""
        return self._by_name

    def off_training(self) -> bool:
        """Whether no program of the project that runs this file trains: its code runs
        in no training step."""
        return self._facts.off_training

    def _spelled(self, expr: cst.BaseExpression) -> tuple[str, str | None] | None:
        """The name ``expr`` spells and, for ``self.x``, the class it sits in."""
        name = dotted_name(expr)
        if name is None:
            return None
        owner = self._owner_class(expr) if name.split(".", 1)[0] in ("self", "cls") else None
        return name, owner

    def _fact(self, expr: cst.BaseExpression) -> NameFacts:
        spelled = self._spelled(expr)
        return _NOTHING if spelled is None else self._by_name.fact(*spelled)

    def _owner_class(self, node: cst.CSTNode) -> str | None:
        function = self._index.enclosing_function(node)
        while function is not None:
            owner = self._index.enclosing_class(function)
            if owner is not None:
                return owner.name.value
            function = self._index.enclosing_function(function)
        return None

    def collective(self, call: cst.Call) -> Collective | None:
        """The collective a call of another module's project function reaches, with
        the chain named in ``via``."""
        reach = self._fact(call.func).reaches
        if reach is None:
            return None
        if reach.switch is not None and not _switches_on(call, reach.switch):
            return None
        return Collective(
            call,
            reach.api,
            reach.op,
            reach.family,
            reach.creates_group,
            reach.saves_checkpoint,
            via=_chain_text(reach),
        )

    def kind(self, expr: cst.BaseExpression) -> str | None:
        """The kind of object a project name makes when called (a class, a factory) or
        holds (an instance, a field set in a class of another module): see
        ``project.object_kinds``; None when unknown."""
        return self._fact(expr).kind

    def is_project_function(self, call: cst.Call) -> bool:
        """The call runs a project function that only looks like a framework
        collective (``trainer.save_checkpoint`` of the project's own ``Trainer``)."""
        return self._fact(call.func).not_a_collective

    def runs_on_rank_zero_only(self, call: cst.Call) -> bool:
        return self._fact(call.func).rank_zero_only

    def sets_device(self, call: cst.Call) -> bool:
        """The call runs a project function that chooses the rank's GPU."""
        return self._fact(call.func).chooses_device

    def device_chosen_by_callers(self, node: cst.CSTNode) -> bool:
        """``node`` sits in a function of this file that every project caller calls
        around choosing the rank's GPU (``setup()``, then ``torch.cuda.set_device``)."""
        function = self._index.enclosing_function(node)
        return function is not None and self._def_fact(function).callers_choose_device

    def wrapped_by_callers(self, function: cst.FunctionDef) -> frozenset[int]:
        """The positions (``self`` not counted) of ``function``'s parameters that a
        project caller hands a ``DistributedDataParallel`` model in."""
        return frozenset(self._def_fact(function).ddp_parameters)

    def rank_parameter_names(self, function: cst.FunctionDef) -> frozenset[str]:
        """The names of ``function``'s parameters that project callers hand the
        process's rank in (``Trainer(cfg, local_rank)`` for ``__init__(self, cfg,
        device_id)``)."""
        return parameter_names(function, self._def_fact(function).rank_parameters)

    def parameter_kinds(self, function: cst.FunctionDef) -> dict[str, str]:
        """The kinds of ``function``'s parameters that every project caller hands an
        object of one kind in, by name."""
        params = [p.name.value for p in function.params.params]
        if params and params[0] in ("self", "cls"):
            params = params[1:]
        return {
            params[position]: kind
            for position, kind in self._def_fact(function).parameter_kinds
            if position < len(params)
        }

    def _def_fact(self, function: cst.FunctionDef) -> OwnFunctionFacts:
        """The facts about a function of this file (``f``, ``Class.f``)."""
        if self._index.enclosing_function(function) is not None:
            return _NO_CALLERS  # a nested def: no project caller known
        owner = self._index.enclosing_class(function)
        name = function.name.value if owner is None else f"{owner.name.value}.{function.name.value}"
        return self._facts.functions.get(name, _NO_CALLERS)

    def sharded_arguments(self, call: cst.Call) -> frozenset[int]:
        """The positions of the arguments a project function shards (``fully_shard``)."""
        return frozenset(self._fact(call.func).sharded_arguments)

    def returns_rank_test(self, call: cst.Call) -> bool:
        """The call runs a project function that returns the rank or a test of it."""
        spelled = self._spelled(call.func)
        return spelled is not None and self._by_name.returns_rank_test(*spelled)

    def returns_no_rank_test(self, call: cst.Call) -> bool:
        """The call runs a project function known not to return the rank or a test of
        it: its result does not differ by rank just because the rank is an argument
        (``validation(model, rank, loader)`` returns an all-reduced loss)."""
        return self._fact(call.func).no_rank_test

    def holds_rank_test(self, attribute: cst.Attribute) -> bool:
        """``self.is_rank_zero`` / ``distr.is_global_main``: a property returning a rank
        test, or an attribute some method sets to one."""
        spelled = self._spelled(attribute)
        return spelled is not None and self._by_name.holds_rank_test(*spelled)


_NOTHING = NameFacts()
_NO_CALLERS = OwnFunctionFacts()


def _chain_text(reach: ReachedCollective) -> str:
    """``through `a.f` -> `b.g` (b.py:12)``: the calls to another module's collective."""
    return "through " + " -> ".join(f"`{step}`" for step in reach.chain) + f" ({reach.where})"


def _switches_on(call: cst.Call, switch: Switch) -> bool:
    """The call passes the switch's parameter (by name, or at its position) a value
    that is not a literal ``False`` / ``None`` / ``0``."""
    for index, argument in enumerate(call.args):
        named = argument.keyword is not None and argument.keyword.value == switch.parameter
        placed = argument.keyword is None and not argument.star and index == switch.position
        if named or placed:
            value = argument.value
            off = (isinstance(value, cst.Name) and value.value in ("False", "None")) or (
                isinstance(value, cst.Integer) and value.value == "0"
            )
            return not off
    return False


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
        switched = None if switch is None else (switch.parameter, switch.position)
        return Reached(reach.op or reach.api, _chain_text(reach), switched, reach.api)

    def ddp_parameters(self, function: str) -> frozenset[int]:
        return frozenset(self._facts.functions.get(function, _NO_CALLERS).ddp_parameters)

    def rank_parameters(self, function: str) -> frozenset[int]:
        return frozenset(self._facts.functions.get(function, _NO_CALLERS).rank_parameters)

    def loader_parameters(self, function: str) -> frozenset[int]:
        return frozenset(self._facts.functions.get(function, _NO_CALLERS).loader_parameters)

    def returns_rank_test(self, name: str, owner: str | None) -> bool:
        fact = self.fact(name, owner)
        return fact.rank_test and not fact.held

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

    def kind(self, name: str, owner: str | None) -> str | None:
        return self.fact(name, owner).kind


def parameter_names(function: cst.FunctionDef, positions: Iterable[int]) -> frozenset[str]:
    """The names of ``function``'s parameters at ``positions`` (``self`` / ``cls`` not
    counted), as the project model counts them."""
    params = [p.name.value for p in function.params.params]
    if params and params[0] in ("self", "cls"):
        params = params[1:]
    return frozenset(params[i] for i in positions if i < len(params))
