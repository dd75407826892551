"""Divergence: which values may differ between ranks, and why.

A value is *divergent* when it comes from something each rank has its own of: the rank
itself, this rank's batch or loss (``data_dependence``), what the function hands to a
reducing or gathering collective (a rank reduces or gathers a value because it differs
between ranks), a local probe (the clock, a file-system check, free memory), or a flag
set on some ranks only (``if rank == 0: stop = True``). A value is *uniform* when it went
through a collective (``all_reduce``, ``broadcast``, a name bound from a collective's
result) or comes from none of these (constants, configuration, the world size). Anything
the analysis cannot place is treated as uniform: rules built on it stay quiet.

``Divergence.source_of(expr)`` answers for an expression where it stands (flow by source
order inside one function; ``self.x`` flags set under a rank guard anywhere in the class).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import Enum

import libcst as cst

from ddplint.analysis.api import FILE_CALLS as FILE_CHECK_FUNCTIONS
from ddplint.code.collectives.catalogue import Collective
from ddplint.code.ranks.rank_predicates import RankPredicates
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import ImportTable, dotted_name
from ddplint.code.values.data_dependence import (
    IN_PLACE_SYNCED,
    STRUCTURE_METHODS,
    DataDependence,
    bound_names,
    value_names_read,
)

#: Calls whose result is this process's own observation of its clock or memory.
PROBE_FUNCTIONS = frozenset(
    {
        "time.time",
        "time.time_ns",
        "time.perf_counter",
        "time.monotonic",
        "timeit.default_timer",
        "torch.cuda.memory_allocated",
        "torch.cuda.max_memory_allocated",
        "torch.cuda.memory_reserved",
        "torch.cuda.mem_get_info",
        "psutil.virtual_memory",
        "socket.gethostname",
    }
)
#: Lightning hooks whose first parameter after ``self`` is this rank's batch.
STEP_HOOKS = frozenset({"training_step", "validation_step", "test_step", "predict_step"})
#: ``pathlib.Path`` methods that look at the file system.
FILE_CHECK_METHODS = frozenset({"exists", "is_file", "is_dir"})
#: Which argument a collective takes each rank's own contribution from, by operation
#: (``torch.distributed`` spelling); other families take it first.
_CONTRIBUTION_ARGUMENT = {
    "all_reduce": 0,
    "reduce": 0,
    "all_gather": 1,
    "all_gather_into_tensor": 1,
    "all_gather_object": 1,
    "gather": 0,
    "gather_object": 0,
    "reduce_scatter": 1,
    "reduce_scatter_tensor": 1,
}
_CONTRIBUTION_KEYWORDS = frozenset({"tensor", "obj", "input_tensor", "data", "input"})
_CONVERSIONS = frozenset({"len", "float", "int", "bool", "list", "tuple", "sorted", "sum"})
#: Methods whose result is a view, conversion or reduction of their receiver (not
#: ``model.compute_loss(...)``, which computes something else).
_VIEWS = frozenset(
    {
        "detach",
        "clone",
        "float",
        "double",
        "half",
        "bfloat16",
        "int",
        "long",
        "bool",
        "to",
        "cpu",
        "cuda",
        "contiguous",
        "view",
        "reshape",
        "flatten",
        "squeeze",
        "unsqueeze",
        "item",
        "tolist",
        "sum",
        "mean",
        "max",
        "min",
        "norm",
        "abs",
        "numel",
        "size",
        "values",
        "items",
        "copy",
        "clamp",
    }
)
#: torch / numpy functions that build a tensor from their first argument's data.
_DATA_CONSTRUCTORS = frozenset(
    {
        "tensor",
        "as_tensor",
        "from_numpy",
        "stack",
        "cat",
        "concat",
        "array",
        "asarray",
        "_flatten_dense_tensors",
        "flatten_dense_tensors",
        "square",
        "norm",
        "sum",
        "mean",
    }
)
#: Conversions whose result is the size of their input.
_SIZE_CONVERSIONS = frozenset({"len", "numel"})
#: Methods that read a model or a container without changing it.
_QUERY_METHODS = STRUCTURE_METHODS | {"state_dict", "values", "items", "get", "numel", "size"}
_OBJECT_OPS = frozenset({"all_gather_object", "gather_object"})
#: Questions about a tensor that a tensor collective requires to match on every rank.
_SHAPE_ATTRIBUTES = frozenset({"shape", "dtype", "device", "ndim", "itemsize"})
_SHAPE_METHODS = frozenset({"numel", "size", "dim", "nelement", "element_size"})
_FRAMEWORK_GATHERS = frozenset(
    {"all_gather", "gather", "reduce", "all_reduce", "gather_for_metrics"}
)


class Source(str, Enum):
    """Why a value differs between ranks (the words a message uses)."""

    RANK = "the rank"
    DATA = "this rank's batch or loss"
    CONTRIBUTED = "this rank's share of a later collective"
    PROBE = "a local probe (clock, memory)"
    FILE_CHECK = "a file-system check made by each rank at its own moment"
    DECIDED = "a flag set on some ranks only"


@dataclass(frozen=True)
class Divergent:
    """``expr`` reads ``key`` (a name or ``self.attr``), which is divergent because of
    ``source``; ``origin`` is where that came from (the collective, the guarded
    assignment, the probe call)."""

    source: Source
    key: str
    origin: cst.CSTNode


@dataclass
class _ScopeFacts:
    """Per function: bindings by key, divergent keys and where they are synchronised."""

    bindings: dict[str, list[tuple[cst.CSTNode, cst.CSTNode]]] = field(default_factory=dict)
    contributed: dict[str, cst.CSTNode] = field(default_factory=dict)
    shape_uniform: set[str] = field(default_factory=set)
    synced: dict[str, list[int]] = field(default_factory=dict)
    #: Calls on a local object (``stopper(val_loss)``, ``stats.append(x)``) by name: they
    #: may change what its attributes hold.
    updates: dict[str, list[cst.Call]] = field(default_factory=dict)
    #: The batch parameter of a Lightning step hook (``validation_step(self, batch, ...)``).
    batch: str | None = None


class Divergence:
    """Answers "may this value differ between ranks?" for one module."""

    def __init__(
        self,
        index: ModuleIndex,
        names: ImportTable,
        collectives: dict[cst.Call, Collective],
        predicates: RankPredicates,
        data: DataDependence,
        rank_guarded: Callable[[cst.CSTNode], bool],
    ) -> None:
        self._index = index
        self._names = names
        self._collectives = collectives
        self._predicates = predicates
        self._data = data
        self._rank_guarded = rank_guarded
        self._scopes: dict[cst.CSTNode, _ScopeFacts] = {}
        self._class_flags: dict[cst.ClassDef, dict[str, cst.CSTNode]] = {}

    # -- the question ----------------------------------------------------------------

    def source_of(self, expr: cst.CSTNode) -> Divergent | None:
        """Why ``expr`` may differ between ranks where it stands, or None (uniform or
        unknown)."""
        if self._predicates.is_rank_dependent(expr):
            return Divergent(Source.RANK, "", expr)
        found = self._source(expr, self._index.order[expr], frozenset())
        if found is None and self._data.is_data_dependent(expr):
            return Divergent(Source.DATA, "", expr)
        return found

    def is_divergent(self, expr: cst.CSTNode) -> bool:
        return self.source_of(expr) is not None

    def _source(self, expr: cst.CSTNode, position: int, seen: frozenset[str]) -> Divergent | None:
        # A probe counts in the expression or one binding away (``t0 = time.time()``):
        # a value derived further from a file listing (the latest checkpoint's step) is
        # mostly the same on every rank of a shared file system.
        probe = self._probe_in(expr) if len(seen) <= 1 else None
        if probe is not None:
            return Divergent(probe[0], "", probe[1])
        facts = self._facts(expr)
        for key in self._keys_read(expr, facts):
            if key in seen or self._synced_before(facts, key, position):
                continue
            if key in facts.contributed:
                return Divergent(Source.CONTRIBUTED, key, facts.contributed[key])
            if key == facts.batch:
                return Divergent(Source.DATA, key, expr)
            flag = self._decided_on_some_ranks(expr, facts, key, position)
            if flag is not None:
                return Divergent(Source.DECIDED, key, flag)
            for binding, value in self._reaching(facts, key, position):
                found = self._source(value, self._index.order[binding], seen | {key})
                if found is not None:
                    return found
        return None

    # -- what an expression reads ------------------------------------------------------

    def _keys_read(self, expr: cst.CSTNode, facts: _ScopeFacts) -> Iterator[str]:
        """Names and ``self.attr`` keys whose values ``expr`` reads (structure questions
        and shape questions about tensor-collective operands are not reads)."""
        for name in value_names_read(expr, rank_view=True):
            key = self._key_of(name)
            if key is None or self._asks_shape(name, key, facts):
                continue
            yield key

    def _key_of(self, name: cst.Name) -> str | None:
        if name.value != "self":
            return name.value
        parent = self._index.parent.get(name)
        if isinstance(parent, cst.Attribute) and parent.value is name:
            return f"self.{parent.attr.value}"
        return None

    def _asks_shape(self, name: cst.Name, key: str, facts: _ScopeFacts) -> bool:
        """A question about the size of a tensor-collective contribution (``t.numel()``,
        ``len(grads)``, ``grads[0].shape``, ``if grads:``): every rank's matches."""
        if key not in facts.shape_uniform:
            return False
        node: cst.CSTNode = self._index.parent[name] if key.startswith("self.") else name
        parent = self._index.parent.get(node)
        while isinstance(parent, cst.Subscript) and parent.value is node:
            node, parent = parent, self._index.parent.get(parent)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            if parent.attr.value in _SHAPE_ATTRIBUTES:
                return True
            grand = self._index.parent.get(parent)
            return (
                parent.attr.value in _SHAPE_METHODS
                and isinstance(grand, cst.Call)
                and grand.func is parent
            )
        if isinstance(parent, cst.Arg):
            call = self._index.parent.get(parent)
            return isinstance(call, cst.Call) and dotted_name(call.func) == "len"
        return _tests_truth(node, parent)

    def _probe_in(self, expr: cst.CSTNode) -> tuple[Source, cst.Call] | None:
        for node in (expr, *self._index.walk_within(expr)):
            if not isinstance(node, cst.Call):
                continue
            qualified = self._names.qualified_name(node.func) or ""
            if qualified in PROBE_FUNCTIONS:
                return Source.PROBE, node
            if qualified in FILE_CHECK_FUNCTIONS or (
                isinstance(node.func, cst.Attribute)
                and node.func.attr.value in FILE_CHECK_METHODS
                and not node.args
            ):
                return Source.FILE_CHECK, node
        return None

    # -- per-scope facts -------------------------------------------------------------------

    def _facts(self, node: cst.CSTNode) -> _ScopeFacts:
        scope: cst.CSTNode = self._index.enclosing_function(node) or self._index.module
        facts = self._scopes.get(scope)
        if facts is None:
            facts = self._build(scope)
            self._scopes[scope] = facts
        return facts

    def _build(self, scope: cst.CSTNode) -> _ScopeFacts:
        facts = _ScopeFacts()
        if isinstance(scope, cst.FunctionDef) and scope.name.value in STEP_HOOKS:
            params = scope.params.params
            if len(params) > 1 and self._index.enclosing_class(scope) is not None:
                facts.batch = params[1].name.value
        root = scope.body if isinstance(scope, cst.FunctionDef) else scope
        for node in self._index.walk_within(root):
            if isinstance(node, cst.Assign):
                for target in node.targets:
                    self._bind(facts, target.target, node.value, node)
            elif isinstance(node, (cst.AnnAssign, cst.AugAssign)) and node.value is not None:
                self._bind(facts, node.target, node.value, node)
            elif isinstance(node, cst.Call):
                self._note_collective(facts, node)
        for call in self._index.walk_within(root):
            if isinstance(call, cst.Call) and self._may_update(call):
                owner = _called_object(call)
                if owner is not None and owner in facts.bindings:
                    facts.updates.setdefault(owner, []).append(call)
        self._close_contributions(facts)
        return facts

    def _may_update(self, call: cst.Call) -> bool:
        """Whether a call may change the object it is made on (``stopper(loss)``,
        ``meter.update(x)``): a statement of its own or a whole assigned value, not a
        read inside another expression (``sum(p.numel() for p in model.parameters())``
        in a log message) and not a query of a module's structure."""
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in _QUERY_METHODS:
            return False
        parent = self._index.parent.get(call)
        return isinstance(parent, (cst.Expr, cst.Assign, cst.AnnAssign, cst.AugAssign))

    def _bind(
        self, facts: _ScopeFacts, target: cst.CSTNode, value: cst.CSTNode, at: cst.CSTNode
    ) -> None:
        keys = list(bound_names(target))
        if (
            isinstance(target, cst.Attribute)
            and isinstance(target.value, cst.Name)
            and target.value.value == "self"
        ):
            keys.append(f"self.{target.attr.value}")
        for key in keys:
            if self._is_collective_result(value):
                facts.synced.setdefault(key, []).append(self._index.order[at])
            facts.bindings.setdefault(key, []).append((at, value))

    def _is_collective_result(self, value: cst.CSTNode) -> bool:
        return any(
            isinstance(node, cst.Call)
            and node in self._collectives
            and self._collectives[node].result_is_uniform
            for node in (value, *self._index.walk_within(value))
        )

    def _note_collective(self, facts: _ScopeFacts, call: cst.Call) -> None:
        collective = self._collectives.get(call)
        if collective is None:
            return
        if collective.op in IN_PLACE_SYNCED and call.args:
            key = _plain_key(call.args[0].value)
            if key is not None:
                facts.synced.setdefault(key, []).append(self._index.order[call])
        operand = self._contribution(call, collective)
        if operand is None:
            return
        principal = self._principal(operand)
        if principal is None:
            return
        key, sized = principal
        facts.contributed.setdefault(key, call)
        if collective.op not in _OBJECT_OPS and not sized:
            facts.shape_uniform.add(key)

    def _principal(self, expr: cst.BaseExpression) -> tuple[str, bool] | None:
        """The one value ``expr`` is a view or conversion of, and whether its size
        became the value on the way (``torch.tensor(len(x))``): ``x`` for ``x``,
        ``x.detach().float()``, ``x[0]``, ``torch.cat(x)``, ``self.x``. None for what
        combines values (``a + b``, a project function's result) or reads another
        object's attribute (``entry.values``: ``entry.flag`` is not the contribution)."""
        sized = False
        while True:
            key = _plain_key(expr)
            if key is not None:
                return key, sized
            if isinstance(expr, cst.Subscript):
                expr = expr.value
            elif isinstance(expr, (cst.List, cst.Tuple)) and len(expr.elements) == 1:
                expr = expr.elements[0].value  # ``torch.tensor([len(queue)])``
            elif isinstance(expr, cst.Call):
                positional = [a for a in expr.args if a.keyword is None and not a.star]
                if self._is_library_function(expr.func):
                    if not positional:
                        return None
                    sized = sized or _last_part(expr.func) in _SIZE_CONVERSIONS
                    expr = positional[0].value
                elif isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _VIEWS:
                    sized = sized or expr.func.attr.value in _SHAPE_METHODS
                    expr = expr.func.value
                else:
                    return None
            else:
                return None

    def _is_library_function(self, func: cst.BaseExpression) -> bool:
        """A conversion of its first argument: a builtin (``len``, ``float``) or a
        torch / numpy constructor from data (``torch.tensor``, ``torch.cat``), not one
        from a shape (``torch.empty(n)``) nor any other imported function."""
        if isinstance(func, cst.Name) and func.value in _CONVERSIONS:
            return True
        qualified = self._names.qualified_name(func) or ""
        module, _, name = qualified.rpartition(".")
        return module.split(".")[0] in ("torch", "numpy") and name in _DATA_CONSTRUCTORS

    @staticmethod
    def _contribution(call: cst.Call, collective: Collective) -> cst.BaseExpression | None:
        """The expression a rank contributes to a reducing or gathering collective."""
        if collective.syncs_logged_metric or collective.via:
            return None
        if collective.family in ("torch.distributed", "deepspeed"):
            position = _CONTRIBUTION_ARGUMENT.get(collective.op)
        else:
            position = 0 if collective.op in _FRAMEWORK_GATHERS else None
        if position is None:
            return None
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value in _CONTRIBUTION_KEYWORDS:
                return arg.value
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if position >= len(positional):
            return None
        return positional[position].value

    def _close_contributions(self, facts: _ScopeFacts) -> None:
        """The value a contribution converts is contributed too
        (``t = torch.tensor(len(self.queue))`` then ``all_reduce(t)``)."""
        pending = list(facts.contributed)
        while pending:
            key = pending.pop()
            origin = facts.contributed[key]
            for at, value in facts.bindings.get(key, ()):
                if self._index.order[at] > self._index.order[origin] or isinstance(
                    at, cst.AugAssign
                ):
                    continue  # ``x /= n`` scales the contribution: ``n`` is not it
                if not isinstance(value, cst.BaseExpression):
                    continue
                principal = self._principal(value)
                if principal is None or principal[0] in facts.contributed:
                    continue
                read, sized = principal
                facts.contributed[read] = origin
                if key in facts.shape_uniform and not sized:
                    facts.shape_uniform.add(read)
                pending.append(read)

    def _synced_before(self, facts: _ScopeFacts, key: str, position: int) -> bool:
        """A collective made ``key`` common after its last binding before ``position``."""
        order = self._index.order
        last_binding = max(
            (order[at] for at, _ in facts.bindings.get(key, ()) if order[at] < position),
            default=-1,
        )
        return any(last_binding <= p < position for p in facts.synced.get(key, ()))

    def _reaching(
        self, facts: _ScopeFacts, key: str, position: int
    ) -> Iterator[tuple[cst.CSTNode, cst.CSTNode]]:
        """The bindings of ``key`` that may reach ``position``: the last one made on
        every rank before it, and the rank-guarded ones after that (an earlier value was
        overwritten everywhere)."""
        order = self._index.order
        earlier = sorted(
            ((at, v) for at, v in facts.bindings.get(key, ()) if order[at] < position),
            key=lambda pair: order[pair[0]],
        )
        plain = [i for i, (at, _) in enumerate(earlier) if not self._rank_guarded(at)]
        yield from earlier[plain[-1] if plain else 0 :]

    # -- flags set on some ranks only -------------------------------------------------------

    def _decided_on_some_ranks(
        self, expr: cst.CSTNode, facts: _ScopeFacts, key: str, position: int
    ) -> cst.CSTNode | None:
        """The rank-guarded assignment (or call on the object: ``if rank == 0:
        stopper(val_loss)``) that last changed ``key`` before ``position``, when no later
        change on every rank overrides it; for ``self.x`` also one in another method of
        the class (the flag lives on the object)."""
        changes = [
            *facts.bindings.get(key, ()),
            *((call, call) for call in facts.updates.get(key, ())),
        ]
        earlier = [(at, v) for at, v in changes if self._index.order[at] < position]
        guarded = [at for at, _ in earlier if self._rank_guarded(at)]
        if guarded:
            last_guarded = max(guarded, key=self._index.order.__getitem__)
            later_plain = any(
                self._index.order[at] > self._index.order[last_guarded]
                and not self._rank_guarded(at)
                and not self._index.is_inside(at, _statement_parent(self._index, last_guarded))
                for at, _ in earlier
            )
            return None if later_plain else last_guarded
        if key.startswith("self.") and not earlier:
            function = self._index.enclosing_function(expr)
            owner = self._index.enclosing_class(function) if function is not None else None
            if owner is not None:
                return self._class_flags_of(owner).get(key)
        return None

    def _class_flags_of(self, owner: cst.ClassDef) -> dict[str, cst.CSTNode]:
        """``self.x`` attributes that some method sets under a rank guard and that no
        method makes common (by a collective)."""
        flags = self._class_flags.get(owner)
        if flags is not None:
            return flags
        flags = {}
        synced: set[str] = set()
        for function in self._index.walk_within(owner.body, into_functions=True):
            if not isinstance(function, cst.FunctionDef):
                continue
            facts = self._facts(function.body)
            synced.update(k for k in facts.synced if k.startswith("self."))
            for key, bindings in facts.bindings.items():
                if not key.startswith("self."):
                    continue
                for at, _ in bindings:
                    if self._rank_guarded(at):
                        flags.setdefault(key, at)
        for key in synced:
            flags.pop(key, None)
        self._class_flags[owner] = flags
        return flags


def _plain_key(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.Name):
        return expr.value
    if (
        isinstance(expr, cst.Attribute)
        and isinstance(expr.value, cst.Name)
        and expr.value.value == "self"
    ):
        return f"self.{expr.attr.value}"
    return None


def _statement_parent(index: ModuleIndex, node: cst.CSTNode) -> cst.CSTNode:
    """The block statement (``if``/``for``/...) that holds ``node``'s statement."""
    for ancestor in index.ancestors(node):
        if isinstance(ancestor, (cst.If, cst.For, cst.While, cst.With, cst.Try, cst.FunctionDef)):
            return ancestor
    return index.module


def _last_part(func: cst.BaseExpression) -> str:
    return (dotted_name(func) or "").rsplit(".", 1)[-1]


def _tests_truth(node: cst.CSTNode, parent: cst.CSTNode | None) -> bool:
    """``node`` is tested for truth: an ``if``/``while`` test, ``not node``, an operand
    of ``and``/``or``."""
    if isinstance(parent, (cst.If, cst.While, cst.IfExp)):
        return parent.test is node
    if isinstance(parent, cst.UnaryOperation):
        return isinstance(parent.operator, cst.Not)
    return isinstance(parent, cst.BooleanOperation)


def _called_object(call: cst.Call) -> str | None:
    """``x`` for ``x(...)`` and ``x.method(...)`` (not ``self``)."""
    func = call.func
    if isinstance(func, cst.Attribute):
        func = func.value
    if isinstance(func, cst.Name) and func.value != "self":
        return func.value
    return None
