"""Distributed samplers walked epoch after epoch without ``set_epoch``: a question to
the core (DDP402), asked by ``unset_epochs(analysis)`` in two forms.

For each ``DistributedSampler`` the module makes: the loader built on it (``sampler=``
or a ``batch_sampler`` made from it), a loop over that loader that an outer (epoch) loop
repeats (``object_flow``: through names, ``self`` fields, returns and parameters), and
whether ``set_epoch`` is called on the sampler there. A ``set_epoch`` call counts when
its receiver holds the sampler (or is the loader's ``.sampler`` / ``.batch_sampler``,
``.batch_sampler.sampler``) and it runs in the epoch loop or in a function the epoch
loop calls; or where it runs is not seen (another function the module never calls: a
hook); or its receiver is nothing the module makes (``args.sampler``, a parameter):
then it may be this sampler. It does not count when it runs outside the epoch loop in
the loop's own function (once per run), or on another sampler of the module.

For a loader the module does not make: a parameter that the project's callers in other
modules hand a loader built on a distributed sampler in
(``ProjectFacts.loader_parameters``), walked every epoch by a loop that trains, with no
``set_epoch`` that may reach its sampler.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ddplint.analysis.api import (
    BACKWARD_METHODS,
    DATA_LOADERS,
    DATALOADER_POSITIONS,
    DISTRIBUTED_SAMPLER_SEED_POSITION,
    DISTRIBUTED_SAMPLERS,
)
from ddplint.analysis.constants import nodes_within
from ddplint.analysis.control_flow import own_nodes, single_bindings
from ddplint.analysis.enumerate_loops import walked_iterable
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.names import bound_names, dotted_name, passed_argument
from ddplint.analysis.object_flow import Function, Loop, ModuleCode, ObjectFlow, WalkLoop
from ddplint.analysis.object_kinds import DISTRIBUTED_SAMPLER
from ddplint.analysis.project import kept_parameters, project_key

#: The loader attributes that hand back its sampler (``loader.batch_sampler.sampler``
#: too).
_SAMPLER_ATTRIBUTES = frozenset({"sampler", "batch_sampler"})
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: How many local calls deep a loop's body is followed (to ``set_epoch``, a backward).
_CALL_DEPTH = 3


@dataclass(frozen=True)
class UnsetSampler:
    """A sampler (``sampler``) whose loader (``loader``) is walked by ``loop`` every
    epoch with no ``set_epoch`` on it. ``receiver``: how the epoch loop's own code can
    reach the sampler (``sampler`` or ``loader.sampler``), when a statement at the start
    of the epoch loop can call it; ``loader_name``: the name the loader is bound to."""

    sampler: ast.Call
    loader: ast.Call
    loop: WalkLoop
    receiver: str | None
    loader_name: str | None
    #: Whether the sampler is made by the library's class (its ``shuffle`` parameter and
    #: default known), not by a project subclass or factory.
    library: bool = True


@dataclass(frozen=True)
class UnsetHandedLoader:
    """A loader that callers in other modules build on a distributed sampler and hand to
    a function of the module, walked by ``loop`` (over ``walked``, in ``function``)
    every epoch with no ``set_epoch`` on its sampler."""

    function: ast.AST
    walked: str
    loop: WalkLoop


def unset_epochs(
    analysis: ModuleAnalysis,
) -> tuple[list[UnsetSampler], list[UnsetHandedLoader]]:
    """Each distributed sampler of the module walked every epoch without ``set_epoch``
    (whether it shuffles is the rule's to ask), and each loader on a distributed sampler
    that project callers hand to a function of the module, walked every epoch by a loop
    that trains, without ``set_epoch`` (the module's flows built once for both)."""
    epochs = _SamplerEpochs.of(analysis)
    if epochs is None:
        return [], []
    samplers = [unset for flows in epochs.flows if (unset := epochs.unset(flows)) is not None]
    handed = [
        UnsetHandedLoader(
            epochs.code.scope_of(loop.walk),
            dotted_name(walked_iterable(analysis.names, loop.walked)) or "the loader",
            loop,
        )
        for flows in epochs.flows
        if flows.handed
        for loop in epochs.unset_handed(flows)
    ]
    return sorted(samplers, key=lambda u: (u.sampler.lineno, u.sampler.col_offset)), handed


def samplers_without_set_epoch(analysis: ModuleAnalysis) -> list[UnsetSampler]:
    """The samplers of ``unset_epochs``."""
    return unset_epochs(analysis)[0]


def _handed_loaders(analysis: ModuleAnalysis) -> list[tuple[Function, str]]:
    """``(function, parameter)`` for each parameter of the module's functions that
    project callers hand a loader on a distributed sampler in, and that the function
    never binds again (``loader = accelerator.prepare(loader)`` hands it on)."""
    nodes = analysis.nodes
    handed: list[tuple[Function, str]] = []
    for function in nodes.functions():
        owner = nodes.scope_of.get(function)
        key = project_key(function, owner)
        positions = analysis.project.loader_parameters(key) if key is not None else ()
        handed.extend((function, p) for p in kept_parameters(function, owner, positions))
    return handed


class _SamplerEpochs:
    @classmethod
    def of(cls, analysis: ModuleAnalysis) -> _SamplerEpochs | None:
        """The module's samplers and handed loaders, or None when it has neither."""
        calls = [call for found in analysis.nodes.calls_by_scope.values() for call in found]
        samplers = [c for c in calls if analysis.names.resolve(c.func) in DISTRIBUTED_SAMPLERS]
        handed = _handed_loaders(analysis)
        held_classes = _class_references(analysis, samplers)
        code = ModuleCode(analysis.nodes, analysis.names)
        own = [c for c in calls if c not in samplers and _makes_own_sampler(analysis, code, c)]
        if not samplers and not handed and not held_classes and not own:
            return None
        if held_classes:
            samplers += _calls_of_held_class(analysis, code, calls, held_classes)
        return cls(analysis, code, samplers, handed, own)

    def __init__(
        self,
        analysis: ModuleAnalysis,
        code: ModuleCode,
        samplers: list[ast.Call],
        handed: list[tuple[Function, str]],
        own: list[ast.Call],
    ):
        self._analysis = analysis
        self._code = code
        self.flows = [self._flows_of(sampler) for sampler in samplers]
        self.flows += [self._flows_of(sampler, library=False) for sampler in own]
        self.flows += self._flows_handed(handed)
        self._set_epochs = [
            (call, scope)
            for call, scope in code.calls
            if isinstance(call.func, ast.Attribute) and call.func.attr == "set_epoch"
        ]

    def _flows_of(self, sampler: ast.Call, library: bool = True) -> _Flows:
        """The places holding the sampler, and those holding a loader built on it."""
        held = ObjectFlow(self._code, lambda expression, _: expression is sampler)
        loaders: list[ast.Call] = []

        def built_on(expression: ast.expr, scope: ast.AST) -> bool:
            if not (
                isinstance(expression, ast.Call)
                and self._analysis.names.resolve(expression.func) in DATA_LOADERS
            ):
                return False
            given = passed_argument(expression, "sampler", DATALOADER_POSITIONS["sampler"])
            batches = passed_argument(expression, "batch_sampler")
            if not (
                (given is not None and held.carries(given, scope))
                or (
                    isinstance(batches, ast.Call)
                    and any(held.carries(a, scope) for a in _arguments(batches))
                )
            ):
                return False
            if not any(expression is c for c in loaders):
                loaders.append(expression)
            return True

        return _Flows(sampler, held, ObjectFlow(self._code, built_on), loaders, library=library)

    @property
    def code(self) -> ModuleCode:
        return self._code

    def _flows_handed(self, handed: list[tuple[Function, str]]) -> list[_Flows]:
        """The places holding each loader handed to a function of the module as a
        parameter, one flow per parameter; a parameter the module itself hands another
        one's loader in (``one_epoch(model, loader)``) is that loader's, not its own."""
        flows = {
            (id(function), parameter): self._flow_of_parameter(function, parameter)
            for function, parameter in handed
        }
        kept: list[_Flows] = []
        for function, parameter in handed:
            place = ("name", function, parameter)
            key = (id(function), parameter)
            if not any(place in flow.places for other, flow in flows.items() if other != key):
                nothing = ObjectFlow(self._code, lambda expression, scope: False)
                kept.append(_Flows(None, nothing, flows[key], [], handed=True))
        return kept

    def _flow_of_parameter(self, function: Function, parameter: str) -> ObjectFlow:
        def arrives(expression: ast.expr, scope: ast.AST) -> bool:
            return (
                scope is function
                and isinstance(expression, ast.Name)
                and (expression.id == parameter)
            )

        return ObjectFlow(self._code, arrives)

    def unset_handed(self, flows: _Flows) -> list[WalkLoop]:
        """The epoch-repeated walks of a handed loader that train and that no
        ``set_epoch`` covers, one per epoch loop."""
        found: list[WalkLoop] = []
        for loop in flows.loaders.loops():
            if any(loop.outer is seen.outer for seen in found):
                continue
            if not self._covered(flows, loop) and self._trains(list(loop.steps)):
                found.append(loop)
        return found

    def unset(self, flows: _Flows) -> UnsetSampler | None:
        if flows.sampler is None or not flows.loader_calls:
            return None
        for loop in flows.loaders.loops():
            if self._covered(flows, loop):
                continue
            if flows.library and self._seeded_each_trip(flows.sampler, loop.outer):
                continue  # a new sampler every trip, its seed moved on: a new order
            evaluation_counts = not (
                loop.calls
                or self._on_others(flows)
                or not flows.library
                or self._made_each_trip(flows.sampler, loop.outer)
            )
            if not evaluation_counts and not self._trains(list(loop.steps)):
                # Walked from elsewhere, beside a set_epoch on another sampler, a project
                # sampler (whose shuffle is not seen), or a sampler made anew each trip
                # (one per task or evaluation): only a loop that trains counts (an
                # evaluation's order does not matter).
                continue
            loader = min(flows.loader_calls, key=lambda c: (c.lineno, c.col_offset))
            return UnsetSampler(
                flows.sampler,
                loader,
                loop,
                self._receiver(flows, loop),
                self._bound_name(loader),
                flows.library,
            )
        return None

    def _seeded_each_trip(self, sampler: ast.Call, outer: Loop) -> bool:
        """Whether ``outer`` makes the sampler anew on each trip with a ``seed`` that reads
        what the trip changes (the loop's target, a counter it steps: ``seed=base +
        epoch``): each trip's sampler shuffles in another order, with no ``set_epoch``."""
        if not self._made_each_trip(sampler, outer):
            return False
        seed = passed_argument(sampler, "seed", DISTRIBUTED_SAMPLER_SEED_POSITION)
        if seed is None:
            return False
        stepped = _trip_names(outer)
        return any(dotted_name(n) in stepped for n in ast.walk(seed))

    def _made_each_trip(self, sampler: ast.Call, outer: Loop) -> bool:
        """Whether ``outer`` makes the sampler anew on each trip (in its own body)."""
        return any(loop is outer for loop in self._code.loops_around(sampler))

    # -- set_epoch ---------------------------------------------------------------------

    def _covered(self, flows: _Flows, loop: WalkLoop) -> bool:
        """Whether a ``set_epoch`` call may reach the sampler once per ``loop.outer``."""
        reached: set[int] | None = None
        for call, scope in self._set_epochs:
            assert isinstance(call.func, ast.Attribute)
            holders = [f for f in self.flows if f.holds(call.func.value, scope)]
            if not holders:
                return True  # on something the module does not make: may be this sampler
            if not any(f is flows for f in holders):
                continue
            if any(outer is loop.outer for outer in self._code.loops_around(call)):
                return True
            if not isinstance(scope, _FUNCTIONS) or scope is self._code.scope_of(loop.outer):
                continue  # once per run of the epoch loop, not once per epoch
            if reached is None:
                reached = self._reached_from(loop.outer)
            if id(scope) in reached or not any(self._code.calls_of(scope)):
                return True
        return False

    def _on_others(self, flows: _Flows) -> bool:
        """Whether the module calls ``set_epoch`` on another of its samplers."""
        return any(
            f is not flows and f.holds(call.func.value, scope)
            for call, scope in self._set_epochs
            if isinstance(call.func, ast.Attribute)
            for f in self.flows
        )

    def _reached_from(self, loop: Loop) -> set[int]:
        """The module's functions a loop's body calls, a few calls deep (by id)."""
        reached: set[int] = set()
        pending: list[tuple[list[ast.AST], ast.AST, int]] = [
            (list(nodes_within(loop.body)), self._code.scope_of(loop), _CALL_DEPTH)
        ]
        while pending:
            nodes, scope, depth = pending.pop()
            for node in nodes:
                if not isinstance(node, ast.Call):
                    continue
                found = self._code.callee(node, scope)
                if found is None or id(found[0]) in reached:
                    continue
                reached.add(id(found[0]))
                if depth > 1:
                    pending.append((list(own_nodes(found[0])), found[0], depth - 1))
        return reached

    # -- training --------------------------------------------------------------------

    def _trains(self, body: list[ast.stmt], depth: int = _CALL_DEPTH) -> bool:
        """Whether ``body`` runs a backward, itself or in a module function it calls."""
        if not body:
            return False
        scope = self._code.scope_of(body[0])
        for node in nodes_within(body):
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Attribute) and node.func.attr in BACKWARD_METHODS:
                return True
            found = self._code.callee(node, scope) if depth > 1 else None
            if found is not None and self._trains(found[0].body, depth - 1):
                return True
        return False

    # -- naming and the fix ----------------------------------------------------------

    def _bound_name(self, call: ast.Call) -> str | None:
        """``x`` (or ``self.x``) when ``call`` is the whole right side of ``x = call``."""
        for node in own_nodes(self._code.scope_of(call)):
            if isinstance(node, ast.Assign) and node.value is call and len(node.targets) == 1:
                return dotted_name(node.targets[0])
        return None

    def _receiver(self, flows: _Flows, loop: WalkLoop) -> str | None:
        """``sampler`` or ``loader.sampler``: a name bound once before the epoch loop in
        its function to the sampler (or to its loader, walked by the loop)."""
        assert flows.sampler is not None
        if (
            loop.calls
            or self._analysis.names.resolve(flows.sampler.func) not in DISTRIBUTED_SAMPLERS
        ):
            return None  # walked elsewhere; a class held in a place may be another sampler
        if isinstance(loop.walk, ast.Call):
            return None  # an iterator made anew: its loop's trips are steps, not epochs
        scope = self._code.scope_of(loop.outer)
        once = single_bindings(scope)
        for name, value in once.items():
            if value is flows.sampler and _before(value, loop.outer):
                return name
        walked = walked_iterable(self._analysis.names, loop.walked)
        if not isinstance(walked, ast.Name):
            return None
        loader = once.get(walked.id)
        if (
            loader is not None
            and _before(loader, loop.outer)
            and flows.loaders.carries(loader, scope)
            and self._always_on_sampler(flows)
        ):
            return f"{walked.id}.sampler"
        return None

    def _always_on_sampler(self, flows: _Flows) -> bool:
        """Whether each loader call takes the sampler as ``sampler=`` on every path: not
        a conditional or a name bound twice (``sampler = DistributedSampler(ds) if
        distributed else None``), where ``loader.sampler`` may be another sampler,
        without ``set_epoch``; not a ``batch_sampler``."""
        for call in flows.loader_calls:
            given = passed_argument(call, "sampler", DATALOADER_POSITIONS["sampler"])
            if isinstance(given, ast.Name):
                given = single_bindings(self._code.scope_of(call)).get(given.id)
            if given is None or isinstance(given, (ast.IfExp, ast.BoolOp, ast.Constant)):
                return False
        return True


@dataclass(frozen=True)
class _Flows:
    """A sampler, the places holding it, those holding a loader built on it, and the
    calls that build those loaders; or, for a loader handed in from another module, no
    sampler or calls and the parameter it arrives in."""

    sampler: ast.Call | None
    held: ObjectFlow
    loaders: ObjectFlow
    loader_calls: list[ast.Call]
    #: Whether the loaders are those handed in by other modules' callers.
    handed: bool = False
    #: Whether the sampler is the library's class (else a project subclass or factory:
    #: its signature, its shuffle default and its ``__iter__`` are the project's).
    library: bool = True

    def holds(self, receiver: ast.expr, scope: ast.AST) -> bool:
        """Whether ``receiver`` may be the sampler: a place holding it, or a loader's
        ``.sampler``, ``.batch_sampler`` or ``.batch_sampler.sampler``."""
        if self.held.carries(receiver, scope):
            return True
        while isinstance(receiver, ast.Attribute) and receiver.attr in _SAMPLER_ATTRIBUTES:
            receiver = receiver.value
            if self.loaders.carries(receiver, scope):
                return True
        return False


def _makes_own_sampler(analysis: ModuleAnalysis, code: ModuleCode, call: ast.Call) -> bool:
    """Whether ``call`` makes a distributed sampler through the project: a subclass of
    ``DistributedSampler`` (of this module or another), or another module's factory
    that returns one (``object_kinds``: what its bases are, what it returns). A factory
    of this module is not one: the sampler it makes is followed from inside it."""
    scope = code.scope_of(call)
    if code.callee(call, scope) is not None and not isinstance(call.func, ast.Name):
        return False  # a method of the module: what it makes is followed from inside it
    if isinstance(call.func, ast.Name):
        if code.callee(call, scope) is not None and call.func.id not in code.classes:
            return False  # a function of the module, likewise
        cls = code.classes.get(call.func.id)
        if cls is not None:
            return analysis.objects.class_kinds.kind(cls) == DISTRIBUTED_SAMPLER
    spelled = dotted_name(call.func)
    if spelled is None or spelled.startswith("self."):
        return False
    holder = code.class_of(scope)
    return analysis.project.kind(spelled, holder.name if holder else None) == DISTRIBUTED_SAMPLER


def _class_references(analysis: ModuleAnalysis, samplers: list[ast.Call]) -> list[ast.expr]:
    """The module's references to a distributed sampler class that do not call it
    (``RandomSampler if single else DistributedSampler``, ``sampler_cls=DistributedSampler``)."""
    called = {id(call.func) for call in samplers}
    references: list[ast.expr] = [
        *analysis.nodes.of_type(ast.Name),
        *analysis.nodes.of_type(ast.Attribute),
    ]
    return [
        node
        for node in references
        if isinstance(node, (ast.Name, ast.Attribute))
        and isinstance(node.ctx, ast.Load)
        and id(node) not in called
        and analysis.names.resolve(node) in DISTRIBUTED_SAMPLERS
    ]


def _calls_of_held_class(
    analysis: ModuleAnalysis, code: ModuleCode, calls: list[ast.Call], classes: list[ast.expr]
) -> list[ast.Call]:
    """The calls that make a distributed sampler through a place holding its class (a
    name, a field, a parameter it is handed to, a factory's return): the class followed
    as an object from each reference, through conditionals."""
    held = ObjectFlow(code, lambda expression, _: any(expression is c for c in classes))
    return [
        call
        for call in calls
        if analysis.names.resolve(call.func) not in DISTRIBUTED_SAMPLERS
        and held.carries(call.func, code.scope_of(call))
    ]


def _arguments(call: ast.Call) -> list[ast.expr]:
    return [*call.args, *(k.value for k in call.keywords)]


def _before(node: ast.AST, later: ast.AST) -> bool:
    return (node.lineno, node.col_offset) < (later.lineno, later.col_offset)  # type: ignore[attr-defined]


def _trip_names(loop: Loop) -> set[str]:
    """The names a loop moves on each trip: its ``for`` target's, and the counters its
    body steps (``epoch += 1``, ``self.step += 1``)."""
    names: set[str] = set()
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        names.update(bound_names(loop.target))
    for node in own_nodes(loop):
        if isinstance(node, ast.AugAssign):
            names.update(bound_names(node.target))
    return names
