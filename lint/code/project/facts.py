"""The project facts one file is handed (``ProjectIndex.facts_for``), as typed records:
what the project says about each name the file uses, and about the file's own
functions. Plain data, light enough for the engine to import at start-up; their compact
form for the cache and the lint options is ``encoding``'s."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ddplint.analysis.object_kinds import DISTRIBUTED_SAMPLER


@dataclass(frozen=True, slots=True)
class Switch:
    """The parameter a call must switch on (a value other than ``False`` / ``None`` /
    ``0``) for a collective to run: ``barrier_after=True``; ``position`` among the
    positional arguments, -1 for a keyword-only one. With ``off``, the parameter a call
    switches the collective off with (``if not evaluate:`` around it, ``evaluate=True``
    given): it runs unless the call passes a literal true value."""

    parameter: str
    position: int
    off: bool = False
    #: Set for a parameter compared with literals (``if rank not in [-1, 0]:``): the
    #: collective runs only when the value is (``member``) or is not one of ``values``;
    #: ``default``, the parameter's literal default (empty: none).
    values: tuple[Any, ...] | None = None
    member: bool = False
    default: tuple[Any, ...] = ()

    def runs_with(self, value: tuple[Any, ...]) -> bool:
        """Whether a condition switch lets the collective run when the call passes
        ``value`` (``(literal,)``; ``()``: not a literal, or none given and no literal
        default, so it may run)."""
        if self.values is None or not value:
            return True
        return (value[0] in self.values) is self.member


@dataclass(frozen=True, slots=True)
class ReachedCollective:
    """The collective a function of another module reaches: its kind, the chain of
    project functions to it (the called one first) and where it stands (``utils.py:11``)."""

    api: str
    op: str
    family: str
    creates_group: bool
    saves_checkpoint: bool
    chain: tuple[str, ...]
    where: str
    #: Set when the collective runs only if the call switches a parameter on.
    switch: Switch | None = None


@dataclass(frozen=True, slots=True)
class Agreement:
    """What a call of another module's function does with its arguments, by the
    analysis core's divergence: its positional parameters (``self`` left out), those
    whose values may reach its result (None: every one may, or it returns a value of
    its own that differs between ranks) and those it makes agree in place
    (``all_reduce(t)`` on its parameter ``t``); and, where it returns a tuple, those
    that may reach each item (``items``; an item None: every one may)."""

    parameters: tuple[str, ...]
    reaching: tuple[str, ...] | None
    agreeing: tuple[str, ...]
    items: tuple[tuple[str, ...] | None, ...] | None = None


@dataclass(frozen=True, slots=True)
class NameFacts:
    """What the project says about a name a file uses (a function, an attribute)."""

    #: The collective it reaches in another module (not for a rank-zero-only function).
    reaches: ReachedCollective | None = None
    #: It returns the rank or a test of it; with ``held``, an attribute or property
    #: holds one.
    rank_test: bool = False
    held: bool = False
    #: A project function known not to return a rank test.
    no_rank_test: bool = False
    #: The items of the tuple it returns that read the rank (``return rank, world``).
    rank_items: tuple[int, ...] = ()
    #: It chooses the rank's GPU (``torch.cuda.set_device``, itself or in what it calls).
    chooses_device: bool = False
    #: The positions of the arguments it shards (``fully_shard``, ``FSDP(...)``).
    sharded_arguments: tuple[int, ...] = ()
    #: It runs on rank zero only (its collectives are reported inside it).
    rank_zero_only: bool = False
    #: A project function whose name looks like a framework collective but is not one
    #: (``trainer.save_checkpoint`` of the project's own ``Trainer``).
    not_a_collective: bool = False
    #: What a call of it (a function of another module that issues a collective) does
    #: with its arguments: which it reduces in place, whether its result agrees.
    agreement: Agreement | None = None
    #: The kind of object it makes when called (a class, a factory) or holds (an
    #: instance, a field): ``analysis.object_kinds``; None when unknown.
    kind: str | None = None
    #: A call of it may make the host wait for the device (a function whose code or
    #: callees may, ``analysis.wait_screen``; a field or instance whose class's call may).
    may_wait: bool = False
    #: A call of an instance of it (a class: its ``__call__``, else ``forward``) may.
    instances_may_wait: bool = False

    def informs_rules(self) -> bool:
        """Whether it can make a rule fire on a file without any of the words the
        rules' pre-filters look for; what only clears a suspicion (no rank test, the
        arguments it shards) cannot."""
        return bool(
            self.reaches
            or self.rank_test
            or self.rank_items
            or self.held
            or self.chooses_device
            or self.rank_zero_only
            or self.not_a_collective
            or self.kind == DISTRIBUTED_SAMPLER
        )


@dataclass(frozen=True, slots=True)
class OwnFunctionFacts:
    """What the project says about a function of the file itself (``f``,
    ``Class.f``): what its project callers do around calling it."""

    #: Every project caller chooses the rank's GPU (``setup()``, then ``set_device``).
    callers_choose_device: bool = False
    #: The positions (``self`` not counted) of the parameters callers hand a DDP model in.
    ddp_parameters: tuple[int, ...] = ()
    #: The positions of the parameters callers hand the process's rank in.
    rank_parameters: tuple[int, ...] = ()
    #: ``(position, kind)`` of the parameters every project caller hands an object of
    #: one kind in (``analysis.object_kinds``).
    parameter_kinds: tuple[tuple[int, str], ...] = ()
    #: The positions of the parameters callers hand a data loader built on a distributed
    #: sampler in (``DataLoader(ds, sampler=DistributedSampler(ds))``).
    loader_parameters: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class FileFacts:
    """The project facts of one file: by name as it spells it (``Class:self.x`` inside
    a class), by its own functions' names, and what the project's programs that run
    the file are (``ddplint.code.project.programs``)."""

    names: Mapping[str, NameFacts] = field(default_factory=dict)
    functions: Mapping[str, OwnFunctionFacts] = field(default_factory=dict)
    #: Every program of the project that runs the file is single-process.
    runs_alone: bool = False
    #: No program of the project that runs the file trains (an export script's model).
    off_training: bool = False
    #: Nothing in the project runs the file (``ddplint.code.project.reach``).
    unrun: bool = False
    #: Its top-level functions and classes nothing in the project references.
    unreferenced: tuple[str, ...] = ()
    #: The file is a program, and run as one (its ``__main__`` block) it is
    #: single-process, though programs that import it may not be.
    main_alone: bool = False

    def __bool__(self) -> bool:
        return bool(
            self.names
            or self.functions
            or self.runs_alone
            or self.off_training
            or self.unrun
            or self.unreferenced
            or self.main_alone
        )

    def never_runs(self, name: str | None) -> bool:
        """Whether nothing in the project can run the file's code at top-level
        definition ``name`` (None: at its top level)."""
        return self.unrun or (name is not None and name in self.unreferenced)

    def informs_rules(self) -> bool:
        """Whether a fact can make a rule fire without the pre-filters' words (a DDP
        model, the rank or a loader on a distributed sampler handed in by callers can);
        a file without such facts keeps its pre-filters."""
        return any(fact.informs_rules() for fact in self.names.values()) or any(
            fact.ddp_parameters or fact.rank_parameters or fact.loader_parameters
            for fact in self.functions.values()
        )


NO_FACTS = FileFacts()
