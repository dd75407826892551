"""What the project model tells the core about names defined in other modules of the
project: a function reaches a collective (and through which chain), a function's
parameters receive a ``DistributedDataParallel`` model, the rank, a data loader on a
distributed sampler or an object of one kind (a ``GradScaler``) from its callers, a
function returns a rank test, a function chooses the rank's GPU, what a call of it
does with its arguments (reduces them in place, returns an agreed value). The engine
answers through the file's project view; a file linted on its own has no project, and
every answer is "unknown".
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from ddplint.analysis.control_flow import own_nodes


@dataclass(frozen=True)
class Reached:
    """A collective another module's function reaches: its name, the chain of calls to
    it (for the message), and the parameter a call must switch on, if any (or, with
    its third item true, must not switch on: ``if not evaluate:`` around it)."""

    name: str
    chain: str
    #: ``(parameter, position, off, values, member, default)``; ``values`` not None:
    #: the parameter compared with literals (``if rank not in [-1, 0]:``), the
    #: collective runs only when the call's literal (or the literal default) is
    #: (``member``) or is not one of them.
    switch: tuple[str, int, bool, tuple[Any, ...] | None, bool, tuple[Any, ...]] | None = None
    #: The catalogued API it is (``torch.distributed.checkpoint.save``).
    api: str = ""


@dataclass(frozen=True)
class CallSummary:
    """What a call of a function does with its arguments: its positional
    parameters (``self`` left out for a method), those whose values may reach its
    result (None: every positional argument may), and those it makes agree in place
    (hands to an in-place collective, never binding the name again); and, where it
    returns a tuple, those whose values may reach each item (``items``; an item None:
    every positional argument may)."""

    parameters: tuple[str, ...]
    reaching: frozenset[str] | None
    agreeing: frozenset[str]
    items: tuple[frozenset[str] | None, ...] | None = None


class ProjectFacts(Protocol):
    """The questions the core asks of the project model (names as spelled in the file;
    ``owner`` is the class of the method a ``self.x`` spelling sits in)."""

    def reached(self, name: str, owner: str | None) -> Reached | None:
        """The collective a call of ``name`` reaches in another module."""
        ...

    def ddp_parameters(self, function: str) -> frozenset[int]:
        """Positions (``self`` not counted) of the parameters of this module's function
        (``f`` or ``Class.f``) that a project caller hands a DDP model in."""
        ...

    def rank_parameters(self, function: str) -> frozenset[int]:
        """Positions (``self`` not counted) of the parameters of this module's function
        that a project caller passes the process's rank in."""
        ...

    def loader_parameters(self, function: str) -> frozenset[int]:
        """Positions (``self`` not counted) of the parameters of this module's function
        that a project caller hands a data loader built on a distributed sampler in."""
        ...

    def parameter_kinds(self, function: str) -> dict[int, str]:
        """Per position (``self`` not counted), the kind of object (``object_kinds``)
        every project caller hands the parameter of this module's function in (a
        ``GradScaler`` made by ``main`` and handed to ``train_one_epoch``)."""
        ...

    def returns_rank_test(self, name: str, owner: str | None) -> bool:
        """Whether the function returns the rank or a test of it (``is_main()`` of a
        project's utilities)."""
        ...

    def rank_items(self, name: str, owner: str | None) -> frozenset[int]:
        """The items of the tuple another module's function returns that read the rank
        (``return rank, local_rank, world_size``)."""
        ...

    def holds_rank_test(self, name: str, owner: str | None) -> bool:
        """Whether an attribute or property holds a rank test (``self.is_rank_zero``,
        ``distr.is_global_main``), as the project's methods set or compute it."""
        ...

    def call_summary(self, name: str, owner: str | None) -> CallSummary | None:
        """What a call of another module's function does with its arguments
        (``utils.reduce_dict(d)`` returns the agreed dict, ``comm.sync(t)`` all-reduces
        ``t`` in place)."""
        ...

    def chooses_device(self, name: str, owner: str | None) -> bool:
        """Whether a call of ``name`` chooses the rank's GPU (``torch.cuda.set_device``
        in a project helper, itself or in what it calls)."""
        ...

    def callers_choose_device(self, function: str) -> bool:
        """Whether every project caller of this module's function (``f`` or
        ``Class.f``) chooses the rank's GPU around calling it (``setup()``, then
        ``torch.cuda.set_device``)."""
        ...

    def runs_alone(self) -> bool:
        """Whether every program of the project that runs this module is one process
        (none starts or joins a process group)."""
        ...

    def main_runs_alone(self) -> bool:
        """Whether this module, run as a program (its ``__main__`` block), is one
        process: neither it nor a module it imports starts or joins a process group."""
        ...

    def kind(self, name: str, owner: str | None) -> str | None:
        """The kind of object (``object_kinds``) a project class or factory of another
        module makes when called, or a project name holds."""
        ...

    def sharded_arguments(self, name: str, owner: str | None) -> frozenset[int]:
        """Positions of the arguments a call of another module's function shards
        (``fully_shard``, ``FSDP(...)`` inside it)."""
        ...

    def may_wait(self, name: str, owner: str | None) -> bool:
        """Whether a call of ``name`` (a function of another module, a field or
        instance holding a project class's instance) may make the host wait for the
        device (``analysis.wait_screen``, along the project's calls)."""
        ...

    def instances_may_wait(self, name: str, owner: str | None) -> bool:
        """Whether a call of an instance of the project class ``name`` (its
        ``__call__``, else its ``forward``) may make the host wait for the device."""
        ...


class NoProject:
    """A file linted on its own: nothing is known of other modules."""

    def reached(self, name: str, owner: str | None) -> Reached | None:
        return None

    def ddp_parameters(self, function: str) -> frozenset[int]:
        return frozenset()

    def rank_parameters(self, function: str) -> frozenset[int]:
        return frozenset()

    def loader_parameters(self, function: str) -> frozenset[int]:
        return frozenset()

    def parameter_kinds(self, function: str) -> dict[int, str]:
        return {}

    def returns_rank_test(self, name: str, owner: str | None) -> bool:
        return False

    def rank_items(self, name: str, owner: str | None) -> frozenset[int]:
        return frozenset()

    def holds_rank_test(self, name: str, owner: str | None) -> bool:
        return False

    def call_summary(self, name: str, owner: str | None) -> CallSummary | None:
        return None

    def chooses_device(self, name: str, owner: str | None) -> bool:
        return False

    def callers_choose_device(self, function: str) -> bool:
        return False

    def runs_alone(self) -> bool:
        return False

    def main_runs_alone(self) -> bool:
        return False

    def kind(self, name: str, owner: str | None) -> str | None:
        return None

    def sharded_arguments(self, name: str, owner: str | None) -> frozenset[int]:
        return frozenset()

    def may_wait(self, name: str, owner: str | None) -> bool:
        return False

    def instances_may_wait(self, name: str, owner: str | None) -> bool:
        return False


NO_PROJECT = NoProject()


def project_key(
    function: ast.FunctionDef | ast.AsyncFunctionDef, owner: ast.AST | None
) -> str | None:
    """How the project model names a function of this module (``f``, ``Class.f``); None
    for a nested function, which no other module calls."""
    if isinstance(owner, ast.ClassDef):
        return f"{owner.name}.{function.name}"
    return function.name if isinstance(owner, ast.Module) else None


def parameters_at(
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    owner: ast.AST | None,
    positions: Iterable[int],
) -> list[str]:
    """The names of ``function``'s parameters at ``positions`` (a method's ``self`` or
    ``cls`` not counted), as the project model counts them."""
    parameters = [a.arg for a in function.args.posonlyargs + function.args.args]
    if isinstance(owner, ast.ClassDef) and parameters[:1] in (["self"], ["cls"]):
        parameters = parameters[1:]
    return [parameters[p] for p in sorted(positions) if p < len(parameters)]


def kept_parameters(
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    owner: ast.AST | None,
    positions: Iterable[int],
) -> list[str]:
    """The parameters at ``positions`` (as ``parameters_at``) that the function's own
    code never binds again: each holds what its callers hand in."""
    stored = {
        node.id
        for node in own_nodes(function)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    }
    return [name for name in parameters_at(function, owner, positions) if name not in stored]
