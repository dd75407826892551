"""Which values of a function come from this rank's batch or loss.

Each rank reads its own batch, so a decision on a value computed from it is rank-local.
Seeds: the targets of a training loop (enumerate's counter and ``range()`` counters
excepted, through a progress bar too; not a loop over a literal or a parameter whose
default is one), names bound from ``next(...)``, the batch parameter of ``training_step``, and
the loss handed to ``backward()``. Taint follows simple bindings inside the function
(``=``, ``+=``, annotated, walrus, ``for`` targets, ``with ... as``), and a flag set to a
constant under a test on tainted data (``if torch.isnan(loss): bad = True``). A value that went
through a collective is the same on every rank: a name bound from a collective call, or
passed to an in-place one (``dist.all_reduce(flag)``) earlier in the function, no longer
counts as rank-local from there on.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator

import libcst as cst

from ddplint.analysis.object_kinds import BACKWARD_OWNER_KINDS, CATALOGUED_KINDS, MODULE_KINDS
from ddplint.code.collectives.catalogue import Collective
from ddplint.code.steps.training_steps import TrainingSteps
from ddplint.code.syntax.constants import parameters
from ddplint.code.syntax.module_index import ModuleIndex, children_of
from ddplint.code.syntax.names import bound_names, dotted_name
from ddplint.code.values.object_types import ObjectTypes
from ddplint.code.values.optional_values import OptionalValues

#: Collectives whose first argument holds the same result on every rank afterwards.
IN_PLACE_SYNCED = frozenset(
    {
        "all_reduce",
        "all_reduce_coalesced",
        "broadcast",
        "broadcast_object_list",
        "all_gather",
        "all_gather_coalesced",
        "all_gather_object",
        "all_gather_into_tensor",
    }
)
_COUNTERS = frozenset({"range", "trange", "count"})
_STRUCTURE_FUNCTIONS = frozenset({"isinstance", "hasattr", "type", "callable", "issubclass"})
#: Attributes whose value is the same on every rank whatever the tensor's data: whether
#: autograd tracks it (training vs a ``no_grad`` evaluation), its rank and type.
_UNIFORM_ATTRIBUTES = frozenset({"requires_grad", "ndim", "dtype", "is_leaf", "is_sparse"})
#: Methods that list a model's structure, identical on every rank (the same model).
STRUCTURE_METHODS = frozenset(
    {
        "keys",
        "dim",
        "is_floating_point",
        "parameters",
        "named_parameters",
        "buffers",
        "named_buffers",
        "modules",
        "named_modules",
        "children",
        "named_children",
    }
)
# Literal iterables hold configurations, not batches.
_LITERALS = (cst.List, cst.Tuple, cst.Set, cst.Dict, cst.SimpleString)
# Receivers of unknown kind whose ``.backward(x)`` takes the loss as an argument, not as
# the receiver, by name (the fallback where ``ObjectTypes`` does not know the receiver).
_BACKWARD_OWNERS = ("accelerator", "fabric", "engine", "autograd", "strategy", "self", "model")

#: Known kinds whose ``backward`` is the receiver's own (a tensor's): never the owner's.
_OTHER_KINDS = CATALOGUED_KINDS - BACKWARD_OWNER_KINDS - MODULE_KINDS

Scope = cst.FunctionDef | cst.Module


def value_names_read(
    expr: cst.CSTNode, seeds: Collection[str] = frozenset(), *, rank_view: bool = False
) -> Iterator[cst.Name]:
    """Names whose values an expression reads. Attribute names and keyword labels are
    not reads, and neither is asking about a value's structure, which every rank's batch
    shares: ``isinstance(batch, dict)``, ``hasattr``, ``type(batch)``, ``"key" in batch``,
    ``batch.keys()``. A ``None`` test reads only a name in ``seeds`` (``batch is None``):
    derived values are optional mostly by configuration (``aux_loss is not None``); so are
    seeds a function of the module makes ``None`` by configuration only
    (``values.optional_values``), which callers leave out of ``seeds``.

    With ``rank_view`` (does the value differ between ranks?) reading what is the same on
    every rank whatever the data is no read either: ``loss.requires_grad``, ``x.ndim``,
    ``model.parameters()``."""
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            yield node
        elif (
            rank_view and isinstance(node, cst.Attribute) and node.attr.value in _UNIFORM_ATTRIBUTES
        ):
            continue
        elif isinstance(node, (cst.Attribute, cst.Arg)):
            stack.append(node.value)
        elif isinstance(node, cst.Call) and _asks_structure(node, rank_view):
            continue
        elif isinstance(node, cst.Comparison) and _is_none_test(node):
            if isinstance(node.left, cst.Name) and node.left.value in seeds:
                yield node.left
            # Other None tests (``p.grad is None``, ``aux is not None``) ask about structure
            # or configuration, the same on every rank.
        elif isinstance(node, cst.Comparison) and any(
            isinstance(t.operator, (cst.In, cst.NotIn)) for t in node.comparisons
        ):
            stack.append(node.left)  # the key tested, not the container
        elif not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Param)):
            stack.extend(children_of(node))


def _is_none_test(comparison: cst.Comparison) -> bool:
    return all(
        isinstance(t.operator, (cst.Is, cst.IsNot))
        and isinstance(t.comparator, cst.Name)
        and t.comparator.value == "None"
        for t in comparison.comparisons
    )


def _asks_structure(call: cst.Call, rank_view: bool) -> bool:
    name = dotted_name(call.func)
    if name in _STRUCTURE_FUNCTIONS:
        return True
    if not isinstance(call.func, cst.Attribute):
        return False
    method = call.func.attr.value
    return method == "keys" or (rank_view and method in STRUCTURE_METHODS)


class _ScopeFlow:
    """Bindings, seeds and collective synchronisation points of one scope."""

    def __init__(self) -> None:
        self.bindings: list[tuple[str, cst.CSTNode, cst.CSTNode]] = []
        self.seeds: set[str] = set()
        self.synced_at: dict[str, int] = {}
        self.tainted: set[str] = set()
        #: Seeds whose ``is None`` test reads this rank's data (not the configuration).
        self.optional_by_data: set[str] = set()


class DataDependence:
    """Answers "is this expression computed from this rank's batch or loss?"."""

    def __init__(
        self,
        index: ModuleIndex,
        collectives: dict[cst.Call, Collective],
        training_steps: TrainingSteps,
        types: ObjectTypes,
    ) -> None:
        self._index = index
        self._types = types
        self._collectives = collectives
        self._steps = training_steps
        self._flows: dict[Scope, _ScopeFlow] = {}
        self._optional = OptionalValues(index)

    def is_data_dependent(self, expr: cst.CSTNode) -> bool:
        """Whether ``expr`` reads a value derived from the batch or the loss that no
        collective has made common to all ranks before ``expr``."""
        scope: Scope = self._index.enclosing_function(expr) or self._index.module
        flow = self._flow(scope)
        return self._reads_taint(flow, expr, self._index.order[expr])

    def _reads_taint(self, flow: _ScopeFlow, expr: cst.CSTNode, position: int) -> bool:
        return any(
            self._is_tainted_at(flow, n.value, position)
            for n in value_names_read(expr, flow.optional_by_data, rank_view=True)
        )

    @staticmethod
    def _is_tainted_at(flow: _ScopeFlow, name: str, position: int) -> bool:
        if name not in flow.tainted:
            return False
        synced = flow.synced_at.get(name)
        return synced is None or synced > position

    def _flow(self, scope: Scope) -> _ScopeFlow:
        flow = self._flows.get(scope)
        if flow is None:
            flow = self._build(scope)
            self._flows[scope] = flow
        return flow

    def _build(self, scope: Scope) -> _ScopeFlow:
        flow = _ScopeFlow()
        if isinstance(scope, cst.FunctionDef) and self._steps.is_training_step(scope):
            batch = self._steps.batch_parameter(scope)
            if batch is not None:
                flow.seeds.add(batch)
        root = scope.body if isinstance(scope, cst.FunctionDef) else scope
        for node in self._index.walk_within(root):
            self._record(flow, node)
        flow.optional_by_data = {
            seed
            for seed in flow.seeds
            if not self._optional.none_by_configuration(
                seed, [at for name, _, at in flow.bindings if name == seed]
            )
        }
        flow.tainted = set(flow.seeds)
        changed = True
        while changed:
            changed = False
            for name, value, at in flow.bindings:
                if name in flow.tainted:
                    continue
                position = self._index.order[at]
                if self._reads_taint(flow, value, position) or (
                    _is_flag_value(value) and self._under_data_test(flow, at, scope)
                ):
                    flow.tainted.add(name)
                    changed = True
        return flow

    def _under_data_test(self, flow: _ScopeFlow, at: cst.CSTNode, scope: Scope) -> bool:
        """Whether ``at`` runs under an ``if``/``while`` test on this rank's data
        (``if torch.isnan(loss): bad = True``): the flag it sets is this rank's too."""
        for ancestor in self._index.ancestors(at):
            if ancestor is scope:
                return False
            if isinstance(ancestor, (cst.If, cst.While)) and self._reads_taint(
                flow, ancestor.test, self._index.order[ancestor]
            ):
                return True
        return False

    def _record(self, flow: _ScopeFlow, node: cst.CSTNode) -> None:
        """Note the bindings, seeds and synchronisation points ``node`` makes."""
        if isinstance(node, cst.Assign):
            for target in node.targets:
                self._bind(flow, target.target, node.value, node)
            if _is_next_call(node.value):
                for target in node.targets:
                    flow.seeds.update(bound_names(target.target))
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign, cst.NamedExpr)):
            if node.value is not None:
                self._bind(flow, node.target, node.value, node)
        elif isinstance(node, cst.WithItem) and node.asname is not None:
            self._bind(flow, node.asname.name, node.item, node)
        elif isinstance(node, cst.For):
            self._bind(flow, node.target, node.iter, node)
            if self._is_batch_loop(flow, node):
                flow.seeds.update(_loop_data_names(node))
        elif isinstance(node, cst.Call):
            collective = self._collectives.get(node)
            if collective is not None and collective.op in IN_PLACE_SYNCED and node.args:
                first = node.args[0].value
                if isinstance(first, cst.Name):
                    flow.synced_at.setdefault(first.value, self._index.order[node])
            loss = _loss_of_backward(node, self._types)
            if loss is not None:
                flow.seeds.add(loss)

    def _is_batch_loop(self, flow: _ScopeFlow, loop: cst.For) -> bool:
        """A training loop whose targets are batches: not an outer loop around another
        training loop (folds, epochs, configurations), nor a loop over names bound from
        the keys of a mapping or a literal (``keys = datasets.keys(); for k in keys``)."""
        if not self._steps.is_training_loop(loop):
            return False
        inner = (
            n
            for n in self._index.walk_within(loop.body)
            if isinstance(n, (cst.For, cst.While)) and n is not loop
        )
        if any(self._steps.is_training_loop(n) for n in inner):
            return False
        if isinstance(loop.iter, cst.Name):
            bound = [v for name, v, _ in flow.bindings if name == loop.iter.value]
            if bound and all(_is_uniform_iterable(v) for v in bound):
                return False
            if not bound and _has_literal_default(
                self._index.enclosing_function(loop), loop.iter.value
            ):
                return False
        return True

    def _bind(
        self, flow: _ScopeFlow, target: cst.CSTNode, value: cst.CSTNode, at: cst.CSTNode
    ) -> None:
        """Record ``target = value``; a value that went through a collective is the same
        on every rank and binds nothing rank-local."""
        if self._is_collective_result(value):
            return
        for name in bound_names(target):
            flow.bindings.append((name, value, at))

    def is_synchronising(self, call: cst.Call) -> bool:
        """A collective that leaves its first argument the same on every rank (by the
        catalogue, or a project wrapper named like one: ``dist.all_reduce``)."""
        collective = self._collectives.get(call)
        if collective is not None:
            return collective.op in IN_PLACE_SYNCED
        return isinstance(call.func, cst.Attribute) and call.func.attr.value in IN_PLACE_SYNCED

    def _is_collective_result(self, value: cst.CSTNode) -> bool:
        return any(
            isinstance(node, cst.Call) and node in self._collectives
            for node in (value, *self._index.walk_within(value))
        )


def _is_flag_value(value: cst.CSTNode) -> bool:
    """A constant a flag is set to: ``True``, ``False``, ``None`` or a number."""
    if isinstance(value, cst.Name):
        return value.value in ("True", "False", "None")
    return isinstance(value, (cst.Integer, cst.Float))


def _is_next_call(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Call) and dotted_name(value.func) == "next"


def _called_name(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.Call):
        name = dotted_name(expr.func)
        return name.rsplit(".", 1)[-1] if name else None
    return None


def _is_uniform_iterable(expr: cst.CSTNode) -> bool:
    """A literal, a counter (``range(n)``) or the keys of a mapping."""
    if isinstance(expr, _LITERALS) or _is_keys_call(expr):
        return True
    return isinstance(expr, cst.Call) and _called_name(expr) in _COUNTERS


def _is_keys_call(expr: cst.CSTNode) -> bool:
    """``anything.keys()``, whatever the receiver (``self.datasets["train"].keys()``)."""
    return (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value == "keys"
    )


def _loop_data_names(loop: cst.For) -> set[str]:
    """Names a training loop binds from its data: not ``range()`` counters, not the
    index of ``enumerate``, not what ``zip`` takes from a counter."""
    iterable = _unwrapped(loop.iter)
    called = _called_name(iterable)
    if called in _COUNTERS or _is_keys_call(iterable) or isinstance(iterable, _LITERALS):
        return set()
    if (
        isinstance(iterable, cst.Call)
        and iterable.args
        and (
            _called_name(iterable.args[0].value) in _COUNTERS
            or isinstance(iterable.args[0].value, _LITERALS)
        )
    ):
        return set()  # tqdm(range(n)), enumerate([...])
    target = loop.target
    if called == "enumerate" and isinstance(target, (cst.Tuple, cst.List)):
        return {n for e in target.elements[1:] for n in bound_names(e.value)}
    if (
        called == "zip"
        and isinstance(iterable, cst.Call)
        and isinstance(target, (cst.Tuple, cst.List))
        and len(target.elements) == len(iterable.args)
        and not any(a.star for a in iterable.args)
    ):
        # ``for data, iteration in zip(loader, range(n))``: each name comes from its own
        # iterable; a counter stays a counter.
        return {
            n
            for element, argument in zip(target.elements, iterable.args, strict=True)
            if _called_name(argument.value) not in _COUNTERS
            for n in bound_names(element.value)
        }
    return set(bound_names(target))


def _unwrapped(iterable: cst.BaseExpression) -> cst.BaseExpression:
    """The ``enumerate(...)`` or ``zip(...)`` a progress bar or other wrapper passes
    through as it is (``tqdm(enumerate(loader))``, ``track(zip(a, b))``)."""
    if (
        isinstance(iterable, cst.Call)
        and _called_name(iterable) not in ("enumerate", "zip")
        and iterable.args
        and not iterable.args[0].star
        and iterable.args[0].keyword is None
        and _called_name(iterable.args[0].value) in ("enumerate", "zip")
    ):
        return iterable.args[0].value
    return iterable


def _has_literal_default(function: cst.FunctionDef | None, name: str) -> bool:
    """Whether ``name`` is a parameter of ``function`` whose default is a literal
    (``tests=["batch", "gpu"]``): a configuration, not batches."""
    if function is None:
        return False
    found = next((p for p in parameters(function) if p.name.value == name), None)
    return found is not None and isinstance(found.default, _LITERALS)


def _loss_of_backward(call: cst.Call, types: ObjectTypes) -> str | None:
    """The name of the loss a backward call differentiates, when it is a plain name:
    the argument of a framework object's ``backward(loss)`` (an accelerator, a Fabric,
    a DeepSpeed engine, a LightningModule: known by its allocation, else by its name),
    else the receiver."""
    if not isinstance(call.func, cst.Attribute):
        return None
    method = call.func.attr.value
    receiver = call.func.value
    if method == "manual_backward":
        return _root_name(call.args[0].value) if call.args else None
    if method != "backward":
        return None
    kind = types.kind_of(receiver)
    if kind in BACKWARD_OWNER_KINDS:
        return _root_name(call.args[0].value) if call.args else None
    owner = (dotted_name(receiver) or "").rsplit(".", 1)[-1].lower()
    if (
        kind not in _OTHER_KINDS
        and owner
        and any(owner == o or owner.endswith(o) for o in _BACKWARD_OWNERS)
    ):
        return _root_name(call.args[0].value) if call.args else None
    if _called_name(receiver) == "scale":  # scaler.scale(loss).backward()
        assert isinstance(receiver, cst.Call)
        return _root_name(receiver.args[0].value) if receiver.args else None
    return _root_name(receiver)


def _root_name(expr: cst.BaseExpression) -> str | None:
    """``loss`` for ``loss``, ``loss / accum``, ``outputs.loss``, ``loss.mean()``."""
    while True:
        if isinstance(expr, cst.Name):
            return None if expr.value in ("self", "cls") else expr.value
        if isinstance(expr, cst.Attribute):
            expr = expr.value
        elif isinstance(expr, cst.BinaryOperation):
            expr = expr.left
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            expr = expr.func.value
        else:
            return None
