"""What the core knows of a module's functions: each function's graph, dominance,
divergence and collective effects (``FunctionFacts``), built on first use, and which
local functions reach a collective on the ways a call takes (its constant arguments and
the tests on ``self`` around it settle the callee's own tests).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Container, Iterator
from dataclasses import dataclass, field
from functools import cached_property

from ddplint.analysis.api import BACKWARD_FUNCTIONS, BACKWARD_METHODS, DDP_WRAPPERS
from ddplint.analysis.batches import (
    BatchSeeds,
    batch_seeds,
    field_bindings,
    training_loops,
    yielded_parts,
)
from ddplint.analysis.children import child_nodes, walk
from ddplint.analysis.constants import ScopedConstants, parameter_names
from ddplint.analysis.control_flow import (
    SCOPE_TYPES,
    EdgeKind,
    Graph,
    Node,
    NodeKind,
    Scope,
    ScopeGraphs,
    ends_loudly,
    single_bindings,
)
from ddplint.analysis.divergence import (
    GROWING_METHODS,
    Divergence,
    Source,
    State,
    Taint,
    spawned_functions,
    summarise_call,
)
from ddplint.analysis.dominance import PostDominance, decision_successors
from ddplint.analysis.effects import (
    DDP_FORWARD,
    Collective,
    FrameworkObjects,
    node_collectives,
    own_calls,
    reads_unsharded_model,
    sharded_later,
)
from ddplint.analysis.endless_iterables import EndlessIterables
from ddplint.analysis.enumerate_loops import walked_iterable
from ddplint.analysis.fallback_defaults import FallbackDefaults
from ddplint.analysis.literal_values import COMPARISONS, LiteralValues, scalar_literal
from ddplint.analysis.module_nodes import ModuleNodes
from ddplint.analysis.names import Names, dotted_name
from ddplint.analysis.project import (
    NO_PROJECT,
    CallSummary,
    ProjectFacts,
    parameters_at,
    project_key,
)
from ddplint.analysis.reaching import bindings_reaching
from ddplint.analysis.returns import returned_reach
from ddplint.analysis.set_iteration import SetValues
from ddplint.analysis.single_process import SingleProcessPaths
from ddplint.analysis.whole_forwards import WholeForwards

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: Scopes whose code runs inside the statement that holds them.
_INLINE_SCOPES = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


#: What is known on a way through the code: (dotted name, its truth).
Facts = frozenset[tuple[str, bool]]


#: Rounds of the fixed point over a class's ``self.x`` fields.
FIELD_ROUNDS = 4
#: How deep call-site facts follow local calls.
CALL_DEPTH = 4


@dataclass
class FunctionFacts:
    graph: Graph
    dominance: PostDominance
    divergence: Divergence
    in_lightning_class: bool
    effects: dict[int, list[tuple[Collective, str | None]]] = field(default_factory=dict)
    _ways: dict[int, list[tuple[Node, EdgeKind]]] = field(default_factory=dict)
    _kept: set[int] | None = None

    def ways(self, node: Node) -> list[tuple[Node, EdgeKind]]:
        """``ways_on(node)``, each way run on past the nodes where nothing happens (no
        collective, one way on, no join): the walks below step from event to event."""
        found = self._ways.get(node.index)
        if found is None:
            join = self._quiet_join(node)
            if join is not None:
                found = [(self._next_kept(join), EdgeKind.NEXT)]
            else:
                found = [(self._next_kept(s), edge) for s, edge in ways_on(node)]
            self._ways[node.index] = found
        return found

    def _quiet_join(self, node: Node) -> Node | None:
        """Where a decision's branches meet again when no branch issues a collective on
        the way: a walk goes straight there."""
        if node.kind not in (NodeKind.TEST, NodeKind.STEP) or self.dominance.ends_some_ways(node):
            return None  # a way that ends the job loudly ends a class's walk there
        join = self.dominance.immediate(node)
        if join is None or join.index == node.index:
            return None
        if any(inner.index in self.effects for inner in self.dominance.region(node)):
            return None
        return join

    def ways_from(self, node: Node) -> Node:
        """The first node a walk from ``node`` must stop at (``node`` itself if kept)."""
        return self._next_kept(node)

    def _next_kept(self, node: Node) -> Node:
        if self._kept is None:
            self._kept = self._kept_nodes()
        seen: set[int] = set()
        while node.index not in self._kept and node.index not in seen:
            seen.add(node.index)
            (node, _), *_ = list(ways_on(node))
        return node

    def _kept_nodes(self) -> set[int]:
        """Nodes a walk must stop at: collectives, decisions, ends, joins, error exits."""
        kept = set(self.effects)
        for node in self.graph.nodes:
            ways = list(ways_on(node))
            if (
                len(ways) != 1
                or node.kind in (NodeKind.TEST, NodeKind.STEP, NodeKind.EXIT, NodeKind.RAISE)
                or sum(1 for _, e in node.predecessors if e is not EdgeKind.EXCEPTION) > 1
            ):
                kept.add(node.index)
            if len(list(decision_successors(node))) > 1:
                join = self.dominance.immediate(node)
                if join is not None:
                    kept.add(join.index)
        return kept


class ModuleAnalysis:
    """The analysis of one module: graphs, dominance, divergence and effects per
    function, built on first use."""

    def __init__(self, module: ast.Module, project: ProjectFacts = NO_PROJECT) -> None:
        self.module = module
        self.project = project
        self.nodes = ModuleNodes(module)
        self.names = Names(module)
        self.objects = FrameworkObjects(self.nodes, self.names, project)
        self.graphs = ScopeGraphs(module)
        calls = [call for found in self.nodes.calls_by_scope.values() for call in found]
        self._spawned = spawned_functions(calls, self.names)
        self._functions: dict[Scope, FunctionFacts] = {}
        self._dominances: dict[Scope, PostDominance] = {}
        self._batch_views: dict[tuple[Scope, bool, frozenset[str]], Divergence] = {}
        self._probe_views: dict[tuple[Scope, Callable[[ast.Call], bool]], Divergence] = {}
        self._definitions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        #: (class name, method name) -> the method, for the classes of module code.
        self._methods: dict[tuple[str, str], ast.FunctionDef | ast.AsyncFunctionDef] = {}
        for function in sorted(self.nodes.functions(), key=lambda f: (f.lineno, f.col_offset)):
            self._definitions.setdefault(self._key_of(function), function)
            owner = self.nodes.scope_of.get(function)
            if isinstance(owner, ast.ClassDef):
                self._methods.setdefault((owner.name, function.name), function)
        self._reached_memo: dict[tuple[str, Facts], Collective | None] = {}
        self._fields: dict[int, State] = {}
        self._constructions: dict[int, tuple[State, State]] = {}
        self._summaries: dict[str, CallSummary | None] = {}
        self._parts: dict[tuple[object, ...], tuple[Taint | None, ...] | None] = {}
        self._solving_fields: set[int] = set()
        self._rank_globals_found: State | None = None
        self._sharded = sharded_later(calls, self.names, project)
        self._reaching = self._functions_reaching_collectives()
        self._single_process: SingleProcessPaths | None = None
        self._literal_values: LiteralValues | None = None
        self._several: dict[tuple[ast.expr, Scope], bool | None] = {}

    @property
    def literal_values(self) -> LiteralValues:
        """The values decided where they are set, and the tests they decide."""
        if self._literal_values is None:
            self._literal_values = LiteralValues(self.module, self.names, self.nodes)
        return self._literal_values

    @cached_property
    def constants(self) -> ScopedConstants:
        """Constant values of expressions, following names bound once in their scope."""
        return ScopedConstants(self.nodes)

    @cached_property
    def set_values(self) -> SetValues:
        """Which expressions are sets, and which loops walk one."""
        return SetValues(self.module, self.names)

    @cached_property
    def whole_forwards(self) -> WholeForwards:
        """Which module classes of this file use every parameter in every forward."""
        return WholeForwards(self.nodes, self.names, self.constants)

    @cached_property
    def endless_iterables(self) -> EndlessIterables:
        """Which iterables never run out (``itertools.cycle``, an endless generator, a
        class whose ``__iter__`` loops forever, a wrapper of one)."""
        kinds = self.objects.class_kinds
        return EndlessIterables(
            self.names, self.constants, lambda call: kinds.of_call(call, None), self.callee_of
        )

    @cached_property
    def fallback_defaults(self) -> FallbackDefaults:
        """The defaults values fall back to: parameters', options', config fields'."""
        return FallbackDefaults(self.nodes, self.constants)

    @property
    def single_process(self) -> SingleProcessPaths:
        """Which statements run only when the job is one process."""
        if self._single_process is None:
            self._single_process = SingleProcessPaths(
                self.nodes, self.names, self.graphs, self.project
            )
        return self._single_process

    def _asks_several(self, test: ast.expr, scope: Scope) -> bool | None:
        """``single_process.asks_several`` of a test from ``scope``, asked once: every
        solve of the scope (its own, its batch view, the fields rounds, a call summary
        per parameter) asks each of its tests, and the answer reads only the module."""
        key = (test, scope)
        if key not in self._several:
            self._several[key] = self.single_process.asks_several(test, scope)
        return self._several[key]

    def _key_of(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
        """How calls name a local function: ``f`` for a function, ``self.f`` for a method
        (a builtin ``open()`` is never a class's ``open`` method)."""
        if isinstance(self.nodes.scope_of.get(function), ast.ClassDef):
            return f"self.{function.name}"
        return function.name

    def _in_lightning_class(self, scope: ast.AST) -> bool:
        return self.nodes.scope_of.get(scope) in self.objects.lightning_classes

    def function(self, scope: Scope) -> FunctionFacts:
        found = self._functions.get(scope)
        if found is None:
            graph, dominance = self.graphs.graph(scope), self.dominance(scope)
            divergence = self._divergence(scope, graph, dominance, self._entry_of(scope))
            in_lightning = self._in_lightning_class(scope)
            found = FunctionFacts(graph, dominance, divergence, in_lightning)
            for node in graph.nodes:
                effects = [
                    (collective, through)
                    for collective, through in self._node_effects(node, in_lightning, dominance)
                    if not reads_unsharded_model(collective, self._sharded)
                    and not self._forward_of_plain_model(collective, graph, node)
                ]
                if effects:
                    found.effects[node.index] = effects
            self._functions[scope] = found
        return found

    def dominance(self, scope: Scope) -> PostDominance:
        """The post-dominance of ``scope``'s graph, built once for every reader."""
        found = self._dominances.get(scope)
        if found is None:
            found = self._dominances[scope] = PostDominance(self.graphs.graph(scope))
        return found

    def functions_reaching(
        self, label_of: Callable[[ast.Call], str | None], depth: int = 2
    ) -> dict[str, str]:
        """How calls name the module's functions (``f``, ``self.f``) whose own calls
        include one that ``label_of`` labels, or a call of such a function, ``depth``
        calls deep; with the label each reaches (the first found)."""
        found: dict[str, str] = {}
        for _ in range(depth):
            for key, definition in self._definitions.items():
                if key in found:
                    continue
                for call in self.nodes.calls_by_scope.get(definition, []):
                    label = label_of(call)
                    callee = dotted_name(call.func)
                    if label is None and callee in found and callee != key:
                        label = found[callee]
                    if label is not None:
                        found[key] = label
                        break
        return found

    @cached_property
    def backward_functions(self) -> dict[str, str]:
        """The module's functions that run a backward pass, two calls deep
        (``functions_reaching``), with the backward each reaches."""
        return self.functions_reaching(self.backward_label)

    @cached_property
    def step_functions(self) -> frozenset[str]:
        """The ``backward_functions`` that run one step: none walks what it is handed
        in a training loop of its own (``train_one_epoch(loader)`` walks the loader's
        batches; a loop that calls it walks epochs, not batches). A loop over its own
        optimizers (``for opt in self.optimizers``) walks no batches."""
        helpers = frozenset(self.backward_functions)
        return frozenset(
            key
            for key in helpers
            if (definition := self._definitions.get(key)) is None
            or not any(
                self._walks_parameter(loop, definition)
                for loop in training_loops(definition, helpers)
            )
        )

    def _walks_parameter(
        self, loop: ast.stmt, definition: ast.FunctionDef | ast.AsyncFunctionDef
    ) -> bool:
        """Whether ``loop`` iterates a parameter of ``definition`` (also through
        ``enumerate`` or a progress bar)."""
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            return False
        walked = walked_iterable(self.names, loop.iter)
        return isinstance(walked, ast.Name) and walked.id in parameter_names(definition)

    def runs_backward(self, node: ast.AST, helpers: Container[str] | None = None) -> bool:
        """Whether ``node`` is a call that runs a backward pass: itself
        (``backward_label``) or through one of ``helpers`` (the module's functions that
        do, ``backward_functions``, when not given)."""
        if not isinstance(node, ast.Call):
            return False
        if self.backward_label(node) is not None:
            return True
        return dotted_name(node.func) in (self.backward_functions if helpers is None else helpers)

    def backward_label(self, call: ast.Call) -> str | None:
        """``loss.backward()`` for a call that runs a backward pass (a method of the
        loss, accelerate's or Lightning's, ``torch.autograd.backward``), else None."""
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in BACKWARD_METHODS:
            return f"{ast.unparse(func)}()"
        if self.names.resolve(func) in BACKWARD_FUNCTIONS:
            return f"{ast.unparse(func)}(...)"
        return None

    @cached_property
    def generators(self) -> dict[str, tuple[bool, ...]]:
        """The module's own generator functions that yield tuples, by the name calls use,
        and which parts of each tuple carry this rank's batch (``yielded_parts``)."""
        found: dict[str, tuple[bool, ...]] = {}
        for key, definition in self._definitions.items():
            if "." not in key and (parts := yielded_parts(definition, self.names)) is not None:
                found[key] = parts
        return found

    def batch_view(
        self,
        scope: Scope,
        step_method: bool | None = None,
        handed: frozenset[str] = frozenset(),
    ) -> Divergence:
        """The divergence of ``scope`` where this rank's batch counts too (``batches``):
        for the questions about decisions on this rank's data, never for the others.
        ``step_method``: whether ``scope`` is a module class's method handed a batch (a
        question that knows its class's kind says so; by default, a LightningModule's);
        ``handed``: parameters its callers hand this rank's batch."""
        lightning = self._in_lightning_class(scope) if step_method is None else step_method
        found = self._batch_views.get((scope, lightning, handed))
        if found is None:  # the graph and dominance alone: not the function's own facts
            owner = self.nodes.scope_of.get(scope)
            fields = field_bindings(owner) if isinstance(owner, ast.ClassDef) else None
            seeds = batch_seeds(
                scope, lightning, self.step_functions, self.names, fields, self.generators
            )
            seeds = BatchSeeds(seeds.parameters | handed, seeds.loops, seeds.drawn)
            graph, dominance = self.graphs.graph(scope), self.dominance(scope)
            found = self._divergence(scope, graph, dominance, self._entry_of(scope), seeds)
            self._batch_views[(scope, lightning, handed)] = found
        return found

    def probe_view(self, scope: Scope, probes: Callable[[ast.Call], bool]) -> Divergence:
        """The divergence of ``scope`` where the calls ``probes`` accepts (file checks of
        a path the run writes) differ between ranks: for the question about decisions on
        them (DDP218), never for the others."""
        found = self._probe_views.get((scope, probes))
        if found is None:
            facts = self.function(scope)
            found = self._divergence(
                scope, facts.graph, facts.dominance, self._entry_of(scope), probes=probes
            )
            self._probe_views[(scope, probes)] = found
        return found

    def local_callee(
        self, name: str, caller: Scope
    ) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, list[str]] | None:
        """The local function a call from ``caller`` names (``f``; ``self.f``: the
        method of the caller's own class), with the parameters its positional arguments
        fill (``self`` left out)."""
        if name.startswith("self."):
            owner = self.nodes.owner_class(caller) or ""
            definition = self._methods.get((owner, name[len("self.") :]))
        else:
            definition = self._definitions.get(name)
        if definition is None:
            return None
        positional = [a.arg for a in definition.args.posonlyargs + definition.args.args]
        return definition, positional[1:] if name.startswith("self.") else positional

    def _divergence(
        self,
        scope: Scope,
        graph: Graph,
        dominance: PostDominance,
        fields: State,
        batches: BatchSeeds | None = None,
        probes: Callable[[ast.Call], bool] | None = None,
    ) -> Divergence:
        rank_parameters: frozenset[str] = frozenset()
        if isinstance(scope, _FUNCTIONS):
            owner = self.nodes.scope_of.get(scope)
            key = project_key(scope, owner)
            handed = self.project.rank_parameters(key) if key is not None else frozenset()
            rank_parameters = frozenset(parameters_at(scope, owner, handed))
            if scope.name in self._spawned:
                # ``mp.spawn(self.train, ...)``: a bound method's rank follows its ``self``.
                rank_parameters |= set(parameters_at(scope, owner, (0,)))
        return Divergence(
            graph,
            dominance,
            self.names,
            rank_parameters,
            self.objects.agreeing_receivers(),
            self.project,
            self.nodes.owner_class(scope),
            self.objects.torch_modules_in(scope),
            fields,
            self._call_summary,
            self.literal_values.decided,
            batches=batches,
            several=lambda test: self._asks_several(test, scope),
            probes=probes,
            parts=self._returned_parts,
        )

    def _returned_parts(
        self,
        name: str,
        caller_class: str | None,
        positional: tuple[Taint | None, ...],
        keywords: tuple[tuple[str, Taint | None], ...],
        count: int,
    ) -> tuple[Taint | None, ...] | None:
        """The taint of each item of the ``count``-tuple a local function (``f``, or
        ``self.f`` of the caller's class) returns, its parameters given the taints of
        a call's arguments (solved once per function and taints; None while solving
        it, for recursion)."""
        definition = self._definitions.get(name)
        if name.startswith("self."):
            definition = self._methods.get((caller_class or "", name[len("self.") :]))
        if definition is None:
            return None
        key = (id(definition), count, positional, keywords)
        if key in self._parts:
            return self._parts[key]
        self._parts[key] = None  # recursion: unknown while asking
        arguments = definition.args
        parameters = [a.arg for a in arguments.posonlyargs + arguments.args]
        owner = self.nodes.scope_of.get(definition)
        if name.startswith("self.") and isinstance(owner, ast.ClassDef):
            parameters = parameters[1:]
        given: State = {
            parameter: taint
            for parameter, taint in [*zip(parameters, positional, strict=False), *keywords]
            if taint is not None
        }
        rest = _join_all(positional[len(parameters) :])
        if arguments.vararg is not None and rest is not None:
            given[arguments.vararg.arg] = rest  # ``*args`` holds the arguments past the others
        graph = self.graphs.graph(definition)
        divergence = self._divergence(
            definition, graph, PostDominance(graph), {**self._entry_of(definition), **given}
        )
        found = divergence.returned_parts(count)
        self._parts[key] = found
        return found

    def _call_summary(self, name: str, caller_class: str | None) -> CallSummary | None:
        """For a module-level function or a method (``self.f``) that reaches a
        collective: its positional parameters, those whose values may reach its result,
        one parameter at a time (``reduce_tensor(t, n)`` returns ``t`` all-reduced: only
        ``n`` reaches it; every one where its result reads a source of its own), and
        those it makes agree in place (``sync(t)``: ``all_reduce(t)`` inside, ``t``
        never bound again). None where it is not known."""
        definition = self._definitions.get(name)
        if name.startswith("self."):
            # The method of the caller's own class (another class may define one alike).
            definition = self._methods.get((caller_class or "", name[len("self.") :]))
        owner = self.nodes.scope_of.get(definition) if definition is not None else None
        if definition is None:
            return None
        key = f"{owner.name}.{definition.name}" if isinstance(owner, ast.ClassDef) else name
        if key in self._summaries:
            return self._summaries[key]
        if name not in self._reaching:
            self._summaries[key] = self._returned_summary(definition, owner)
            return self._summaries[key]
        if isinstance(owner, ast.ClassDef):
            if id(owner) in self._solving_fields:
                return None  # its fields are not known yet: ask again later
        elif not isinstance(owner, ast.Module):
            return None
        self._summaries[key] = None  # recursion: unknown while asking
        arguments = definition.args
        positional = [a.arg for a in arguments.posonlyargs + arguments.args]
        if isinstance(owner, ast.ClassDef) and not any(
            dotted_name(d) == "staticmethod" for d in definition.decorator_list
        ):
            positional = positional[1:]  # ``self`` (or ``cls``), bound by the call
        graph, dominance = self.graphs.graph(definition), self.dominance(definition)
        fields = self._entry_of(definition)
        summary = summarise_call(
            definition,
            positional,
            lambda given: self._divergence(definition, graph, dominance, {**fields, **given}),
        )
        self._summaries[key] = summary
        return summary

    def _returned_summary(
        self, definition: ast.FunctionDef | ast.AsyncFunctionDef, owner: ast.AST | None
    ) -> CallSummary | None:
        """For a local function that reaches no collective: the parameters that may
        reach what it returns, read by a slice of its bindings (``returns.returned_reach``:
        ``resume(model, device, resume=False)`` returning a start epoch read from
        ``resume`` alone); None where a value of its own may reach it."""
        parameters = [a.arg for a in definition.args.posonlyargs + definition.args.args]
        if isinstance(owner, ast.ClassDef) and not any(
            dotted_name(d) == "staticmethod" for d in definition.decorator_list
        ):
            parameters = parameters[1:]
        if not parameters or definition.args.vararg is not None:
            return None
        every = parameters + [a.arg for a in definition.args.kwonlyargs]
        reach = returned_reach(definition, every, self.names)
        if reach.whole is None:
            return None
        items = None if reach.items is None else tuple(reach.items)
        return CallSummary(tuple(parameters), reach.whole, frozenset(), items)

    def _entry_of(self, scope: Scope) -> State:
        """What a function finds on entry: the module's rank globals; for a method,
        the fields of its class; for ``__init__``, also what the module's calls of the
        class hand its parameters."""
        if not isinstance(scope, _FUNCTIONS):
            return {}
        # A parameter of the same name shadows a global (its value is the caller's).
        shadowed = parameter_names(scope)
        found = {n: t for n, t in self._rank_globals.items() if n not in shadowed}
        owner = self.nodes.scope_of.get(scope)
        if not isinstance(owner, ast.ClassDef):
            return found
        fields = self._fields_of(owner)
        if scope.name != "__init__":
            return {**found, **fields}
        return {**found, **self._constructed_with(owner)[0], **fields}

    @property
    def _rank_globals(self) -> State:
        """Names the module's top level binds once to the rank (``RANK =
        int(os.getenv("RANK", -1))``) and no function rebinds (``global RANK``): a
        function reading one reads its own rank's value. Solving the module asks the
        summaries of the functions its code calls, which ask this again: while it is
        being solved, none is known (one module solve, not one per call)."""
        if self._rank_globals_found is None:
            self._rank_globals_found = {}
            self._rank_globals_found = self._solve_rank_globals()
        return self._rank_globals_found

    def _solve_rank_globals(self) -> State:
        bound = single_bindings(self.module)
        if not bound:
            return {}
        rebound = {
            name
            for function in self.nodes.functions()
            for node in walk(function)
            if isinstance(node, ast.Global)
            for name in node.names
        }
        graph, dominance = self.graphs.graph(self.module), self.dominance(self.module)
        at_exit = self._divergence(self.module, graph, dominance, {}).at_exit() or {}
        return {
            name: taint
            for name, taint in at_exit.items()
            if name in bound and name not in rebound and taint.source is Source.RANK
        }

    def _fields_of(self, owner: ast.ClassDef) -> State:
        """What a method may find in ``self.x``: the values any method of the class
        stores there, or a call of a dataclass fills in (field-sensitive on ``self``,
        to a fixed point over the class's methods)."""
        found = self._fields.get(id(owner))
        if found is not None:
            return found
        self._fields[id(owner)] = {}  # recursion: nothing known while solving
        self._solving_fields.add(id(owner))
        parameters, filled = self._constructed_with(owner)
        storing = [
            method
            for method in owner.body
            if isinstance(method, _FUNCTIONS) and _stores_on_self(method)
        ]
        fields: State = dict(filled)
        reads = {id(method): _fields_read(method) for method in storing}
        # A method's stores depend only on the fields it reads: a later round solves
        # again only a method one of whose fields changed since it was last solved.
        solved: dict[int, tuple[State, State]] = {}  # method -> (fields read, stored)
        for _ in range(FIELD_ROUNDS):
            stored: State = dict(filled)
            for method in storing:
                given = {**parameters, **fields} if method.name == "__init__" else fields
                read = _part_read(given, reads[id(method)])
                last = solved.get(id(method))
                if last is None or last[0] != read:
                    graph = self.graphs.graph(method)
                    divergence = self._divergence(method, graph, self.dominance(method), given)
                    last = solved[id(method)] = (read, divergence.stored_fields())
                for name, taint in last[1].items():
                    stored[name] = taint.joined(stored.get(name))
            if stored == fields:
                break
            fields = stored
        self._fields[id(owner)] = fields
        self._solving_fields.discard(id(owner))
        return fields

    def _constructed_with(self, owner: ast.ClassDef) -> tuple[State, State]:
        """How the values the module's own calls of a class (``Trainer(args, rank)``,
        outside the class) hand it may differ between ranks: by ``__init__``
        parameter, and by ``self.x`` field of a dataclass."""
        found = self._constructions.get(id(owner))
        if found is None:
            self._constructions[id(owner)] = ({}, {})  # recursion: nothing while asking
            found = self._constructions[id(owner)] = self._handed_to(owner)
        return found

    def _handed_to(self, owner: ast.ClassDef) -> tuple[State, State]:
        if not isinstance(self.nodes.scope_of.get(owner), ast.Module):
            return {}, {}
        init = next(
            (m for m in owner.body if isinstance(m, _FUNCTIONS) and m.name == "__init__"), None
        )
        if init is not None:
            names = [a.arg for a in init.args.posonlyargs + init.args.args][1:]
            names += [a.arg for a in init.args.kwonlyargs]
        elif any(
            (self.names.resolve(d.func if isinstance(d, ast.Call) else d) or "").endswith(
                "dataclass"
            )
            for d in owner.decorator_list
        ):
            names = [
                f.target.id
                for f in owner.body
                if isinstance(f, ast.AnnAssign) and isinstance(f.target, ast.Name)
            ]
        else:
            return {}, {}
        handed: State = {}
        for caller, calls in self.nodes.calls_by_scope.items():
            constructions = [
                c for c in calls if isinstance(c.func, ast.Name) and c.func.id == owner.name
            ]
            if not constructions or not isinstance(caller, (*_FUNCTIONS, ast.Module)):
                continue
            if isinstance(caller, _FUNCTIONS) and self.nodes.scope_of.get(caller) is owner:
                continue  # the class's own methods: their fields are being solved
            facts = self.function(caller)
            for node in facts.graph.nodes:
                if node.statement is None or node.kind is not NodeKind.STATEMENT:
                    continue
                for call in own_calls(node.statement):
                    if not any(call is c for c in constructions):
                        continue
                    given = list(zip(names, call.args, strict=False))
                    given += [(k.arg, k.value) for k in call.keywords if k.arg in names]
                    for name, value in given:
                        taint = facts.divergence.taint(value, node)
                        if taint is not None:
                            handed[name] = taint.joined(handed.get(name))
        if init is not None:
            return handed, {}
        return {}, {f"self.{name}": taint for name, taint in handed.items()}

    def _node_effects(
        self, node: Node, in_lightning: bool, dominance: PostDominance | None
    ) -> list[tuple[Collective, str | None]]:
        """The collectives a node issues, and those of the local functions it calls
        that reach one on the way this call takes (its constant arguments and the
        tests on ``self`` around it settle the callee's own tests)."""
        effects: list[tuple[Collective, str | None]] = [
            (c, None) for c in node_collectives(node, self.objects, in_lightning)
        ]
        if node.statement is None or node.kind not in (NodeKind.STATEMENT, NodeKind.TEST):
            return effects
        facts = path_facts(node, dominance) if dominance is not None else frozenset()
        for call in own_calls(node.statement):
            callee = _local_callee(call)
            if callee is None or callee not in self._reaching:
                continue
            handed = _call_facts(
                call, self.local_function(callee), facts, self._ddp_model_at(call, node)
            )
            reached = self._reached(callee, handed)
            if reached is not None:
                effects.append((reached, callee))
        return effects

    def _ddp_model_at(self, call: ast.Call, node: Node) -> Callable[[ast.expr], bool]:
        """Whether an argument of ``call`` (run by ``node``) holds a DDP model where the
        call is made."""
        return lambda argument: self.ddp_model_at(argument, call, node)

    def ddp_model_at(self, expression: ast.expr, call: ast.Call, node: Node) -> bool:
        """Whether ``expression``, read by ``call`` at ``node``, holds a model wrapped in
        ``DistributedDataParallel``: the name holds one in its function
        (``FrameworkObjects.ddp_model``) and is not bound again to another model on
        every way to ``node`` (``model = Net.from_pretrained(path)`` after the wrapping)."""
        if not self.objects.ddp_model(expression, call):
            return False
        spelled = dotted_name(expression)
        scope = self.nodes.scope_of_call(call)
        if spelled is None or not isinstance(
            scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)
        ):
            return True
        reaching = bindings_reaching(self.graphs.graph(scope), node, spelled)
        if reaching.from_entry or not reaching.bindings:
            return True
        return not all(
            value is not None and self._makes_another_model(value, spelled, call)
            for _, value in reaching.bindings
        )

    def _makes_another_model(self, value: ast.expr, name: str, call: ast.Call) -> bool:
        """Whether ``name = value`` gives the name a model that is not a DDP wrapper: a
        call that neither wraps (``DistributedDataParallel(...)``) nor reads the name or
        another DDP model (``model.to(device)``, ``torch.compile(model)`` keep the
        wrapper), or a constant (``model = None``)."""
        if isinstance(value, ast.Constant):
            return True
        if not isinstance(value, ast.Call) or self.names.resolve(value.func) in DDP_WRAPPERS:
            return False
        return not any(
            isinstance(read, (ast.Name, ast.Attribute))
            and (dotted_name(read) == name or self.objects.ddp_model(read, call))
            for read in ast.walk(value)
        )

    def _forward_of_plain_model(self, collective: Collective, graph: Graph, node: Node) -> bool:
        """A DDP forward whose model name is bound again to another model on every way
        to ``node``: no collective there."""
        if collective.name != DDP_FORWARD or not collective.implicit:
            return False
        model = collective.call.func
        if isinstance(model, ast.Attribute) and model.attr == "forward":
            model = model.value
        return not self.ddp_model_at(model, collective.call, node)

    def local_function(self, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The module's function (``f``) or method (``self.f``) that calls name so."""
        return self._definitions.get(name)

    def callee_of(self, call: ast.Call) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The module's function (``f(...)``) or method (``self.f(...)``) ``call`` runs."""
        name = _local_callee(call)
        return self._definitions.get(name) if name is not None else None

    def _reached(self, name: str, facts: Facts, depth: int = CALL_DEPTH) -> Collective | None:
        """The first collective the local function ``name`` reaches when ``facts`` hold
        (None: not on the ways those facts leave open)."""
        key = (name, facts)
        if key in self._reached_memo:
            return self._reached_memo[key]
        self._reached_memo[key] = None  # recursion: assume none while asking
        definition = self.local_function(name)
        found: Collective | None = None
        if definition is None or depth == 0:
            found = self._reaching.get(name)
        else:
            found = self._reached_in(definition, facts, depth)
        self._reached_memo[key] = found
        return found

    def _reached_in(
        self, definition: ast.FunctionDef | ast.AsyncFunctionDef, facts: Facts, depth: int
    ) -> Collective | None:
        graph = self.graphs.graph(definition)
        in_lightning = self._in_lightning_class(definition)
        seen: set[int] = set()
        pending = [graph.entry]
        while pending:
            node = pending.pop()
            if node.index in seen:
                continue
            seen.add(node.index)
            own = [
                c
                for c in node_collectives(node, self.objects, in_lightning)
                if not reads_unsharded_model(c, self._sharded) and not _plain_forward(c, facts)
            ]
            if own:
                return own[0]
            if node.statement is not None and node.kind in (NodeKind.STATEMENT, NodeKind.TEST):
                for call in own_calls(node.statement):
                    callee = _local_callee(call)
                    if callee is None or callee not in self._reaching:
                        continue
                    handed = _call_facts(
                        call, self.local_function(callee), facts, self._ddp_model_at(call, node)
                    )
                    reached = self._reached(callee, handed, depth - 1)
                    if reached is not None:
                        return reached
            settled = _settled_edge(node, facts)
            for successor, edge in decision_successors(node):
                if settled is None or edge is settled:
                    pending.append(successor)
        return None

    def _functions_reaching_collectives(self) -> dict[str, Collective]:
        """Local function name -> the first collective it reaches (through local calls,
        to a fixed point)."""
        direct: dict[str, Collective] = {}
        calls: dict[str, set[str]] = {}
        for scope, scope_calls in self.nodes.calls_by_scope.items():
            function = scope
            while isinstance(function, _INLINE_SCOPES):  # a comprehension runs inline
                function = self.nodes.scope_of[function]
            if not isinstance(function, _FUNCTIONS):
                continue
            in_lightning = self._in_lightning_class(function)
            for call in scope_calls:
                found = self.objects.collective(call, in_lightning)
                key = self._key_of(function)
                if found is not None and key not in direct:
                    direct[key] = found
                callee = _local_callee(call)
                if callee is not None:
                    calls.setdefault(key, set()).add(callee)
        reaching = dict(direct)
        changed = True
        while changed:
            changed = False
            for name, callees in calls.items():
                if name in reaching:
                    continue
                for callee in sorted(callees):
                    if callee in reaching:
                        reaching[name] = reaching[callee]
                        changed = True
                        break
        return reaching

    def call_collective(self, call: ast.Call, scope: Scope) -> Collective | None:
        """The collective ``call`` (one of ``scope``'s calls) issues itself, if any: a
        catalogued one, an implicit one (a DDP model's forward or backward) or a project
        function that reaches one elsewhere; not a state-dict read of a model sharded
        only later."""
        while isinstance(scope, _INLINE_SCOPES):
            scope = self.nodes.scope_of[scope]
        found = self.objects.collective(call, self._in_lightning_class(scope))
        if found is None or reads_unsharded_model(found, self._sharded):
            return None
        return found

    def first_reached(self, call: ast.Call, scope: Scope) -> Collective | None:
        """The first collective running ``call`` reaches: its own (``call_collective``),
        else the one the local function it calls reaches (through local calls)."""
        found = self.call_collective(call, scope)
        if found is not None:
            return found
        callee = _local_callee(call)
        return self._reaching.get(callee) if callee is not None else None

    def call_reaches(self, call: ast.Call, scope: Scope) -> tuple[Collective, str | None] | None:
        """The collective ``call`` issues itself (with None), else the first one the
        local function it calls reaches on the way its constant arguments and defaults
        take (with that function's name): ``write(path)`` reaches no barrier when
        ``write`` issues one only ``if sync:`` and ``sync`` defaults to False."""
        own = self.call_collective(call, scope)
        if own is not None:
            return own, None
        callee = _local_callee(call)
        if callee is None or callee not in self._reaching:
            return None
        handed = _call_facts(call, self.local_function(callee), frozenset())
        reached = self._reached(callee, handed)
        return (reached, callee) if reached is not None else None

    def reaching_names(self) -> frozenset[str]:
        """Names of the module's functions that reach a collective."""
        return frozenset(self._reaching)

    def scopes_with_collectives(self) -> Iterator[Scope]:
        """The functions (and module code) whose own calls issue a collective or call a
        local function that reaches one: the only ones worth a graph."""
        found: set[int] = set()
        for scope, calls in self.nodes.calls_by_scope.items():
            # A comprehension's calls run in the statement of the function around it.
            while isinstance(scope, _INLINE_SCOPES):
                scope = self.nodes.scope_of[scope]
            if not isinstance(scope, (*_FUNCTIONS, ast.Module)) or id(scope) in found:
                continue
            in_lightning = self._in_lightning_class(scope)
            if any(
                self.objects.collective(call, in_lightning) is not None
                or _local_callee(call) in self._reaching
                for call in calls
            ):
                found.add(id(scope))
                yield scope


def _join_all(taints: tuple[Taint | None, ...]) -> Taint | None:
    """The join of ``taints`` (None where all are)."""
    found: Taint | None = None
    for taint in taints:
        if taint is not None:
            found = taint.joined(found)
    return found


def _fields_read(method: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str] | None:
    """The ``self.x`` fields the method's code (nested scopes included) spells, the
    only way its divergence reads one; None where it binds ``self`` itself (a
    rebinding drops every field it held, read or not)."""
    read: set[str] = set()
    for node in walk(method):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "self":
                read.add(f"self.{node.attr}")
        elif (
            isinstance(node, ast.Name) and node.id == "self" and not isinstance(node.ctx, ast.Load)
        ):
            return None
    return frozenset(read)


def _part_read(given: State, read: frozenset[str] | None) -> State:
    """What of ``given`` a method that reads the fields ``read`` can see (None: all)."""
    if read is None:
        return dict(given)
    return {name: taint for name, taint in given.items() if name in read or "." not in name}


def _stores_on_self(method: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether the method's code assigns a ``self.x`` or adds an item to one
    (``self.x[key] = v``, ``self.x.append(v)``)."""
    for node in walk(method):
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            func = node.value.func
            grows = isinstance(func, ast.Attribute) and func.attr in GROWING_METHODS
            targets = [func.value] if grows and isinstance(func, ast.Attribute) else []
        else:
            continue
        for target in targets:
            parts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
            if any(_is_self_field(_container(part)) for part in parts):
                return True
    return False


def _container(target: ast.expr) -> ast.expr:
    """The container of ``x[key] = v``; any other target itself."""
    return target.value if isinstance(target, ast.Subscript) else target


def _is_self_field(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and dotted_name(node.value) == "self"


def condition_fact(test: ast.expr) -> tuple[str, bool] | None:
    """(name, truth it must have) for a test that is a plain name or its negation."""
    negated = False
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, negated = test.operand, not negated
    spelled = dotted_name(test)
    return None if spelled is None else (spelled, not negated)


def implied_facts(test: ast.expr, truth: bool) -> Iterator[tuple[str, bool]]:
    """The truths of plain names (and of names compared equal to a constant) that taking
    ``test`` as ``truth`` settles: the name itself, each part of an ``and`` taken, each
    part of an ``or`` not taken."""
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, truth = test.operand, not truth
    if isinstance(test, ast.BoolOp):
        if truth == isinstance(test.op, ast.And):
            for value in test.values:
                yield from implied_facts(value, truth)
        return
    compared = _equality(test)
    if compared is not None:
        yield compared[0], truth == compared[1]
        return
    spelled = dotted_name(test)
    if spelled is not None:
        yield spelled, truth


def _equality(test: ast.expr) -> tuple[str, bool] | None:
    """(``name == constant``, whether ``test`` asks it) for ``name == c`` / ``name != c``."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, right, op = test.left, test.comparators[0], test.ops[0]
    if isinstance(left, ast.Constant):
        left, right = right, left
    spelled = dotted_name(left)
    if spelled is None or not isinstance(right, ast.Constant):
        return None
    if not isinstance(op, (ast.Eq, ast.NotEq)):
        return None
    return f"{spelled} == {right.value!r}", isinstance(op, ast.Eq)


def path_facts(node: Node, dominance: PostDominance) -> Facts:
    """The truths of plain-name tests that decide whether ``node`` runs."""
    facts: set[tuple[str, bool]] = set()
    for dependence in dominance.all_dependences(node):
        statement = dependence.test.statement
        if not isinstance(statement, (ast.If, ast.While)):
            continue
        if dependence.edge in (EdgeKind.TRUE, EdgeKind.FALSE):
            facts.update(implied_facts(statement.test, dependence.edge is EdgeKind.TRUE))
    return frozenset(facts)


def _call_facts(
    call: ast.Call,
    definition: ast.FunctionDef | ast.AsyncFunctionDef | None,
    facts: Facts,
    ddp_model: Callable[[ast.expr], bool] | None = None,
) -> Facts:
    """What the callee knows on entry: the caller's facts on ``self``, its parameters
    given a constant at the call, or left to a constant default, and those handed a
    model that is no DDP model here (``ddp_model`` says which argument holds one; a
    parameter handed one of the caller's own parameters known to hold none holds none):
    the callee's forward of that parameter synchronises nothing on this call."""
    known = {fact for fact in facts if fact[0].startswith("self.")}
    if definition is None:
        return frozenset(known)
    arguments = definition.args
    positional = arguments.posonlyargs + arguments.args
    parameters = [a.arg for a in positional]
    if parameters and parameters[0] in ("self", "cls") and isinstance(call.func, ast.Attribute):
        parameters = parameters[1:]
    given = list(zip(parameters, call.args, strict=False))
    given += [(k.arg, k.value) for k in call.keywords if k.arg is not None]
    if not any(isinstance(a, ast.Starred) for a in call.args) and not any(
        k.arg is None for k in call.keywords
    ):
        passed = {name for name, _ in given}
        defaults = list(
            zip(
                positional[len(positional) - len(arguments.defaults) :],
                arguments.defaults,
                strict=True,
            )
        )
        defaults += [
            (a, d)
            for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
            if d is not None
        ]
        given += [(a.arg, d) for a, d in defaults if a.arg not in passed]
    for name, value in given:
        literal = _literal_value(value, facts)
        if literal:
            known.add((f"{name}{_IS}{literal[0]!r}", True))
            if isinstance(literal[0], (bool, int, type(None))):
                known.add((name, bool(literal[0])))
        if _plain_number(value):
            known.add((_tensor_fact(name), False))
        if _holds_no_ddp_model(value, facts, ddp_model):
            known.add((_ddp_fact(name), False))
    return frozenset(known)


def _holds_no_ddp_model(
    value: ast.expr, facts: Facts, ddp_model: Callable[[ast.expr], bool] | None
) -> bool:
    """Whether an argument is a name that holds no DDP model at the call."""
    spelled = dotted_name(value)
    if spelled is None or ddp_model is None:
        return False
    return (_ddp_fact(spelled), False) in facts or not ddp_model(value)


def _ddp_fact(parameter: str) -> str:
    """The fact that a parameter holds a model wrapped in ``DistributedDataParallel``."""
    return f"{parameter}:ddp"


def _plain_forward(collective: Collective, facts: Facts) -> bool:
    """A DDP forward of a parameter the call handed a model that is no DDP model."""
    if collective.name != DDP_FORWARD:
        return False
    model = collective.call.func
    if isinstance(model, ast.Attribute) and model.attr == "forward":
        model = model.value
    spelled = dotted_name(model)
    return spelled is not None and (_ddp_fact(spelled), False) in facts


#: Calls whose result is a Python number, never a tensor.
_NUMBER_CALLS = frozenset({"float", "int", "round", "len", "abs"})


def _plain_number(value: ast.expr) -> bool:
    """Whether an argument is a Python number, never a tensor: a numeric constant
    (``1.0``, ``-3``), ``float(...)`` / ``int(...)`` / ``len(...)``, ``x.item()``."""
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, (ast.USub, ast.UAdd)):
        value = value.operand
    if isinstance(value, ast.Constant):
        return isinstance(value.value, (int, float)) and not isinstance(value.value, bool)
    if not isinstance(value, ast.Call):
        return False
    if isinstance(value.func, ast.Name):
        return value.func.id in _NUMBER_CALLS
    return isinstance(value.func, ast.Attribute) and value.func.attr == "item" and not value.args


def _tensor_fact(parameter: str) -> str:
    """The fact that a parameter holds a tensor (``isinstance(x, torch.Tensor)``)."""
    return f"{parameter}:tensor"


def _tensor_tested(test: ast.expr) -> str | None:
    """The plain name a test asks whether it holds a tensor: ``isinstance(x,
    torch.Tensor)``, ``torch.is_tensor(x)``."""
    if not isinstance(test, ast.Call) or len(test.args) not in (1, 2) or test.keywords:
        return None
    function = dotted_name(test.func)
    subject = test.args[0]
    if not isinstance(subject, ast.Name):
        return None
    if function == "isinstance" and len(test.args) == 2:
        kind = dotted_name(test.args[1])
        return subject.id if kind in ("torch.Tensor", "Tensor") else None
    if function in ("torch.is_tensor", "is_tensor") and len(test.args) == 1:
        return subject.id
    return None


def _settled_edge(node: Node, facts: Facts) -> EdgeKind | None:
    """The one edge a test takes when ``facts`` settle it."""
    statement = node.statement
    if node.kind is not NodeKind.TEST or not isinstance(statement, (ast.If, ast.While)):
        return None
    truth = truth_under(statement.test, facts)
    if truth is None:
        return None
    return EdgeKind.TRUE if truth else EdgeKind.FALSE


#: What separates a name from the literal it holds in a fact (``("rank := -1", True)``).
_IS = " := "


def _literal_value(value: ast.expr, facts: Facts) -> tuple[object, ...]:
    """``(literal,)`` for a literal argument (``-1`` included) or a plain name the
    caller's facts give one (a parameter handed on); ``()`` otherwise."""
    if isinstance(value, ast.Name):
        return _known_value(value.id, facts)
    return scalar_literal(value)


def _known_value(name: str, facts: Facts) -> tuple[object, ...]:
    """The literal ``facts`` say ``name`` holds, as ``(value,)``; ``()`` if none."""
    prefix = f"{name}{_IS}"
    for fact, _ in facts:
        if fact.startswith(prefix):
            return scalar_literal(ast.parse(fact[len(prefix) :], mode="eval").body)
    return ()


def _compared_truth(test: ast.expr, facts: Facts) -> bool | None:
    """``rank not in [-1, 0]``, ``rank == 0``, ``rank > 0`` where ``facts`` give the
    name's literal value (None: not such a test, or the value unknown)."""
    if not (
        isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name)
    ):
        return None
    known = _known_value(test.left.id, facts)
    if not known:
        return None
    value, op, right = known[0], test.ops[0], test.comparators[0]
    if isinstance(op, (ast.In, ast.NotIn)):
        if not isinstance(right, (ast.List, ast.Tuple, ast.Set)):
            return None
        elements = [scalar_literal(e) for e in right.elts]
        if not all(elements):
            return None
        other: object = tuple(e[0] for e in elements)
    else:
        given = scalar_literal(right)
        if not given:
            return None
        other = given[0]
    decide = COMPARISONS.get(type(op))
    if decide is None:
        return None
    try:
        return bool(decide(value, other))
    except TypeError:
        return None


def truth_under(test: ast.expr, facts: Facts) -> bool | None:
    """A test's truth where ``facts`` give plain names (and ``name == constant``) theirs,
    in three values: ``not``, ``and`` and ``or`` are settled by the parts that are known
    (``rank > 0 and not evaluate`` is false where ``evaluate`` is true); None when it
    stays open."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = truth_under(test.operand, facts)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        deciding = not isinstance(test.op, ast.And)  # the value one part settles it with
        parts = [truth_under(value, facts) for value in test.values]
        if deciding in parts:
            return deciding
        return None if None in parts else not deciding
    settled = _compared_truth(test, facts)
    if settled is not None:
        return settled
    settled = _compared_truth(test, facts)
    if settled is not None:
        return settled
    compared = _equality(test)
    if compared is not None:
        known = next((value for name, value in facts if name == compared[0]), None)
        return None if known is None else known == compared[1]
    tensor = _tensor_tested(test)
    spelled = _tensor_fact(tensor) if tensor is not None else dotted_name(test)
    if spelled is None:
        return None
    return next((value for name, value in facts if name == spelled), None)


def calls_in(node: ast.AST) -> Iterator[ast.Call]:
    """The calls inside ``node``, not inside scopes nested in it."""
    pending = child_nodes(node)
    while pending:
        current = pending.pop()
        if isinstance(current, SCOPE_TYPES):
            continue
        if isinstance(current, ast.Call):
            yield current
        pending.extend(child_nodes(current))


def _local_callee(call: ast.Call) -> str | None:
    """``f`` for ``f(...)``, ``self.f`` for ``self.f(...)``: a function or method the
    module may define."""
    if isinstance(call.func, ast.Name):
        return call.func.id
    spelled = dotted_name(call.func)
    if spelled is not None and spelled.startswith("self.") and spelled.count(".") == 1:
        return spelled
    return None


# -- collective sequences --------------------------------------------------------------


def ways_on(node: Node) -> Iterator[tuple[Node, EdgeKind]]:
    """The decision successors a hang can follow: a ``raise``, a failing ``assert`` or
    an exit with an error status (``sys.exit(1)``) ends the job loudly (the launcher
    stops every rank), so no way goes on from it; ``sys.exit()`` / ``sys.exit(0)``
    leaves quietly and counts."""
    for successor, edge in decision_successors(node):
        if edge is EdgeKind.RAISE and ends_loudly(node.statement):
            continue
        yield successor, edge
