"""Which trained submodules each path of a module class's forward uses, on the
control-flow graph (the question behind DDP502).

A submodule (``self.x`` built from a layer class that may hold parameters, not frozen
in ``__init__``) is *used* by a node of the forward's graph when the node's own code
reads ``self.x`` (a call, or its parameters), calls a name bound to it (``head =
self.head``; ``for layer in self.layers``: a re-bound name is a new value), or calls a
method of the class that uses it (on some path: *may*; on every path: *must*).
Iterating ``self.layers`` in a ``for`` header is a binding, not a use.

A branch (an ``if`` whose test varies between steps or ranks: ``varying_reason``)
leaves ``x`` unused when the forward can reach the branch without using ``x``, one way
on can reach the end without using it and the other uses it before the ways meet
again (its immediate post-dominator). The forward is
followed into the methods of its class it calls and into the ``forward`` of submodules
whose class this module defines, a few calls deep; what a caller uses on every path is
used, whatever a callee's branch does.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

from ddplint.analysis.api import MODULE_STEP_METHODS
from ddplint.analysis.control_flow import (
    EdgeKind,
    Graph,
    Node,
    NodeKind,
    own_nodes,
    single_bindings,
)
from ddplint.analysis.divergence import Source
from ddplint.analysis.dominance import PostDominance, decision_successors
from ddplint.analysis.effects import header_parts
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.names import dotted_name
from ddplint.analysis.whole_forwards import (
    PARAMETER_FREE,
    class_methods,
    frozen_submodules,
    self_attribute,
)

Function = ast.FunctionDef | ast.AsyncFunctionDef
#: Library functions that draw a random number.
RANDOM_DRAWS = ("random.", "numpy.random.", "torch.rand", "torch.bernoulli")
#: How many calls deep the forward is followed (each hop: a helper or a submodule).
_MAX_DEPTH = 3
#: What a name may hold at a node: the submodules bound to it.
_Bindings = dict[str, frozenset[str]]


@dataclass(frozen=True)
class SkippingBranch:
    """An ``if`` of ``method`` (``label``) whose test varies (``reason``) and that
    leaves ``skipped`` unused on one way; ``called_from``: the method that runs it
    (empty for the forward itself)."""

    test: ast.expr
    method: Function
    skipped: tuple[str, ...]
    reason: str
    label: str
    called_from: str


@dataclass(frozen=True)
class _Unit:
    method: Function
    owner: ast.ClassDef
    always: frozenset[str]
    label: str
    called_from: str
    depth: int


def trained_submodules(cls: ast.ClassDef) -> frozenset[str]:
    """``x`` for every ``self.x = SomeLayer(...)`` of ``cls`` whose layer may hold
    parameters that get gradients (parameter-free layers and frozen submodules left
    out)."""
    found: set[str] = set()
    for node in ast.walk(cls):
        if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Call):
            continue
        layer = (dotted_name(node.value.func) or "").rsplit(".", 1)[-1]
        if not layer[:1].isupper() or layer in PARAMETER_FREE:
            continue
        found.update(a for t in node.targets if (a := self_attribute(t)) is not None)
    return frozenset(found) - frozen_submodules(class_methods(cls).get("__init__"))


def _iterated_submodule(loop: ast.For | ast.AsyncFor) -> tuple[str, ast.expr] | None:
    """(``layers``, the target that holds one) for ``for layer in self.layers`` and
    ``for i, layer in enumerate(self.layers)``."""
    iterable, target = loop.iter, loop.target
    if (
        isinstance(iterable, ast.Call)
        and dotted_name(iterable.func) == "enumerate"
        and iterable.args
        and isinstance(target, ast.Tuple)
        and len(target.elts) == 2
    ):
        iterable, target = iterable.args[0], target.elts[1]
    attribute = self_attribute(iterable)
    return (attribute, target) if attribute is not None else None


def _bound_names(node: Node) -> Iterator[tuple[str, frozenset[str] | None]]:
    """The names ``node`` binds, each with the submodules it binds them to (None: a
    value that is no submodule)."""
    statement = node.statement
    if node.kind is NodeKind.STEP and isinstance(statement, (ast.For, ast.AsyncFor)):
        iterated = _iterated_submodule(statement)
        held = iterated[1] if iterated is not None else None
        for target in ast.walk(statement.target):
            if isinstance(target, ast.Name):
                yield target.id, frozenset({iterated[0]}) if iterated and target is held else None
        return
    if node.kind is not NodeKind.STATEMENT or statement is None:
        return
    value: ast.expr | None = None
    targets: list[ast.expr] = []
    if isinstance(statement, ast.Assign):
        targets, value = statement.targets, statement.value
    elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
        targets = [statement.target]
    elif isinstance(statement, (ast.With, ast.AsyncWith)):
        targets = [i.optional_vars for i in statement.items if i.optional_vars is not None]
    attribute = self_attribute(value) if value is not None else None
    for target in targets:
        if isinstance(target, ast.Name):
            yield target.id, frozenset({attribute}) if attribute is not None else None
        else:
            for name in ast.walk(target):
                if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Store):
                    yield name.id, None


def _own_parts(node: Node) -> Iterator[ast.AST]:
    """The expressions a node evaluates itself (a ``for`` header's iterable and
    ``name = self.x`` are bindings, not uses)."""
    statement = node.statement
    if statement is None or node.kind not in (NodeKind.STATEMENT, NodeKind.TEST):
        return
    if (
        isinstance(statement, ast.Assign)
        and all(isinstance(t, ast.Name) for t in statement.targets)
        and self_attribute(statement.value) is not None
    ):
        return  # ``head = self.head`` binds a name; calling it uses the submodule
    for part in header_parts(statement):
        pending = [part]
        while pending:
            current = pending.pop()
            if isinstance(current, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            yield current
            pending.extend(c for c in ast.iter_child_nodes(current) if not isinstance(c, ast.stmt))


def _ways(node: Node) -> Iterator[Node]:
    """The successors a completed forward can take (no exception, no raise)."""
    for successor, _ in decision_successors(node):
        if successor.kind is not NodeKind.RAISE:
            yield successor


class _MethodUses:
    """Which submodules each node of one method's graph uses, may and must."""

    def __init__(
        self, owner: ForwardBranches, cls: ast.ClassDef, graph: Graph, dominance: PostDominance
    ) -> None:
        self.graph = graph
        self.dominance = dominance
        self.may: dict[int, frozenset[str]] = {}
        self.must: dict[int, frozenset[str]] = {}
        bindings = _reaching_bindings(graph)
        methods = class_methods(cls)
        for node in graph.nodes:
            may: set[str] = set()
            must: set[str] = set()
            for part in _own_parts(node):
                attribute = self_attribute(part) if isinstance(part, ast.Attribute) else None
                if attribute in methods and isinstance(getattr(part, "ctx", None), ast.Load):
                    helper = owner.uses(cls, methods[attribute])
                    may |= helper[0]
                    must |= helper[1]
                elif attribute is not None:
                    may.add(attribute)
                    must.add(attribute)
                elif isinstance(part, ast.Call) and isinstance(part.func, ast.Name):
                    held = bindings.get(node.index, {}).get(part.func.id, frozenset())
                    may |= held
                    if len(held) == 1:
                        must |= held
            self.may[node.index] = frozenset(may)
            self.must[node.index] = frozenset(must)

    def avoids(self, start: Node, submodule: str, target: Node) -> bool:
        """Whether a way from ``start`` reaches ``target`` without a node that must use
        ``submodule`` (``start`` included)."""
        seen: set[int] = set()
        pending = [start]
        while pending:
            node = pending.pop()
            if node.index in seen or submodule in self.must[node.index]:
                continue
            if node is target:
                return True
            seen.add(node.index)
            pending.extend(_ways(node))
        return False

    def may_reach_use(self, start: Node, submodule: str, stop: Node | None) -> bool:
        """Whether a way from ``start`` reaches a node that may use ``submodule``
        before ``stop`` (where the ways of a branch meet again)."""
        seen: set[int] = {stop.index} if stop is not None else set()
        pending = [start]
        while pending:
            node = pending.pop()
            if node.index in seen:
                continue
            if submodule in self.may[node.index]:
                return True
            seen.add(node.index)
            pending.extend(_ways(node))
        return False

    @cached_property
    def all_may(self) -> frozenset[str]:
        """What some way from entry to exit uses."""
        return frozenset().union(*self.may.values())

    @cached_property
    def all_must(self) -> frozenset[str]:
        """What every way from entry to exit uses."""
        graph = self.graph
        return frozenset(s for s in self.all_may if not self.avoids(graph.entry, s, graph.exit))


def _reaching_bindings(graph: Graph) -> dict[int, _Bindings]:
    """For each node, the submodules each name may hold when it starts (a name bound
    again to anything else holds that instead)."""
    before: dict[int, _Bindings] = {graph.entry.index: {}}
    pending = [graph.entry]
    while pending:
        node = pending.pop()
        state = dict(before.get(node.index, {}))
        for name, held in _bound_names(node):
            if held is None:
                state.pop(name, None)
            else:
                state[name] = held
        for successor, _ in decision_successors(node):
            old = before.get(successor.index)
            merged = dict(old or {})
            for name, held in state.items():
                merged[name] = merged.get(name, frozenset()) | held
            if old is None or merged != old:
                before[successor.index] = merged
                pending.append(successor)
    return before


class ForwardBranches:
    """The branches of a module's forwards that leave a trained submodule unused."""

    def __init__(self, analysis: ModuleAnalysis) -> None:
        self._analysis = analysis
        self._classes = {c.name: c for c in analysis.nodes.of_type(ast.ClassDef)}
        self._method_uses: dict[int, _MethodUses | None] = {}

    def _uses_of(self, cls: ast.ClassDef, method: Function) -> _MethodUses | None:
        key = id(method)
        if key not in self._method_uses:
            self._method_uses[key] = None  # a recursive helper uses nothing more
            graph = self._analysis.graphs.graph(method)
            dominance = self._analysis.dominance(method)
            self._method_uses[key] = _MethodUses(self, cls, graph, dominance)
        return self._method_uses[key]

    def uses(self, cls: ast.ClassDef, method: Function) -> tuple[frozenset[str], frozenset[str]]:
        """The submodules a method of ``cls`` may use, and those it uses on every way."""
        found = self._uses_of(cls, method)
        if found is None:
            return frozenset(), frozenset()
        return found.all_may, found.all_must

    def skipping_branches(self, cls: ast.ClassDef) -> Iterator[SkippingBranch]:
        """The branches of ``cls``'s forwards (and what they run) that leave one of its
        trained submodules, or one of a submodule's own, unused on one way."""
        methods = class_methods(cls)
        pending = [
            _Unit(m, cls, frozenset(), name, "", 0)
            for name, m in methods.items()
            if name in MODULE_STEP_METHODS
        ]
        seen: set[int] = set()
        while pending:
            unit = pending.pop(0)
            if id(unit.method) in seen:
                continue
            seen.add(id(unit.method))
            uses = self._uses_of(unit.owner, unit.method)
            if uses is None:
                continue
            yield from self._branches(unit, uses)
            if unit.depth < _MAX_DEPTH:
                pending.extend(self._callees(unit, uses))

    def _branches(self, unit: _Unit, uses: _MethodUses) -> Iterator[SkippingBranch]:
        trained = trained_submodules(unit.owner) - unit.always
        graph = uses.graph
        for node in graph.nodes:
            if node.kind is not NodeKind.TEST or not isinstance(node.statement, ast.If):
                continue
            arms = [s for s, e in decision_successors(node) if e in (EdgeKind.TRUE, EdgeKind.FALSE)]
            if len(arms) != 2:
                continue
            skipped = tuple(
                sorted(s for s in trained if _one_way_only(uses, node, arms[0], arms[1], s))
            )
            if not skipped:
                continue
            reason = varying_reason(self._analysis, unit.owner, unit.method, node)
            if reason is not None:
                yield SkippingBranch(
                    node.statement.test,
                    unit.method,
                    skipped,
                    reason,
                    unit.label,
                    unit.called_from,
                )

    def _callees(self, unit: _Unit, uses: _MethodUses) -> Iterator[_Unit]:
        """Methods of the unit's class it calls, and the ``forward`` of submodules whose
        class this module defines."""
        methods = class_methods(unit.owner)
        built = _submodule_classes(unit.owner)
        always = unit.always | uses.all_must
        caller = f"called from `{unit.label}`"
        for node in own_nodes(unit.method):
            if not isinstance(node, ast.Call):
                continue
            attribute = self_attribute(node.func)
            if attribute in methods:
                label = f"{unit.owner.name}.{attribute}"
                yield _Unit(methods[attribute], unit.owner, always, label, caller, unit.depth + 1)
                continue
            sub_class = self._classes.get(built.get(attribute or "", ""))
            if sub_class is None or not self._analysis.objects.class_kinds.is_module_class(
                sub_class
            ):
                continue
            forward = class_methods(sub_class).get("forward")
            if forward is not None:
                label = f"{sub_class.name}.forward"
                yield _Unit(forward, sub_class, frozenset(), label, caller, unit.depth + 1)


def _one_way_only(uses: _MethodUses, test: Node, first: Node, second: Node, name: str) -> bool:
    """Whether the branch at ``test`` decides if ``name`` is used: the forward reaches
    it without using ``name``, and one way on ends without it while the other uses it."""
    if name in uses.may[test.index] or not uses.avoids(uses.graph.entry, name, test):
        return False
    end, meet = uses.graph.exit, uses.dominance.immediate(test)
    return (uses.avoids(first, name, end) and uses.may_reach_use(second, name, meet)) or (
        uses.avoids(second, name, end) and uses.may_reach_use(first, name, meet)
    )


def _submodule_classes(cls: ast.ClassDef) -> dict[str, str]:
    """``criterion -> MatchingLoss`` for every ``self.criterion = MatchingLoss(...)``."""
    found: dict[str, str] = {}
    for node in ast.walk(cls):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            built = dotted_name(node.value.func)
            for target in node.targets:
                attribute = self_attribute(target)
                if built and attribute is not None:
                    found[attribute] = built
    return found


def varying_reason(
    analysis: ModuleAnalysis, cls: ast.ClassDef, method: Function, node: Node
) -> str | None:
    """What makes the test at ``node`` change between steps or ranks, in words: a random
    draw, the method's inputs (and values computed from them, flow-sensitively), the
    rank, or a field of the module that code outside ``__init__`` sets; None when it
    reads only settings."""
    assert isinstance(node.statement, ast.If)
    test = node.statement.test
    drawn = {name for name, value in single_bindings(method).items() if _draws(analysis, value)}
    for part in ast.walk(test):
        if isinstance(part, ast.Name) and part.id in drawn:
            return f"a random draw (`{part.id}`)"
    if _draws(analysis, test):
        return "a random draw"
    parameters = [a.arg for a in (*method.args.posonlyargs, *method.args.args)][1:]
    handed = frozenset(parameters + [a.arg for a in method.args.kwonlyargs])
    view = analysis.batch_view(method, step_method=True, handed=handed)
    taint = view.evaluator.truth(test, view.before(node))
    if taint is not None and taint.source is Source.BATCH:
        read = [n.id for n in ast.walk(test) if isinstance(n, ast.Name)]
        if taint.spelled in read or taint.spelled not in handed:
            return f"the input `{taint.spelled}`"
        return f"`{read[0]}`, computed from the input `{taint.spelled}`"
    if taint is not None and taint.source is Source.RANK:
        return "the rank"
    changed = _fields_set_after_init(analysis, cls)
    for part in ast.walk(test):
        attribute = self_attribute(part) if isinstance(part, ast.Attribute) else None
        if attribute in changed:
            return f"`self.{attribute}`, which the code sets outside `__init__`"
    return None


def _draws(analysis: ModuleAnalysis, expression: ast.AST) -> bool:
    return any(
        isinstance(node, ast.Call)
        and (analysis.names.resolve(node.func) or "").startswith(RANDOM_DRAWS)
        for node in ast.walk(expression)
    )


def _fields_set_after_init(analysis: ModuleAnalysis, cls: ast.ClassDef) -> frozenset[str]:
    """Fields of ``cls`` set outside its ``__init__``: by its other methods (``self.x =``,
    ``self.x += 1``), or on some other object of the module by the same attribute
    (``model.module.epoch = epoch``: which object it is, is not followed)."""
    init = class_methods(cls).get("__init__")
    in_init = {id(n) for n in ast.walk(init)} if init is not None else set()
    in_class = {id(n) for n in ast.walk(cls)}
    found: set[str] = set()
    for node in ast.walk(analysis.module):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            if not isinstance(target, ast.Attribute) or id(target) in in_init:
                continue
            on_self = self_attribute(target) is not None
            if on_self == (id(target) in in_class):
                found.add(target.attr)
    return frozenset(found)
