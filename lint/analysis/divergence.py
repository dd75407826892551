"""Which values may differ between ranks: a forward dataflow over one function's graph.

Each name (and each ``self.attribute`` the function assigns) carries a *taint*: the
facets in which it may differ between ranks (its contents; its shape, length or keys;
the device it sits on) and the reason, with the line it came from. The analysis is
flow-sensitive: a name bound again is a new value, so an old loop variable's taint does
not stick to a new ``for step in range(...)``.

- Sources: the rank in its spellings (``dist.get_rank()``, ``RANK`` / ``LOCAL_RANK``
  from the environment, ``.rank`` / ``.local_rank`` / ``.is_main_process`` and the other
  attributes frameworks give it, the first parameter of a function handed to
  ``mp.spawn``, after ``self`` for a bound method), clocks and memory probes, what
  this rank hands to a reduction (its contents; the number of items it counts).
  File-system probes are not sources: a shared file system answers every rank alike
  (DDP218 is the opt-in rule for them).
  ``rank != -1`` asks whether the job was launched, which every rank answers alike
  (the rank as read: ``rank - 1 >= 0`` is a test on the rank). A clock written into
  text is a stamp (``Source.STAMP``): its text differs, whether it is set does not.
- Agreement: after ``all_reduce(t)`` / ``broadcast(t, src)`` / ``all_gather(out, t)`` /
  ``all_gather_object(out, obj)`` / ``broadcast_object_list(objs)`` the buffer holds the
  same on every rank (its work handle kept or not), and so does what is computed from
  it alone, and what the gathers of libraries over torch.distributed return
  (``accelerate.utils.gather``, composer's ``dist.all_gather_object``); a local
  function or method that runs such a collective on its own parameter makes the
  caller's argument agree (a ``*args`` parameter summarised as one more: a helper
  that broadcasts what it is handed and returns it agrees its result); a tensor
  filled in place from an agreed one (``t.copy_(agreed)``) agrees in its contents;
  a functional collective's result agrees
  unless it is this rank's share (``reduce_scatter``, ``all_to_all``, ``scatter``).
- Keys: a mapping's keys are its shape facet. ``k in d``, ``d.keys()``, ``for k in d``
  and ``sorted(d)`` read them; a model's output dict, or ``{name: v for name in
  names}``, has the same keys on every rank however its values differ. A mapping is
  known by its display or by how the function uses it (``d["key"]``, ``d.get(k)``,
  ``d.items()``, ``**d``); ``x in c`` on anything else reads what ``c`` holds.
- Items by fixed key: an item stored (``opt["rank"] = rank``, ``place[0] = rank``) or
  bound in a display (``{"rank": r, "world": w}``) under a constant key is kept apart
  as well as joined into its container; where every way the container differs is such
  an item, ``opt["world_size"]`` and ``opt.get("world_size", 1)`` read their own item
  only (agreement per key).
- Autograd state: ``x.requires_grad``, ``x.is_leaf`` are alike on every rank.
- Library summaries: placement carries no contents (``.to(device)``, ``.cuda()``,
  ``torch.device(...)``); ``len(x)`` and ``x.shape`` carry only ``x``'s shape facet; a
  call's keyword arguments carry nothing into its result (``tqdm(disable=rank != 0)``,
  ``torch.load(path, map_location=f"cuda:{rank}")``, ``pick(n, device=device)``): an
  unknown call's result carries its positional arguments (and its receiver's) taint,
  and a mapping unpacked into it (``model(**batch)``: an argument list, not one
  option); a local function's only that of the parameters that reach its returns, and
  where its result is unpacked from a tuple it returns (``start, model = resume(rank,
  path)``), each name only what its own item reads, solved for the call's arguments.
- Shares: ``pieces[rank::n]`` of pieces padded to a multiple of ``n`` is as long on
  every rank (``shares``): other items, the same length.
- Turns: a loop's index (``enumerate``) and a range's number count its turns, the same
  on every rank in the same turn unless the range's start or step differs; how many
  turns each rank takes is the loop's own test, and what the loop binds differs after it
  where that test does (decided at its exit).
- Decided: a name bound under a divergent test differs after the test's branches meet.
- Unknown is uniform: nothing is reported from a value nobody can see.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum, Flag, auto

from ddplint.analysis.api import (
    AGREEING_LIBRARY_FUNCTIONS,
    ITEMS_PRESERVING,
    PER_RANK_RESULTS,
    RANK_ATTRIBUTES,
    RANK_FUNCTION_NAMES,
)
from ddplint.analysis.batches import BatchSeeds, same_items
from ddplint.analysis.children import child_nodes, walk
from ddplint.analysis.control_flow import (
    EdgeKind,
    Graph,
    Node,
    NodeKind,
    own_nodes,
    single_bindings,
)
from ddplint.analysis.dominance import PostDominance
from ddplint.analysis.names import Names, bound_names, call_argument, dotted_name
from ddplint.analysis.project import NO_PROJECT, CallSummary, ProjectFacts
from ddplint.analysis.shares import CHUNKERS, even_strides
from ddplint.analysis.single_process import (
    asks_several,
    launch_answer,
    literal_or_none,
    reads_launcher_rank,
    reads_rank_variable,
    reads_world_size,
)
from ddplint.analysis.spans import span_length_reads


class Facet(Flag):
    CONTENTS = auto()
    SHAPE = auto()
    DEVICE = auto()
    DTYPE = auto()
    #: Which value a name holds at all (``None`` on some ranks, an object on others):
    #: a name chosen between the arms of a rank-dependent test. A call's result is the
    #: call's own object, so it does not inherit this from its arguments.
    PRESENCE = auto()


VALUES = Facet.CONTENTS | Facet.SHAPE
#: The facets a decision can read: a dtype alone decides nothing (fp16 and fp32 sums
#: agree to the decision), it matters only where a collective pairs buffers.
DECIDING = Facet.CONTENTS | Facet.SHAPE | Facet.DEVICE


class Source(str, Enum):
    RANK = "the rank"
    PROBE = "a local probe (clock, memory)"
    STAMP = "a clock reading written into text (a time-stamped name)"
    DECIDED = "a value set under a rank-dependent test"
    CONTRIBUTED = "this rank's own share of a collective"
    OUTPUT = "this rank's model output"
    RAISED = "an exception raised on this rank's values"
    #: Only in a batch view (``ModuleAnalysis.batch_view``): this rank's own data.
    BATCH = "this rank's batch or loss"
    #: Only in a probe view (``ModuleAnalysis.probe_view``): a file-system check of a
    #: path the run writes, made by each rank at its own moment.
    FILE = "a file-system check made by each rank at its own moment"


@dataclass(frozen=True)
class Taint:
    """How a value may differ between ranks, and why (the first reason found)."""

    facets: Facet
    source: Source
    line: int
    spelled: str

    def joined(self, other: Taint | None) -> Taint:
        """The least taint above both: the union of the facets, and the reason that
        comes first in a fixed order (so the join is commutative and a fixed point is
        reached: a reason chosen by which side came first could flip for ever)."""
        if other is None or other == self:
            return self
        first = min(self, other, key=_reason_order)
        facets = self.facets | other.facets
        if facets == first.facets:
            return first
        return Taint(facets, first.source, first.line, first.spelled)

    def only(self, facets: Facet) -> Taint | None:
        kept = self.facets & facets
        if not kept:
            return None
        return Taint(kept, self.source, self.line, self.spelled)

    def as_contents(self, facets: Facet) -> Taint | None:
        """The taint of a value computed from this one's ``facets`` (its length, its
        device): that value's contents differ where those facets do."""
        if not self.facets & facets:
            return None
        return Taint(Facet.CONTENTS, self.source, self.line, self.spelled)


State = dict[str, Taint]


#: A local function's name (``f``, ``self.f``) and the class the call is made in ->
#: its summary (None: not known).
CallSummaries = Callable[[str, str | None], CallSummary | None]
#: A local function's name, the class the call is made in, the taints of the call's
#: positional and keyword arguments, and a tuple's length -> the taint of each item of
#: the tuple it returns (None: not known, or it returns no tuple of that length).
ReturnedParts = Callable[
    [str, str | None, tuple[Taint | None, ...], tuple[tuple[str, Taint | None], ...], int],
    tuple[Taint | None, ...] | None,
]


#: How many flags (``multi = world > 1``; ``if multi:``) a one-process test is followed
#: through in a function.
_FOLLOWED_FLAGS = 2
#: Past this many parameters a function is not summarised (one analysis per parameter).
RESULT_PARAMETERS = 8


def summarise_call(
    definition: ast.FunctionDef | ast.AsyncFunctionDef,
    positional: list[str],
    solved: Callable[[State], Divergence],
) -> CallSummary | None:
    """What a call of ``definition`` does with its arguments (``CallSummary``), from
    its divergence ``solved`` with each parameter in turn made to differ: those whose
    values may reach its result (every one where its result reads a source of its
    own), and those it makes agree in place (never bound again, agreed at its exit).
    ``positional``: its positional parameters, ``self`` left out for a method. A
    ``*args`` parameter is summarised as one more, spelled ``*args``: it takes the
    arguments past the others (``broadcast_if_needed(*args)`` returns them agreed)."""
    rest = definition.args.vararg
    starred = [f"*{rest.arg}"] if rest is not None else []
    every = positional + starred + [a.arg for a in definition.args.kwonlyargs]
    if len(every) > RESULT_PARAMETERS:
        return None
    own = solved({}).returned() is not None
    reaching: set[str] = set()
    agreeing: set[str] = set()
    bound = _bound_names(definition)
    for parameter in every:
        name = parameter.lstrip("*")
        given = {name: Taint(Facet.CONTENTS, Source.RANK, definition.lineno, name)}
        divergence = solved(given)
        if divergence.returned() is not None:
            reaching.add(parameter)
        after = divergence.at_exit()
        if name not in bound and after is not None and name not in after:
            agreeing.add(parameter)
    parameters = tuple(positional + starred)
    return CallSummary(parameters, None if own else frozenset(reaching), frozenset(agreeing))


def _bound_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The names a function's own code binds (its parameters bound again included)."""
    found: set[str] = set()
    for node in walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            found.add(node.id)
    return found


def _reason_order(taint: Taint) -> tuple[bool, int, str, str]:
    # A stamp comes last: a value that also reads the rank differs in its truth too.
    return taint.source is Source.STAMP, taint.line, taint.source.value, taint.spelled


#: Calls whose result reads a local clock or memory probe.
PROBE_CALLS = frozenset(
    {
        "time.time",
        "time.perf_counter",
        "time.monotonic",
        "time.process_time",
        "time.time_ns",
        "datetime.datetime.now",
        "torch.cuda.memory_allocated",
        "torch.cuda.memory_reserved",
        "torch.cuda.max_memory_allocated",
        "torch.cuda.mem_get_info",
        "psutil.virtual_memory",
    }
)
#: Calls every rank answers alike.
UNIFORM_CALLS = frozenset(
    {
        "torch.distributed.get_world_size",
        "torch.distributed.is_initialized",
        "torch.distributed.is_available",
        "torch.distributed.get_backend",
        "torch.cuda.device_count",
        "torch.cuda.is_available",
    }
)
#: Methods that move or view a value without changing its contents.
PLACEMENT_METHODS = frozenset({"to", "cuda", "cpu", "pin_memory", "detach", "contiguous"})
#: Attributes that ask whether autograd tracks a tensor, or how it is laid out: the code
#: path and the model decide them, the same on every rank whatever the data.
AUTOGRAD_STATE = frozenset({"requires_grad", "is_leaf", "is_sparse"})
#: Methods and attributes that read a value's shape.
SHAPE_READERS = frozenset({"size", "numel", "dim", "shape", "ndim", "__len__"})
#: Tensor factories whose positional arguments (or ``size=``) give the result's shape:
#: a size that differs between ranks makes a tensor of another shape (and contents).
SIZED_FACTORIES = frozenset(
    {"torch.zeros", "torch.ones", "torch.empty", "torch.rand", "torch.randn", "torch.eye"}
)
#: Factories that fill a shape (first argument) with a value (second).
FILLED_FACTORIES = frozenset({"torch.full"})
#: Factories whose arguments are the bounds of a range: its length and its items.
RANGE_FACTORIES = frozenset({"torch.arange", "torch.linspace", "torch.logspace"})
#: Factories of a tensor from data: the data's facets carry over.
DATA_FACTORIES = frozenset(
    {"torch.tensor", "torch.as_tensor", "torch.from_numpy", "torch.asarray", "numpy.array"}
)
#: Factories shaped like another tensor (its shape, dtype and device carry over).
LIKE_FACTORIES = frozenset(
    {
        "torch.zeros_like",
        "torch.ones_like",
        "torch.empty_like",
        "torch.rand_like",
        "torch.randn_like",
        "torch.full_like",
    }
)
#: The legacy typed constructors: sizes as positional ints (``torch.LongTensor(1)``), or
#: one sequence of data (``torch.LongTensor([n])``).
_TYPES = ("Float", "Double", "Half", "BFloat16", "Byte", "Char", "Short", "Int", "Long", "Bool")
TYPED_CONSTRUCTORS = frozenset(
    {"torch.Tensor"}
    | {f"torch.{kind}Tensor" for kind in _TYPES}
    | {f"torch.cuda.{kind}Tensor" for kind in _TYPES}
)
FACTORIES = (
    SIZED_FACTORIES
    | FILLED_FACTORIES
    | RANGE_FACTORIES
    | DATA_FACTORIES
    | LIKE_FACTORIES
    | TYPED_CONSTRUCTORS
)
#: Functions that join tensors along a dimension.
CONCATENATIONS = frozenset({"torch.cat", "torch.concat", "torch.concatenate"})
#: Tensor methods that make a new tensor of the shape their arguments give.
SIZED_METHODS = frozenset({"new_zeros", "new_ones", "new_empty", "new_full"})
#: Tensor methods that convert to a dtype their name gives.
DTYPE_METHODS = frozenset({"half", "float", "double", "bfloat16", "int", "long", "bool"})
#: torch's dtypes, by resolved name (a ``.to()`` argument that spells one converts).
TORCH_DTYPES = frozenset(
    f"torch.{name}"
    for name in (
        "float16",
        "half",
        "float32",
        "float",
        "float64",
        "double",
        "bfloat16",
        "int8",
        "int16",
        "int32",
        "int",
        "int64",
        "long",
        "uint8",
        "bool",
        "complex64",
    )
)
#: In-place collectives: argument position (and keyword) of the buffer that agrees after.
AGREEING_BUFFERS: dict[str, tuple[int, str]] = {
    "all_reduce": (0, "tensor"),
    "broadcast": (0, "tensor"),
    "all_gather": (0, "tensor_list"),
    "all_gather_into_tensor": (0, "output_tensor"),
    "all_gather_object": (0, "object_list"),
    "broadcast_object_list": (0, "object_list"),
}
#: Reducing and gathering collectives: position of the input each rank contributes, and
#: whether its shape may differ too (objects) or must agree (tensors).
CONTRIBUTIONS: dict[str, tuple[int, Facet]] = {
    "all_reduce": (0, Facet.CONTENTS),
    "reduce": (0, Facet.CONTENTS),
    "all_gather": (1, Facet.CONTENTS),
    "all_gather_into_tensor": (1, Facet.CONTENTS),
    "reduce_scatter_tensor": (1, Facet.CONTENTS),
    "gather": (0, Facet.CONTENTS),
    "all_gather_object": (1, VALUES),
    "gather_object": (0, VALUES),
}
#: Calls that make a mapping (its keys are its shape facet).
MAPPING_FACTORIES = frozenset({"dict", "collections.OrderedDict", "collections.defaultdict"})
#: Builtins whose result is one number or truth computed from their arguments.
SCALAR_BUILTINS = frozenset(
    {"sum", "max", "min", "any", "all", "int", "float", "bool", "round", "abs"}
)
#: Builtins that, given a mapping, hold or yield its keys.
KEY_LISTERS = frozenset({"list", "sorted", "set", "tuple", "frozenset", "iter"})
#: Methods whose use shows their receiver is a mapping (``d.get(k)``, ``d.items()``).
MAPPING_METHODS = frozenset({"get", "setdefault", "keys", "items", "values"})
#: Methods of a framework object (accelerate, Lightning, Fabric) whose result agrees.
AGREEING_METHODS = frozenset(
    {"gather", "gather_for_metrics", "reduce", "all_gather", "broadcast", "all_reduce"}
)
#: A Lightning strategy's methods whose result is the same on every rank
#: (``trainer.strategy.reduce_boolean_decision(stop)``).
STRATEGY_AGREEING = frozenset({"reduce_boolean_decision", "reduce", "broadcast"})
_DISTRIBUTED = ("torch.distributed.", "deepspeed.comm.")
_SPAWNERS = frozenset({"torch.multiprocessing.spawn", "torch.multiprocessing.start_processes"})


def distributed_function(resolved: str | None) -> str | None:
    """``all_reduce`` for ``torch.distributed.all_reduce`` (and ``deepspeed.comm``)."""
    if resolved is None:
        return None
    for prefix in _DISTRIBUTED:
        if resolved.startswith(prefix):
            return resolved[len(prefix) :].rsplit(".", 1)[-1]
    return None


def spawned_functions(calls: list[ast.Call], names: Names) -> frozenset[str]:
    """Names of functions handed to ``mp.spawn`` by ``calls``: their first parameter is
    the rank."""
    found = set()
    for call in calls:
        if names.resolve(call.func) in _SPAWNERS and call.args:
            target = dotted_name(call.args[0])
            if target is not None:
                found.add(target.rsplit(".", 1)[-1])
    return frozenset(found)


class _Evaluator:
    """The taint of an expression under a state."""

    def __init__(
        self,
        names: Names,
        agreeing_receivers: frozenset[str],
        project: ProjectFacts = NO_PROJECT,
        owner: str | None = None,
        torch_modules: frozenset[str] = frozenset(),
        results: CallSummaries | None = None,
        mappings: frozenset[str] = frozenset(),
        ragged: frozenset[str] = frozenset(),
        even_strides: dict[str, frozenset[str]] | None = None,
        single: dict[str, ast.expr] | None = None,
        parameters: frozenset[str] | set[str] = frozenset(),
        sequences: frozenset[str] = frozenset(),
        drawn: frozenset[int] = frozenset(),
        parts: ReturnedParts | None = None,
    ) -> None:
        #: ``next(it)`` calls (by id) that draw this rank's batch (a batch view).
        self.drawn = drawn
        self.parts = parts
        self.parameters = parameters
        self.sequences = sequences
        self.names = names
        self.even_strides = even_strides or {}
        self.single = single or {}
        self.agreeing_receivers = agreeing_receivers
        self.project = project
        self.owner = owner
        self.torch_modules = torch_modules
        self.results = results
        self.mappings = mappings
        self.ragged = ragged
        #: Calls whose answer differs between ranks only in a probe view (file checks).
        self.probes: Callable[[ast.Call], bool] | None = None

    def taint(self, expression: ast.AST | None, state: State) -> Taint | None:
        if expression is None:
            return None
        if isinstance(expression, ast.Constant):
            return None
        if isinstance(expression, ast.Name):
            return state.get(expression.id)
        if isinstance(expression, ast.Attribute):
            return self._attribute(expression, state)
        if isinstance(expression, ast.Call):
            return self._call(expression, state)
        if isinstance(expression, ast.Subscript):
            if self._environment_rank(expression):
                return _rank(expression)
            item = _item_by_key(expression, state)
            if item is not _NOT_KEYED:
                return item
            base = self.taint(expression.value, state)
            index = self.taint(expression.slice, state)
            if (
                index is not None
                and isinstance(expression.slice, ast.Slice)
                and not self._fixed_width(expression.slice, state)
                and not self._even_share(expression.value, expression.slice, state)
            ):
                index = Taint(VALUES, index.source, index.line, index.spelled)
            elif index is not None and dotted_name(expression.value) in self.ragged:
                index = Taint(VALUES, index.source, index.line, index.spelled)  # its length
            return _join(base.only(VALUES) if base else None, index)
        if isinstance(expression, _SCOPES):
            return self._comprehension(expression, state)
        if isinstance(expression, ast.Dict):
            return self._dictionary(expression, state)
        if isinstance(expression, ast.Compare) and _membership_test(expression):
            return self._membership(expression, state)
        if isinstance(expression, ast.Compare) and _presence_test(expression):
            # Whether a value is there: its shape, or which arm of a rank test chose it
            # (``writer = None`` on the other ranks).
            if _keyed_only(expression.left, state):
                return None  # items stored into it make it no more or less ``None``
            operand = self.taint(expression.left, state)
            return operand.as_contents(Facet.SHAPE | Facet.PRESENCE) if operand else None
        if (
            isinstance(expression, ast.Compare)
            and _launch_check(expression)
            and self._launcher_rank(expression.left, state)
        ):
            return None
        if isinstance(expression, ast.Compare) and (measured := _positive_test(expression)):
            # Whether a clock or probe was read at all (``if self.started > 0``): every
            # rank's reading is positive once taken, so every rank answers alike.
            operand = self.taint(measured, state)
            return None if operand is not None and operand.source is Source.PROBE else operand
        if isinstance(expression, ast.Lambda):
            return None
        if isinstance(expression, ast.IfExp):
            return self._chosen(expression, state)
        if isinstance(expression, ast.JoinedStr):
            return _stamped(_join(None, *(self.taint(v, state) for v in expression.values)))
        if (repeated := _repetition(expression)) is not None:
            # ``[t] * n``: the count decides the list's length (as a factory's size).
            sequence, count = repeated
            return _join(self.taint(sequence, state), _made_in_size(self.taint(count, state)))
        found: Taint | None = None
        for child in child_nodes(expression):
            if isinstance(child, ast.expr):
                found = _join(found, self.taint(child, state))
        return found

    def _chosen(self, expression: ast.IfExp, state: State) -> Taint | None:
        """``a if test else b``: what either arm carries, and where the test differs
        between ranks, its contents; its shape or dtype too where the arms make
        tensors of other literal sizes or dtypes (``torch.ones(4).half() if rank == 0
        else torch.ones(4)``)."""
        found = _join(self.taint(expression.body, state), self.taint(expression.orelse, state))
        test = self.taint(expression.test, state)
        if test is None or same_items(expression.body, expression.orelse, self.names.resolve):
            return found
        calls = [arm for arm in (expression.body, expression.orelse) if isinstance(arm, ast.Call)]
        facets = Facet(0)
        if len(calls) == 2:
            facets = _made_apart_between([_literal_make(call, self.names) for call in calls])
        chosen = Taint(test.facets | facets | Facet.PRESENCE, test.source, test.line, test.spelled)
        return _join(chosen, found)

    def _fixed_width(self, window: ast.Slice, state: State) -> bool:
        """A slice whose length is the same on every rank however its bounds differ:
        ``x[start : start + k]`` and ``x[r * k : (r + 1) * k]`` with ``k`` the same on
        every rank (and no step)."""
        lower, upper = window.lower, window.upper
        if lower is None or upper is None or window.step is not None:
            return False
        if isinstance(upper, ast.BinOp) and isinstance(upper.op, ast.Add):
            for first, second in ((upper.left, upper.right), (upper.right, upper.left)):
                if ast.dump(first) == ast.dump(lower) and self.taint(second, state) is None:
                    return True
        if not (
            isinstance(lower, ast.BinOp)
            and isinstance(upper, ast.BinOp)
            and isinstance(lower.op, ast.Mult)
            and isinstance(upper.op, ast.Mult)
            and ast.dump(lower.right) == ast.dump(upper.right)
            and self.taint(lower.right, state) is None
        ):
            return False
        step = upper.left
        return (
            isinstance(step, ast.BinOp)
            and isinstance(step.op, ast.Add)
            and ast.dump(step.left) == ast.dump(lower.left)
            and isinstance(step.right, ast.Constant)
            and step.right.value == 1
        )

    def truth(self, expression: ast.expr, state: State) -> Taint | None:
        """How whether ``expression`` holds may differ between ranks: as its value,
        except that a time-stamped text tested for itself is non-empty on every rank
        (``if args.save and step:`` with a minute stamp in ``args.save``)."""
        if isinstance(expression, ast.BoolOp):
            return _join(None, *(self.truth(v, state) for v in expression.values))
        if isinstance(expression, ast.UnaryOp) and isinstance(expression.op, ast.Not):
            return self.truth(expression.operand, state)
        found = self.taint(expression, state)
        if (
            found is not None
            and found.source is Source.STAMP
            and isinstance(expression, _TEXT_HOLDERS)
        ):
            return None
        return found

    def _launcher_rank(self, operand: ast.expr, state: State) -> bool:
        """Whether ``operand`` is the rank a launcher hands in (``args.local_rank``,
        ``LOCAL_RANK``, ``dist.get_rank()``) as read, not a value computed from it: a
        launched job has no rank -1, so ``local_rank != -1`` is alike on every rank,
        where ``loss_index >= 0`` on this rank's values is not."""
        taint = self.taint(operand, state)
        return taint is None or (taint.source is Source.RANK and self._read_rank(operand, 0))

    def _read_rank(self, operand: ast.expr, depth: int) -> bool:
        """Whether ``operand`` spells the rank as read (``int()`` of it, a name bound
        once to it, a parameter the rank is handed in), not arithmetic on it."""
        if depth > 8:
            return False
        if isinstance(operand, ast.Call) and self.names.resolve(operand.func) == "int":
            return len(operand.args) == 1 and self._read_rank(operand.args[0], depth + 1)
        if isinstance(operand, ast.Name):
            bound = self.single.get(operand.id)
            if bound is not None:
                return self._read_rank(bound, depth + 1)
            return operand.id in self.parameters
        if isinstance(operand, ast.Attribute):
            return operand.attr in RANK_ATTRIBUTES or self.project.holds_rank_test(
                dotted_name(operand) or "", self.owner
            )
        if isinstance(operand, (ast.Call, ast.Subscript)):
            return self._environment_rank(operand) or (
                isinstance(operand, ast.Call)
                and (self.names.resolve(operand.func) or "").rsplit(".", 1)[-1]
                in RANK_FUNCTION_NAMES
            )
        return False

    def _even_share(self, sequence: ast.expr, window: ast.Slice, state: State) -> bool:
        """``pieces[rank::n]`` of pieces padded to a multiple of ``n`` (``shares``):
        every rank's share is equally long, whichever items it holds."""
        spelled = dotted_name(sequence)
        strides = self.even_strides.get(spelled) if spelled is not None else None
        return (
            strides is not None
            and window.step is not None
            and window.upper is None
            and self.taint(window.step, state) is None
            and ast.dump(window.step) in strides
        )

    def _comprehension(self, expression: ast.expr, state: State) -> Taint | None:
        """Elements carry what they read; the length differs where an iterable's length
        or a filter does."""
        assert isinstance(expression, _SCOPES)
        found: Taint | None = None
        for generator in expression.generators:
            found = _join(found, self._walked(generator.iter, state))
            # The comprehension's own names hide the function's: items of the iterable.
            for part, item in self.iterated(generator.target, generator.iter, state):
                state = _bound(state, part, item.only(Facet.CONTENTS) if item else None)
            for condition in generator.ifs:
                kept = self.taint(condition, state)
                found = _join(
                    found, Taint(VALUES, kept.source, kept.line, kept.spelled) if kept else None
                )
        if isinstance(expression, ast.DictComp):
            # Keys that differ make a mapping of other keys; values, other contents.
            return _join(
                found,
                _as_values(self.taint(expression.key, state)),
                _contents(self.taint(expression.value, state)),
            )
        return _join(found, _contents(self.taint(expression.elt, state)))

    def _walked(self, iterable: ast.expr, state: State) -> Taint | None:
        """What a comprehension takes from the iterable it walks: ``range(n)`` makes as
        many items as ``n`` says, as ``[v] * n`` does (``_made_in_size``)."""
        if (
            isinstance(iterable, ast.Call)
            and self.names.resolve(iterable.func) == "range"
            and len(iterable.args) == 1
            and not iterable.keywords
            and not isinstance(iterable.args[0], ast.Starred)
        ):
            return _made_in_size(self.taint(iterable.args[0], state))
        return self.taint(iterable, state)

    def _dictionary(self, expression: ast.Dict, state: State) -> Taint | None:
        """A mapping literal: its keys (its shape) differ where a key does, what it
        holds where a value does; ``**other`` brings the other mapping's taint."""
        found: Taint | None = None
        for key, value in zip(expression.keys, expression.values, strict=True):
            keyed = None if key is None else _as_values(self.taint(key, state))
            found = _join(found, self.taint(value, state), keyed)
        return found

    def _membership(self, expression: ast.Compare, state: State) -> Taint | None:
        """``x in c``: what ``x`` holds, and of ``c`` its keys where ``c`` is a mapping
        (its shape facet: a model's output dict has the same keys on every rank however
        its numbers differ), its members (contents and length) otherwise."""
        found = self.taint(expression.left, state)
        for op, right in zip(expression.ops, expression.comparators, strict=True):
            if isinstance(op, (ast.In, ast.NotIn)):
                if isinstance(expression.left, ast.Constant):
                    looked_up = ast.Subscript(value=right, slice=expression.left, ctx=ast.Load())
                    item = _item_by_key(looked_up, state)
                    if item is not _NOT_KEYED:
                        # ``"step" in ckpt`` where ``ckpt`` differs only in items stored
                        # under fixed keys: whether that key is there is that item's.
                        found = _join(found, item)
                        continue
                container = self.taint(right, state)
                if (
                    container is not None
                    and container.source is Source.BATCH
                    and isinstance(expression.left, ast.Constant)
                ):
                    # ``"labels" in batch``: the batch's keys are the collate function's.
                    continue
                read = Facet.SHAPE if self.is_mapping(right) else VALUES
                found = _join(found, container.as_contents(read) if container else None)
            else:
                found = _join(found, self.taint(right, state))
        return found

    def is_mapping(self, expression: ast.expr) -> bool:
        """Whether ``expression`` is a mapping: a dict display or comprehension, a
        ``dict`` made by a call, or a name the function uses as one (``d["key"]``,
        ``d.get(k)``, ``d.items()``, ``**d``; see ``_mapping_names``)."""
        if isinstance(expression, (ast.Dict, ast.DictComp)):
            return True
        if isinstance(expression, ast.Call):
            return self.names.resolve(expression.func) in MAPPING_FACTORIES
        spelled = dotted_name(expression)
        return spelled is not None and spelled in self.mappings

    def iterated(
        self, target: ast.AST, iterable: ast.expr, state: State
    ) -> list[tuple[ast.AST, Taint | None]]:
        """(target part, taint) for what a loop over ``iterable`` binds: a mapping
        yields its keys (they differ where its shape does); ``d.items()`` yields its
        keys and its values; ``zip(a, b)`` each part from its own iterable;
        ``enumerate(x)`` an index and ``x``'s items; ``range(...)`` numbers; a progress
        bar (``tqdm(x, disable=rank != 0)``) ``x``'s items. An index or
        a range's number counts the loop's turns: in the same turn it is the same on
        every rank unless the range's start or step differs (how many turns each rank
        takes is the loop's own test, and after the loop the last number differs where
        that does: decided at the loop's exit). Anything else yields items carrying its
        taint. A name bound once to such a call, or a choice between arms that yield
        the same items, is iterated as that call."""
        if (
            isinstance(iterable, ast.Call)
            and self.names.resolve(iterable.func) in ITEMS_PRESERVING
            and iterable.args
            and not isinstance(iterable.args[0], ast.Starred)
        ):
            # A progress bar yields its iterable's items; its options (``disable=rank
            # != 0``, ``desc=``) display, they choose no item.
            return self.iterated(target, iterable.args[0], state)
        if isinstance(iterable, ast.IfExp) and same_items(
            iterable.body, iterable.orelse, self.names.resolve
        ):
            return self.iterated(target, iterable.body, state)
        if isinstance(iterable, ast.Name) and self._walk_maker(self.single.get(iterable.id)):
            # ``it = enumerate(loader)`` bound once, then ``for i, batch in it``: the
            # turn's index and the items, as if the loop named the call.
            return self.iterated(target, self.single[iterable.id], state)
        parts = _unstarred_parts(target)
        if isinstance(iterable, ast.Call) and parts is not None and not iterable.keywords:
            function = self.names.resolve(iterable.func)
            given = iterable.args
            if not any(isinstance(a, ast.Starred) for a in given):
                if function == "zip" and len(given) == len(parts):
                    return [
                        found
                        for part, inner in zip(parts, given, strict=True)
                        for found in self.iterated(part, inner, state)
                    ]
                if function == "enumerate" and len(given) == 1 and len(parts) == 2:
                    # The index counts the loop's turns: the same on every rank in the
                    # same turn; how many turns there are is the loop's own question.
                    return [(parts[0], None), *self.iterated(parts[1], given[0], state)]
        if (
            isinstance(iterable, ast.Call)
            and isinstance(iterable.func, ast.Attribute)
            and iterable.func.attr == "items"
            and not iterable.args
            and isinstance(target, (ast.Tuple, ast.List))
            and len(target.elts) == 2
            and not any(isinstance(e, ast.Starred) for e in target.elts)
        ):
            mapping = self.taint(iterable.func.value, state)
            key, value = target.elts
            return [(key, _keys(mapping)), (value, mapping)]
        taint = self.taint(iterable, state)
        if self.is_mapping(iterable):
            return [(target, _keys(taint))]
        if (
            isinstance(iterable, ast.Call)
            and self.names.resolve(iterable.func) == "range"
            and not iterable.keywords
            and not any(isinstance(a, ast.Starred) for a in iterable.args)
        ):
            # The turn's number: its start and step, not its stop (which decides how many
            # turns, the loop's own question); a number, so no shape.
            counted = iterable.args[:1] + iterable.args[2:] if len(iterable.args) > 1 else []
            return [(target, _contents(_join(None, *(self.taint(a, state) for a in counted))))]
        return [(target, taint)]

    def _walk_maker(self, value: ast.expr | None) -> bool:
        """Whether ``value`` makes a walk whose parts a loop tells apart: ``enumerate``,
        ``zip``, a progress bar, or a choice between arms that walk the same."""
        if isinstance(value, ast.IfExp):
            return same_items(value.body, value.orelse, self.names.resolve)
        return isinstance(value, ast.Call) and (
            self.names.resolve(value.func) in ("enumerate", "zip", *ITEMS_PRESERVING)
        )

    def _attribute(self, expression: ast.Attribute, state: State) -> Taint | None:
        spelled = dotted_name(expression)
        if spelled is not None and spelled in state:
            return state[spelled]
        if expression.attr in RANK_ATTRIBUTES:
            return _rank(expression)
        if spelled is not None and self.project.holds_rank_test(spelled, self.owner):
            return _rank(expression)
        if expression.attr in AUTOGRAD_STATE:
            return None
        base = self.taint(expression.value, state)
        if base is None:
            return None
        if expression.attr in SHAPE_READERS:
            return base.as_contents(Facet.SHAPE)
        if expression.attr == "device":
            return base.as_contents(Facet.DEVICE)
        if expression.attr == "dtype":
            return base.as_contents(Facet.DTYPE)
        return base

    def _factory(self, call: ast.Call, resolved: str, state: State) -> Taint | None:
        """A tensor factory's result: its shape from the
        size it is given, its contents from its data or fill value, its dtype from
        ``dtype=``; the device it is put on is placement."""
        dtype = self._dtype(_keyword_value(call, "dtype"), state)
        if resolved in SIZED_FACTORIES:
            return _join(self._sized(call.args, call, state), dtype)
        if resolved in FILLED_FACTORIES:
            fill = call_argument(call, 1, "fill_value")
            return _join(self._sized(call.args[:1], call, state), self.taint(fill, state), dtype)
        if resolved in RANGE_FACTORIES:
            bounds = _join(None, *(self.taint(a, state) for a in call.args))
            bounds = bounds.only(DECIDING) if bounds else None
            return (
                _join(Taint(VALUES, bounds.source, bounds.line, bounds.spelled), dtype)
                if bounds
                else dtype
            )
        if resolved in DATA_FACTORIES:
            data = self.taint(call_argument(call, 0, "data"), state)
            return _join(data.only(VALUES | Facet.DTYPE) if data else None, dtype)
        if resolved in TYPED_CONSTRUCTORS:
            if len(call.args) == 1 and self._is_sequence(call.args[0]):
                data = self.taint(call.args[0], state)
                return data.only(VALUES) if data else None
            return self._sized(call.args, call, state)
        if resolved in LIKE_FACTORIES:
            like = self.taint(call_argument(call, 0, "input"), state)
            filled = self.taint(call_argument(call, 1, "fill_value"), state)
            kept = like.only(Facet.SHAPE | Facet.DTYPE | Facet.DEVICE) if like else None
            return _join(kept, filled.only(Facet.CONTENTS) if filled else None, dtype)
        return None

    def _sized(self, sizes: list[ast.expr], call: ast.Call, state: State) -> Taint | None:
        """The taint of a tensor made in the shape ``sizes`` (or ``size=``) give: a size
        that differs between ranks makes another shape, and other contents. A size
        known only to be chosen per rank (decided) or counted from this rank's share of
        a collective makes other contents alone: a count shared with the peers is
        shared to pad to the largest (``torch.empty(max_size - local_size)``), and a
        value decided per arm may be the same number on each (the arms that make
        tensors of other literal sizes are seen where they meet)."""
        given = [*sizes, *(k.value for k in call.keywords if k.arg == "size")]
        found = _join(None, *(self.taint(a, state) for a in given))
        return _made_in_size(found.only(DECIDING) if found else None)

    def dtype_given(self, call: ast.Call, method: str) -> ast.expr | None:
        """The dtype a ``.to()`` / ``.type()`` call converts to, if it spells one."""
        for keyword in call.keywords:
            if keyword.arg == "dtype":
                return keyword.value
        for argument in call.args:
            if method == "type" or self._spells_dtype(argument):
                return argument
        return None

    def _spells_dtype(self, expression: ast.expr) -> bool:
        return any(
            (isinstance(n, ast.Attribute) and n.attr == "dtype")
            or self.names.resolve(n) in TORCH_DTYPES
            for n in walk(expression)
            if isinstance(n, (ast.Attribute, ast.Name))
        )

    def _dtype(self, given: ast.expr | None, state: State) -> Taint | None:
        """The dtype facet of a tensor made with the dtype ``given``."""
        found = self.taint(given, state)
        if found is None or not found.facets & Facet.CONTENTS:
            return None
        return Taint(Facet.DTYPE, found.source, found.line, found.spelled)

    def _call(self, call: ast.Call, state: State) -> Taint | None:
        if id(call) in self.drawn:
            return Taint(VALUES, Source.BATCH, call.lineno, ast.unparse(call))
        resolved = self.names.resolve(call.func)
        if resolved in PROBE_CALLS:
            return Taint(Facet.CONTENTS, Source.PROBE, call.lineno, ast.unparse(call))
        if self.probes is not None and self.probes(call):
            return Taint(Facet.CONTENTS, Source.FILE, call.lineno, ast.unparse(call))
        if resolved in UNIFORM_CALLS:
            return None
        looked_up = _lookup_by_key(call)
        if looked_up is not None:
            item = _item_by_key(looked_up, state)
            if item is not _NOT_KEYED:
                defaults = call.args[1:] + [k.value for k in call.keywords]
                return _join(item, *(self.taint(d, state) for d in defaults))
        name = (resolved or "").rsplit(".", 1)[-1]
        if name in RANK_FUNCTION_NAMES or self._environment_rank(call):
            return _rank(call)
        spelled = dotted_name(call.func)
        if spelled is not None and self.project.returns_rank_test(spelled, self.owner):
            return _rank(call)  # the project model read it: it returns a rank test
        if resolved == "range":
            bound = _join(None, *(self.taint(a, state) for a in call.args))
            if bound is None:
                return None
            facets = Facet.CONTENTS if self._even_span(call, state) else VALUES
            return Taint(facets, bound.source, bound.line, bound.spelled)
        if resolved in ("isinstance", "type", "hasattr", "torch.is_tensor"):
            argument = self.taint(call.args[0], state) if call.args else None
            if argument is not None and argument.source in _TYPED_BY_CODE:
                # A batch's type is the collate function's; what a rank hands to a
                # gather is the value every rank's same code computes: their classes
                # are alike on every rank, however their contents differ, unless an
                # arm chose which object it is.
                return argument.as_contents(Facet.PRESENCE)
            return argument.as_contents(Facet.SHAPE) if argument else None
        if resolved in KEY_LISTERS and len(call.args) == 1 and self.is_mapping(call.args[0]):
            return _as_values(_keys(self.taint(call.args[0], state)))  # ``sorted(d)``
        if resolved in SCALAR_BUILTINS and not any(isinstance(a, ast.Starred) for a in call.args):
            # One number (or truth) from its arguments: other contents where theirs, or
            # their lengths, differ; never another shape.
            found = _join(None, *(self.taint(a, state) for a in call.args))
            return found.as_contents(VALUES) if found else None
        if resolved in ("len", "torch.numel"):
            argument = self.taint(call.args[0], state) if call.args else None
            return argument.as_contents(Facet.SHAPE) if argument else None
        if resolved == "torch.device":
            found = _join(None, *(self.taint(a, state) for a in call.args))
            return _device(found) if found else None
        if self._forward_of(call.func) is not None:
            spelled_call = f"{ast.unparse(call.func)}(...)"
            output = Taint(Facet.CONTENTS, Source.OUTPUT, call.lineno, spelled_call)
            return _join(output, *(self.taint(a, state) for a in call.args))
        if resolved in FACTORIES:
            return self._factory(call, resolved, state)
        if resolved in CONCATENATIONS and self._padded_to_shared(call, state):
            # ``torch.cat([mine, torch.full((most - len(mine),), -1)])``: padded to a
            # length every rank shares; what it holds is still this rank's.
            found = _join(None, *(self.taint(a, state) for a in call.args))
            return found.only(~Facet.SHAPE) if found else None
        if resolved in CHUNKERS:
            # ``torch.chunk(t, n)`` is ``t.chunk(n)``: as many pieces as ``n`` asks for,
            # each of ``t`` (not a count read from ``t``).
            pieces = _as_values(self.taint(call_argument(call, 1, "chunks"), state))
            return _join(self.taint(call_argument(call, 0, "input"), state), pieces)
        function = distributed_function(resolved)
        if function in PER_RANK_RESULTS:
            return Taint(Facet.CONTENTS, Source.CONTRIBUTED, call.lineno, ast.unparse(call.func))
        if function is not None or resolved in AGREEING_LIBRARY_FUNCTIONS:
            return None  # a functional collective's result agrees; the others return none
        if isinstance(call.func, ast.Attribute):
            return _made_by_call(self._method(call, call.func, state))
        texts = resolved in _TEXT_WRITERS or resolved in _PATH_BUILDERS
        found = _join(None, *self._argument_taints(call, state, texts))
        return _made_by_call(_stamped(found) if resolved in _TEXT_WRITERS else found)

    def _padded_to_shared(self, call: ast.Call, state: State) -> bool:
        """Whether a concatenation joins this rank's pieces with one filler made in
        the size ``shared - own`` (a size every rank shares less one that differs, the
        filler's other sizes shared): the code pads to the shared size."""
        pieces = call_argument(call, 0, "tensors")
        if not isinstance(pieces, (ast.List, ast.Tuple)) or len(pieces.elts) < 2:
            return False
        fillers = [piece for piece in pieces.elts if self._pads(piece, state)]
        return len(fillers) == 1

    def _pads(self, piece: ast.expr, state: State) -> bool:
        """A tensor factory's call whose sizes are shared but for ``shared - own``."""
        if not isinstance(piece, ast.Call):
            return False
        resolved = self.names.resolve(piece.func)
        if resolved in FILLED_FACTORIES:
            sizes = piece.args[:1]
        elif resolved in SIZED_FACTORIES:
            sizes = list(piece.args)
        else:
            return False
        if len(sizes) == 1 and isinstance(sizes[0], (ast.Tuple, ast.List)):
            sizes = list(sizes[0].elts)
        padding = [
            size
            for size in sizes
            if isinstance(size, ast.BinOp)
            and isinstance(size.op, ast.Sub)
            and self.taint(size.left, state) is None
            and self.taint(size.right, state) is not None
        ]
        others = [size for size in sizes if size not in padding]
        return len(padding) == 1 and all(self.taint(size, state) is None for size in others)

    def _argument_taints(self, call: ast.Call, state: State, texts: bool) -> Iterator[Taint | None]:
        """What the arguments reaching a call carry into its result. A stamped text
        handed to a call that does not build text is a name or label there (a run's
        folder, an environment's id): the stamp stays in the text, not in the result."""
        for argument in self._reaching_arguments(call):
            found = self.taint(argument, state)
            stamp = found is not None and found.source is Source.STAMP
            yield None if stamp and not texts else found

    def _even_span(self, call: ast.Call, state: State) -> bool:
        """Whether ``range(start, end[, step])`` has the same length on every rank: a
        step every rank shares, and ends that move alike (``rank * n``, ``(rank + 1) *
        n``): what their difference is built from is the same on every rank."""
        if len(call.args) not in (2, 3) or call.keywords:
            return False
        if any(isinstance(a, ast.Starred) for a in call.args):
            return False
        if len(call.args) == 3 and self.taint(call.args[2], state) is not None:
            return False
        reads = span_length_reads(call.args[0], call.args[1], self.single)
        return all(self.taint(read, state) is None for read in reads)

    def summary(self, call: ast.Call) -> CallSummary | None:
        """The summary of the function ``call`` runs, if known: a local one (``f(...)``,
        ``self.f(...)``) by its own analysis, another module's by the project's."""
        spelled = dotted_name(call.func)
        if spelled is None:
            return None
        local = "." not in spelled or _self_field(spelled)
        if local and self.results is not None:
            found = self.results(spelled, self.owner)
            if found is not None:
                return found
        return self.project.call_summary(spelled, self.owner)

    def returned_parts(
        self, call: ast.Call, state: State, count: int
    ) -> tuple[Taint | None, ...] | None:
        """The taint of each of the ``count`` items of the tuple a function returns
        (``start, models = create(rank, args)``): a local one solved for this call's
        arguments, another module's by the project's summary of which parameters reach
        each item. An item that reads none of the arguments that differ is the same on
        every rank however the others differ. None where not known."""
        spelled = dotted_name(call.func)
        if spelled is None or any(isinstance(a, ast.Starred) for a in call.args):
            return None
        if any(k.arg is None for k in call.keywords):
            return None
        local = "." not in spelled or _self_field(spelled)
        if local and self.parts is not None:
            positional = tuple(self.taint(a, state) for a in call.args)
            keywords = tuple((k.arg, self.taint(k.value, state)) for k in call.keywords if k.arg)
            found = self.parts(spelled, self.owner, positional, keywords, count)
            if found is not None:
                return found
        return self._summarised_parts(call, spelled, state, count)

    def own_rank_parts(
        self, call: ast.Call, state: State, count: int
    ) -> tuple[Taint | None, ...] | None:
        """Of a call whose result agrees, the items a function of this module (or, by
        the project model, of another) returns whose values read the rank itself
        (``rank, world_size = init_distributed()``, ``return rank, world_size``; not a
        device chosen by it); the other items agree. None where no item does."""
        spelled = dotted_name(call.func)
        if spelled is None:
            return None
        local = "." not in spelled or _self_field(spelled)
        found = self.returned_parts(call, state, count) if local else None
        if found is not None:
            ranks = tuple(
                t
                if t is not None and t.source is Source.RANK and t.facets & Facet.CONTENTS
                else None
                for t in found
            )
            if any(ranks):
                return ranks
        # Another module's function: the project model read which items return the rank.
        items = self.project.rank_items(spelled, self.owner)
        if not items or max(items) >= count:
            return None
        return tuple(_rank(call) if item in items else None for item in range(count))

    def _summarised_parts(
        self, call: ast.Call, spelled: str, state: State, count: int
    ) -> tuple[Taint | None, ...] | None:
        """Each item's taint from the project's summary of another module's function:
        the positional arguments that may reach it (keywords are options, as for the
        whole result)."""
        known = self.project.call_summary(spelled, self.owner)
        if known is None or known.items is None or len(known.items) != count:
            return None
        return tuple(
            _made_by_call(
                _join(
                    None,
                    *(
                        self.taint(value, state)
                        for value in _handed_to(known.parameters, call.args, item)
                    ),
                )
            )
            for item in known.items
        )

    def _local_summary(self, call: ast.Call) -> bool:
        """Whether the function's own analysis summarises ``call`` (not the project's
        summary of another module's function, whose keywords stay options)."""
        spelled = dotted_name(call.func)
        if spelled is None or self.results is None:
            return False
        local = "." not in spelled or _self_field(spelled)
        return local and self.results(spelled, self.owner) is not None

    def _reaching_arguments(self, call: ast.Call) -> list[ast.expr]:
        """The positional arguments whose values may reach the call's result: all of
        them (keyword arguments are options: a device, a logger, a flag), except for
        a function whose returns are known to drop some (a helper that all-reduces its
        argument returns the agreed value, one handed the rank only to log returns
        what its other arguments give) or, for a local one, to read a keyword. A
        mapping unpacked into the call (``model(**batch)``) is its argument list, data
        included, not one option: it reaches the result."""
        unpacked = [k.value for k in call.keywords if k.arg is None]
        known = self.summary(call)
        if (
            known is None
            or known.reaching is None
            or any(isinstance(a, ast.Starred) for a in call.args)
        ):
            return list(call.args) + unpacked
        keywords = call.keywords if self._local_summary(call) else ()
        return _handed_to(known.parameters, call.args, known.reaching, keywords) + unpacked

    def agreed_arguments(self, call: ast.Call) -> Iterator[ast.expr]:
        """The arguments a call makes agree in place: an in-place collective's buffer,
        and what a local function hands to one as its own parameter."""
        function = distributed_function(self.names.resolve(call.func))
        if function in AGREEING_BUFFERS:
            buffer = call_argument(call, *AGREEING_BUFFERS[function])
            if buffer is not None:
                yield buffer
            return
        known = self.summary(call)
        if known is None or not known.agreeing:
            return
        if any(isinstance(a, ast.Starred) for a in call.args):
            return
        given = paired_arguments(known.parameters, call.args)
        given += [(k.arg, k.value) for k in call.keywords if k.arg is not None]
        yield from (value for name, value in given if name in known.agreeing)

    def _forward_of(self, func: ast.expr) -> str | None:
        """The model whose forward ``func`` runs (``model(x)``, ``model.forward(x)``):
        its output is computed on this rank's inputs and, where sampled, its own
        randomness."""
        if isinstance(func, ast.Attribute) and func.attr == "forward":
            func = func.value
        spelled = dotted_name(func)
        return spelled if spelled in self.torch_modules else None

    def _method(self, call: ast.Call, func: ast.Attribute, state: State) -> Taint | None:
        receiver = self.taint(func.value, state)
        method = func.attr
        if method in _TEXT_WRITERS:
            return _stamped(
                _join(receiver, *(self.taint(a, state) for a in self._reaching_arguments(call)))
            )
        if method in AGREEING_METHODS and dotted_name(func.value) in self.agreeing_receivers:
            return None
        if method in STRATEGY_AGREEING and _strategy(func.value):
            return None
        if method in ("to", "type"):
            given = self.dtype_given(call, method)
            facets = VALUES if given is not None else VALUES | Facet.DTYPE
            kept = receiver.only(facets) if receiver else None
            return _join(kept, self._dtype(given, state))
        if method in PLACEMENT_METHODS:
            return receiver.only(VALUES | Facet.DTYPE) if receiver else None
        if method in DTYPE_METHODS and not call.args:
            return receiver.only(VALUES) if receiver else None
        if method in SIZED_METHODS:
            sizes = call.args[:1] if method == "new_full" else call.args
            fill = call.args[1:2] if method == "new_full" else []
            return _join(
                receiver.only(Facet.DTYPE) if receiver else None,
                self._sized(sizes, call, state),
                *(self.taint(a, state) for a in fill),
                self._dtype(_keyword_value(call, "dtype"), state),
            )
        if method in SHAPE_READERS:
            return receiver.as_contents(Facet.SHAPE) if receiver else None
        if method == "split" and call.args and self._is_sequence(call.args[0]):
            # ``t.split([a, b, c])``: one piece per size, whatever ``t``'s shape (an
            # int would give pieces by ``t``'s length; a size list is never an int).
            return _join(
                receiver.only(~Facet.SHAPE) if receiver else None, self.taint(call.args[0], state)
            )
        if method == "chunk" and call.args:
            # ``t.chunk(n)``: as many pieces as ``n`` asks for (at most), each of ``t``.
            count = _as_values(self.taint(call.args[0], state))
            return _join(receiver, count)
        if method == "keys" and not call.args:
            return _as_values(_keys(receiver))  # which keys, and how many
        if method in ("items", "values"):
            return receiver
        texts = (
            (receiver is not None and receiver.source is Source.STAMP)
            or isinstance(func.value, (ast.Constant, ast.JoinedStr))  # ``"/".join(parts)``
            or self.names.resolve(func) in _PATH_BUILDERS
        )
        return _join(receiver, *self._argument_taints(call, state, texts))

    def _is_sequence(self, expression: ast.expr) -> bool:
        """A list or tuple: a display or comprehension, or a name the function uses as a
        sequence (see ``_sequence_names``)."""
        if isinstance(expression, (ast.List, ast.Tuple, ast.ListComp)):
            return True
        spelled = dotted_name(expression)
        return spelled is not None and spelled in self.sequences

    def _environment_rank(self, node: ast.AST) -> bool:
        return reads_rank_variable(node, self.names)


_SCOPES = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
#: Sources whose values' classes the code decides, the same on every rank.
_TYPED_BY_CODE = frozenset({Source.BATCH, Source.CONTRIBUTED})
#: Expressions whose truth is that of the value they hold (not a comparison of it).
_TEXT_HOLDERS = (ast.Name, ast.Attribute, ast.Subscript, ast.JoinedStr, ast.BinOp)
#: Methods and builtins that write a value into text: a clock reading becomes a stamp.
_TEXT_WRITERS = frozenset({"strftime", "isoformat", "format", "str"})
#: Functions that build a path's text from their arguments (a stamp in one stays).
_PATH_BUILDERS = frozenset(
    {"os.path.join", "os.path.abspath", "os.path.expanduser", "pathlib.Path"}
)


#: Other spellings of one dtype.
_DTYPE_ALIASES = {
    "torch.float": "torch.float32",
    "torch.half": "torch.float16",
    "torch.double": "torch.float64",
    "torch.int": "torch.int32",
    "torch.long": "torch.int64",
}


#: The dtype each of ``DTYPE_METHODS`` converts to.
_METHOD_DTYPES = {
    "half": "torch.float16",
    "float": "torch.float32",
    "double": "torch.float64",
    "bfloat16": "torch.bfloat16",
    "int": "torch.int32",
    "long": "torch.int64",
    "bool": "torch.bool",
}
#: An arm's size or dtype when it keeps the value the name held before the test.
_KEPT = "<kept>"
#: ``_converted_dtype``'s answer for a call that converts nothing.
_NOT_CONVERTED = "<not converted>"


def _canonical_dtype(resolved: str | None) -> str | None:
    if resolved is None or resolved not in TORCH_DTYPES:
        return None
    return _DTYPE_ALIASES.get(resolved, resolved)


def _literal_make(call: ast.Call | ast.ListComp, names: Names) -> tuple[str | None, str | None]:
    """(the literal size, the dtype) a tensor factory call spells, each None when it
    is not a literal (or the call is no factory); a factory's result converted by a
    dtype method (``torch.ones(4).half()``) takes that method's dtype; a list
    comprehension of one generator, those of the tensors it makes."""
    if isinstance(call, ast.ListComp):
        element = call.elt
        if len(call.generators) != 1 or not isinstance(element, ast.Call):
            return None, None
        return _literal_make(element, names)
    func = call.func
    if (
        isinstance(func, ast.Attribute)
        and func.attr in DTYPE_METHODS
        and not call.args
        and not call.keywords
        and isinstance(func.value, ast.Call)
    ):
        made_size, _ = _literal_make(func.value, names)
        made = names.resolve(func.value.func) in SIZED_FACTORIES | FILLED_FACTORIES
        return (made_size, _METHOD_DTYPES[func.attr]) if made else (None, None)
    resolved = names.resolve(func)
    sizes: list[ast.expr] | None = None
    if resolved in SIZED_FACTORIES:
        sizes = [*call.args, *(k.value for k in call.keywords if k.arg == "size")]
    elif resolved in FILLED_FACTORIES:
        sizes = call.args[:1]
    if resolved in DATA_FACTORIES and call.args:
        sizes = call.args[:1]  # a literal list's length
    if resolved not in SIZED_FACTORIES | FILLED_FACTORIES | DATA_FACTORIES:
        return None, None
    size: str | None = None
    try:
        value = ast.literal_eval(ast.Tuple(elts=sizes or [], ctx=ast.Load()))
        if resolved in DATA_FACTORIES:
            value = _literal_shape(value[0]) if value else None
        elif len(value) == 1 and isinstance(value[0], (tuple, list)):
            value = tuple(value[0])  # ``torch.zeros((8,))`` is ``torch.zeros(8)``
        size = None if value is None else repr(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        size = None
    given = _keyword_value(call, "dtype")
    dtype = names.resolve(given) if given is not None else "torch.float32"
    if resolved in DATA_FACTORIES and given is None:
        dtype = None  # inferred from the data
    return size, _canonical_dtype(dtype)


def _assigned_values(nodes: list[Node], name: str) -> list[ast.expr]:
    """The values the plain assignments among ``nodes`` give ``name``."""
    return [
        node.statement.value
        for node in nodes
        if isinstance(node.statement, ast.Assign)
        and [dotted_name(t) for t in node.statement.targets] == [name]
    ]


def _made_apart_between(made: list[tuple[str | None, str | None]]) -> Facet:
    """SHAPE and DTYPE where the (size, dtype) ways make a tensor all spell theirs
    and they differ."""
    facets = Facet(0)
    for position, facet in ((0, Facet.SHAPE), (1, Facet.DTYPE)):
        spelled = [m[position] for m in made]
        if None not in spelled and len(set(spelled)) > 1:
            facets |= facet
    return facets


def _literal_shape(value: object) -> tuple[int, ...] | None:
    """The shape of a literal nested list (None when ragged or not a list)."""
    if not isinstance(value, (list, tuple)):
        return ()
    inner = {_literal_shape(item) for item in value}
    if len(inner) > 1 or None in inner:
        return None
    rest = next(iter(inner), ())
    return None if rest is None else (len(value), *rest)


#: Reasons a size may differ that do not show the shape differs (see ``_sized``).
_WEAK_SIZES = frozenset({Source.DECIDED, Source.CONTRIBUTED})


def _made_in_size(size: Taint | None) -> Taint | None:
    """The taint of a container made in a size of taint ``size`` (``torch.zeros(n)``,
    ``[0.0] * n``): another shape and other contents where the size differs, contents
    alone where it is only chosen per rank or counted from this rank's share of a
    collective (``_Evaluator._sized``)."""
    if size is None:
        return None
    facets = Facet.CONTENTS if size.source in _WEAK_SIZES else VALUES
    return Taint(facets, size.source, size.line, size.spelled)


def _keyword_value(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _launch_check(compare: ast.Compare) -> bool:
    """The shape of ``local_rank != -1``, ``rank >= 0``: whether the job was launched
    distributed, which every rank answers alike (a launcher gives no rank -1) when the
    operand is the rank itself (``_Evaluator._launcher_rank``)."""
    if len(compare.ops) != 1:
        return False
    return launch_answer(compare.ops[0], literal_or_none(compare.comparators[0])) is not None


def _positive_test(compare: ast.Compare) -> ast.expr | None:
    """The operand of ``x > 0``, ``x != 0`` or ``0 < x`` (None for another test)."""
    if len(compare.ops) != 1:
        return None
    op, left, right = compare.ops[0], compare.left, compare.comparators[0]
    if _is_zero(right) and isinstance(op, (ast.Gt, ast.NotEq)):
        return left
    if _is_zero(left) and isinstance(op, (ast.Lt, ast.NotEq)):
        return right
    return None


def _is_zero(expression: ast.expr) -> bool:
    return (
        isinstance(expression, ast.Constant)
        and not isinstance(expression.value, bool)
        and expression.value == 0
    )


def _tensor_names(nodes: list[ast.AST], names: Names) -> frozenset[str]:
    """The dotted names a scope's own code (``nodes``: its ``own_nodes``) binds to a
    tensor made by a factory (``correct = torch.zeros(n)``, ``m =
    torch.full(...).to(device)``; or ``None`` by a setting: ``z = None if off else
    torch.zeros(n)``): assigning one's items changes its contents, never its shape."""
    found: set[str] = set()
    for node in nodes:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        made = _unless_none(node.value)
        while (
            isinstance(made, ast.Call)
            and isinstance(made.func, ast.Attribute)
            and names.resolve(made.func) not in FACTORIES
        ):
            made = made.func.value  # ``torch.zeros(n).to(device)``: the factory's result
        spelled = dotted_name(node.targets[0])
        if (
            spelled is not None
            and isinstance(made, ast.Call)
            and names.resolve(made.func) in FACTORIES
        ):
            found.add(spelled)
    return frozenset(found)


def _unless_none(value: ast.expr) -> ast.expr:
    """The arm of ``None if test else v`` (or ``v if test else None``) that is not
    ``None``; ``value`` itself otherwise."""
    if isinstance(value, ast.IfExp):
        for arm, other in ((value.body, value.orelse), (value.orelse, value.body)):
            if isinstance(other, ast.Constant) and other.value is None:
                return arm
    return value


#: Builtins whose argument is an iterable: an int handed to one raises.
_ITERABLE_READERS = frozenset({"sum", "len", "sorted", "list", "tuple", "max", "min", "zip"})


def _sequence_names(nodes: list[ast.AST]) -> frozenset[str]:
    """The dotted names a scope's own code (``nodes``) uses as sequences, never as an
    int: iterated (``for n in sizes``, a comprehension), handed to ``sum`` / ``len`` /
    ``sorted`` and the like as the only argument, or indexed by something other than a
    string."""
    found: set[str] = set()
    for node in nodes:
        used: ast.expr | None = None
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            used = node.iter
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _ITERABLE_READERS
            and len(node.args) == 1
            and not node.keywords
        ):
            used = node.args[0]
        elif isinstance(node, ast.Subscript) and not (
            isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)
        ):
            used = node.value
        spelled = dotted_name(used) if used is not None else None
        if spelled is not None:
            found.add(spelled)
    return frozenset(found)


def _mapping_names(nodes: list[ast.AST], names: Names) -> frozenset[str]:
    """The dotted names a scope's own code (``nodes``) uses as mappings: indexed by a string
    (``out["loss"]``), asked ``get`` / ``items`` / ``keys`` / ``values`` /
    ``setdefault``, unpacked as ``**d``, or bound to a dict display or ``dict(...)``."""
    found: set[str] = set()
    #: (container, name) for ``for name in container`` and ``container[name]``: a
    #: container indexed by what iterating it yields is a mapping.
    iterated: set[tuple[str | None, str]] = set()
    indexed: set[tuple[str | None, str]] = set()
    for node in nodes:
        used: list[ast.expr] = []
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) and isinstance(
            node.target, ast.Name
        ):
            iterated.add((dotted_name(node.iter), node.target.id))
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name):
            indexed.add((dotted_name(node.value), node.slice.id))
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            if isinstance(node.slice.value, str):
                used.append(node.value)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in MAPPING_METHODS
            and bool(node.args) == (node.func.attr in ("get", "setdefault"))
        ):
            used.append(node.func.value)
        elif isinstance(node, ast.keyword) and node.arg is None:
            used.append(node.value)
        elif isinstance(node, ast.Dict):
            used += [v for k, v in zip(node.keys, node.values, strict=True) if k is None]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and (
            isinstance(node.value, (ast.Dict, ast.DictComp))
            or (
                isinstance(node.value, ast.Call)
                and names.resolve(node.value.func) in MAPPING_FACTORIES
            )
        ):
            used += node.targets if isinstance(node, ast.Assign) else [node.target]
        found.update(n for n in map(dotted_name, used) if n is not None)
    found.update(container for container, _ in iterated & indexed if container is not None)
    return frozenset(found)


def _ragged_names(nodes: list[ast.AST]) -> frozenset[str]:
    """The dotted names a scope's own code (``nodes``) binds to a list or tuple of
    displays (``data = [[1, 2], [3]]``): the item an index picks may be of another
    length."""
    sized = (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.ListComp, ast.SetComp, ast.DictComp)
    found: set[str] = set()
    for node in nodes:
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.value, (ast.List, ast.Tuple))
            and node.value.elts
        ):
            continue
        items = node.value.elts
        if all(isinstance(item, sized) for item in items):
            spelled = dotted_name(node.targets[0])
            if spelled is not None:
                found.add(spelled)
    return frozenset(found)


def _unstarred_parts(target: ast.AST) -> list[ast.expr] | None:
    """The parts of a tuple or list target without a starred part, else None."""
    if isinstance(target, (ast.Tuple, ast.List)) and not any(
        isinstance(e, ast.Starred) for e in target.elts
    ):
        return list(target.elts)
    return None


def _membership_test(compare: ast.Compare) -> bool:
    return any(isinstance(op, (ast.In, ast.NotIn)) for op in compare.ops)


def _keys(mapping: Taint | None) -> Taint | None:
    """The taint of a mapping's keys: they differ where its shape does."""
    return mapping.as_contents(Facet.SHAPE) if mapping else None


def _as_values(taint: Taint | None) -> Taint | None:
    """What a value that decides a container's keys or length makes of the container:
    other contents and another shape."""
    if taint is None or not taint.facets & DECIDING:
        return None
    return Taint(VALUES, taint.source, taint.line, taint.spelled)


def _repetition(expression: ast.AST) -> tuple[ast.expr, ast.expr] | None:
    """(the sequence, the count) of ``[t] * n`` / ``n * (a, b)``: a list or tuple
    display (or comprehension) repeated."""
    if not isinstance(expression, ast.BinOp) or not isinstance(expression.op, ast.Mult):
        return None
    sequences = (ast.List, ast.Tuple, ast.ListComp)
    if isinstance(expression.left, sequences):
        return expression.left, expression.right
    if isinstance(expression.right, sequences):
        return expression.right, expression.left
    return None


def _handed_to(
    parameters: tuple[str, ...],
    arguments: list[ast.expr],
    reaching: frozenset[str] | None,
    keywords: Sequence[ast.keyword] = (),
) -> list[ast.expr]:
    """The arguments a call hands to the ``reaching`` parameters (every one where None),
    by position and by the ``keywords`` given, and those past the parameters (unless
    a ``*args`` parameter takes them and does not reach)."""
    given = paired_arguments(parameters, arguments)
    given += [(k.arg, k.value) for k in keywords if k.arg is not None]
    return [v for name, v in given if name is None or reaching is None or name in reaching]


def paired_arguments(
    parameters: tuple[str, ...], arguments: Sequence[ast.expr]
) -> list[tuple[str | None, ast.expr]]:
    """(parameter, argument) by position: the arguments past the named parameters go
    to a ``*args`` parameter (spelled ``*args`` in ``parameters``, last), or to none
    (None) where the function has none known."""
    named = [p for p in parameters if not p.startswith("*")]
    rest = next((p for p in parameters if p.startswith("*")), None)
    given: list[tuple[str | None, ast.expr]] = list(zip(named, arguments, strict=False))
    given += [(rest, argument) for argument in arguments[len(named) :]]
    return given


def _made_by_call(taint: Taint | None) -> Taint | None:
    """A call's result: which object it is is the call's, whatever its arguments were."""
    return taint.only(~Facet.PRESENCE) if taint else None


def keyed_item(target: ast.expr) -> str | None:
    """The state's name for an item stored or read under a fixed key of a named
    container (``opt["rank"]``, ``self.cfg["world_size"]``, ``sizes[0]``), else None."""
    if not isinstance(target, ast.Subscript) or not isinstance(target.slice, ast.Constant):
        return None
    container = dotted_name(target.value)
    if container is None or not isinstance(target.slice.value, (str, int)):
        return None
    return f"{container}[{target.slice.value!r}]"


def _lookup_by_key(call: ast.Call) -> ast.Subscript | None:
    """``d.get("key", default)`` read as the item ``d["key"]``."""
    func = call.func
    if (
        not isinstance(func, ast.Attribute)
        or func.attr != "get"
        or not call.args
        or not isinstance(call.args[0], ast.Constant)
        or len(call.args) > 2
    ):
        return None
    return ast.Subscript(value=func.value, slice=call.args[0], ctx=ast.Load())


#: ``_item_by_key``'s answer when the container's items are not told apart by key.
_NOT_KEYED = Taint(Facet(0), Source.RANK, 0, "")


def _keyed_only(container: ast.expr, state: State) -> bool:
    """Whether ``container`` (a named one) differs between ranks only in items stored
    under fixed keys (``_item_by_key`` tells its items apart)."""
    spelled = dotted_name(container)
    if spelled is None or spelled not in state:
        return False
    items = [taint for name, taint in state.items() if name.startswith(f"{spelled}[")]
    return bool(items) and _join(*items) == state[spelled]


def _item_by_key(item: ast.Subscript, state: State) -> Taint | None:
    """The taint of an item read under a fixed key, where every way the container
    differs between ranks is an item stored under a fixed key (``opt["rank"] = rank``
    leaves ``opt["world_size"]`` agreed): that item's own, or none; ``_NOT_KEYED``
    where the container differs otherwise too (bound whole, filled under a per-rank
    key or test) or is not a named container."""
    keyed = keyed_item(item)
    if keyed is None:
        return _NOT_KEYED
    if not _keyed_only(item.value, state):
        return _NOT_KEYED
    found = state.get(keyed)
    return found.only(VALUES) if found is not None else None


def _contents(taint: Taint | None) -> Taint | None:
    return taint.only(Facet.CONTENTS) if taint else None


def _presence_test(compare: ast.Compare) -> bool:
    """``x is None`` / ``x is not None``: whether a value is there, not what it holds."""
    return (
        len(compare.ops) == 1
        and isinstance(compare.ops[0], (ast.Is, ast.IsNot))
        and isinstance(compare.comparators[0], ast.Constant)
        and compare.comparators[0].value is None
    )


def _rank(node: ast.AST) -> Taint:
    return Taint(Facet.CONTENTS, Source.RANK, getattr(node, "lineno", 0), ast.unparse(node))


def _stamped(found: Taint | None) -> Taint | None:
    """Text written from a value: a clock reading becomes a stamp (other contents,
    never an empty text)."""
    if found is None or found.source is not Source.PROBE:
        return found
    return Taint(found.facets, Source.STAMP, found.line, found.spelled)


def _device(found: Taint) -> Taint:
    return Taint(Facet.DEVICE, found.source, found.line, found.spelled)


def _join(first: Taint | None, *others: Taint | None) -> Taint | None:
    found = first
    for other in others:
        if other is not None:
            found = other if found is None else found.joined(other)
    return found


class Divergence:
    """The taints of one function's values at each node of its graph."""

    def __init__(
        self,
        graph: Graph,
        dominance: PostDominance,
        names: Names,
        rank_parameters: frozenset[str] = frozenset(),
        agreeing_receivers: frozenset[str] = frozenset(),
        project: ProjectFacts = NO_PROJECT,
        owner: str | None = None,
        torch_modules: frozenset[str] = frozenset(),
        fields: State | None = None,
        results: CallSummaries | None = None,
        decided: Callable[[ast.expr], bool | None] | None = None,
        batches: BatchSeeds | None = None,
        several: Callable[[ast.expr], bool | None] | None = None,
        probes: Callable[[ast.Call], bool] | None = None,
        parts: ReturnedParts | None = None,
    ) -> None:
        self.graph = graph
        #: Where this rank's batch enters (a batch view); None: the plain analysis.
        self._batches = batches
        #: Whether literal values decide a test on every run (``literal_values``).
        self._decided_test = decided
        #: What the module's switches (attributes bound anywhere in it) say of a test
        #: of the process count (``SingleProcessPaths.asks_several``).
        self._module_several = several
        self.dominance = dominance
        nodes = list(own_nodes(graph.scope))  # one walk of the scope for what its code binds
        single = single_bindings(graph.scope, nodes)
        self.evaluator = _Evaluator(
            names,
            agreeing_receivers,
            project,
            owner,
            torch_modules,
            results,
            _mapping_names(nodes, names),
            _ragged_names(nodes),
            even_strides(graph.scope, names, single),
            single,
            _parameters_of(graph.scope),
            _sequence_names(nodes),
            batches.drawn if batches is not None else frozenset(),
            parts,
        )
        self.evaluator.probes = probes
        self.names = names
        self._tensors = _tensor_names(nodes, names)
        self._contributed = self._contributions()
        self._entry = {**(fields or {}), **self._entry_state(rank_parameters)}
        self._before: dict[int, State] = {}
        self._decided: dict[int, State] = {}
        self._binders: dict[str, set[int]] | None = None
        self._sharing_arms: dict[int, EdgeKind | None] = {}
        self._solve()

    def _contributions(self) -> dict[str, Taint]:
        """Names whose values this rank hands to a reducing or gathering collective of
        the function, and the names they are computed from: a rank reduces or gathers a
        value precisely because it is its own."""
        found: dict[str, Taint] = {}
        assignments: dict[str, list[ast.expr]] = {}
        for statement in self.graph.statements():
            if isinstance(statement, ast.Assign):
                for target in statement.targets:
                    for name in bound_names(target):
                        assignments.setdefault(name, []).append(statement.value)
            for call in _calls_of(statement):
                function = distributed_function(self.names.resolve(call.func))
                if function not in CONTRIBUTIONS:
                    continue
                position, facets = CONTRIBUTIONS[function]
                given = call.args[position] if len(call.args) > position else None
                spelled = dotted_name(given) if given is not None else None
                if spelled is not None and spelled not in found:
                    found[spelled] = Taint(facets, Source.CONTRIBUTED, call.lineno, spelled)
        for name, taint in list(found.items()):
            for value in assignments.get(name, []):
                if value.lineno > taint.line:
                    continue  # bound after the reduction: computed from the agreed value
                for measured in _lengths_read(value):
                    # A count of this rank's items: their number is its own.
                    found.setdefault(measured, Taint(VALUES, taint.source, taint.line, measured))
        return found

    def _entry_state(self, rank_parameters: frozenset[str]) -> State:
        scope = self.graph.scope
        if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return {}
        state: State = {
            name: taint
            for name, taint in self._contributed.items()
            if "." in name or name in _parameters(scope)
        }
        for argument in scope.args.posonlyargs + scope.args.args + scope.args.kwonlyargs:
            if argument.arg in rank_parameters:
                state[argument.arg] = _rank(argument)
            elif self._batches is not None and argument.arg in self._batches.parameters:
                state[argument.arg] = Taint(VALUES, Source.BATCH, argument.lineno, argument.arg)
        return state

    # -- queries --------------------------------------------------------------------

    def before(self, node: Node) -> State:
        """The taints that hold when ``node`` starts."""
        return self._before.get(node.index, {})

    def at_exit(self) -> State | None:
        """The taints that hold where the function returns (None: it never does)."""
        return self._before.get(self.graph.exit.index)

    def test_taint(self, node: Node) -> Taint | None:
        """How the decision a test or loop step takes may differ between ranks."""
        statement = node.statement
        found: Taint | None = None
        if node.kind is NodeKind.TEST and isinstance(statement, (ast.If, ast.While, ast.Assert)):
            if self._decided_test is not None and self._decided_test(statement.test) is not None:
                return None  # decided before the run: the same arm on every rank
            if self.asks_several(statement.test) is not None:
                # The same arm on every rank of a multi-process run (``not distributed
                # and x``: what else it reads decides only where one process runs).
                return None
            found = self.evaluator.truth(statement.test, self.before(node))
        elif node.kind is NodeKind.STEP and isinstance(statement, (ast.For, ast.AsyncFor)):
            iterable = self.evaluator.taint(statement.iter, self.before(node))
            found = iterable.as_contents(Facet.SHAPE) if iterable else None
        return found.only(DECIDING) if found else None

    def stored_fields(self) -> State:
        """``self.x`` -> how the values this function stores in it may differ between
        ranks (joined over its stores; a field stored only agreeing values is left
        out)."""
        stored: State = {}
        for node in self.graph.nodes:
            statement = node.statement
            if node.kind is not NodeKind.STATEMENT or not isinstance(
                statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)
            ):
                continue
            state = self.before(node)
            for target in _targets(statement):
                for part, expression in _unpacked(target, statement.value):
                    value = self.evaluator.taint(expression, state)
                    if isinstance(statement, ast.AugAssign):
                        value = _join(value, self.evaluator.taint(part, state))
                    spelled = dotted_name(part)
                    if value is None or spelled is None or not _self_field(spelled):
                        continue
                    stored[spelled] = value.joined(stored.get(spelled))
        for decided in self._decided.values():
            for spelled, taint in decided.items():
                if _self_field(spelled) and taint.facets & Facet.SHAPE:
                    # Filled on some ranks only: its length and keys are this rank's.
                    stored[spelled] = taint.joined(stored.get(spelled))
        return stored

    def returned_parts(self, count: int) -> tuple[Taint | None, ...] | None:
        """The taint of each item where every ``return`` hands back a tuple display of
        ``count`` items (None otherwise)."""
        found: list[Taint | None] = [None] * count
        returns = 0
        for node in self.graph.nodes:
            statement = node.statement
            if not isinstance(statement, ast.Return) or node.kind is not NodeKind.STATEMENT:
                continue
            value = statement.value
            if (
                not isinstance(value, ast.Tuple)
                or len(value.elts) != count
                or any(isinstance(e, ast.Starred) for e in value.elts)
            ):
                return None
            returns += 1
            for position, element in enumerate(value.elts):
                found[position] = _join(found[position], self.taint(element, node))
        return tuple(found) if returns else None

    def returned(self) -> Taint | None:
        """How the values the function returns may differ between ranks (the join
        over its ``return`` statements)."""
        found: Taint | None = None
        for node in self.graph.nodes:
            if isinstance(node.statement, ast.Return) and node.kind is NodeKind.STATEMENT:
                found = _join(found, self.taint(node.statement.value, node))
        return found

    def taint(self, expression: ast.AST | None, node: Node) -> Taint | None:
        """The taint of an expression read where ``node`` starts."""
        return self.evaluator.taint(expression, self.before(node))

    # -- solving --------------------------------------------------------------------

    def _solve(self) -> None:
        """Iterate to a fixed point; a test found divergent marks what its branches
        bind as decided where they meet, and the iteration runs again."""
        divergent_tests: set[int] = set()
        while True:
            self._propagate()
            found = {
                node.index
                for node in self.graph.nodes
                if node.kind in (NodeKind.TEST, NodeKind.STEP) and self.test_taint(node)
            }
            if found <= divergent_tests:
                return
            divergent_tests |= found
            self._decided = self._decided_at_joins(divergent_tests)

    def _decided_at_joins(self, tests: set[int]) -> dict[int, State]:
        decided: dict[int, State] = {}
        for index in tests:
            test = self.graph.nodes[index]
            join = self.dominance.immediate(test)
            if join is None:
                continue
            taint = self.test_taint(test)
            if taint is None:
                # Divergent in an earlier round, no longer: a value the round before
                # marked decided now reaches it agreed (the rounds need not grow).
                continue
            target = decided.setdefault(join.index, {})
            region = self.dominance.region(test)
            for name, facets in self._chosen_between_arms(test, region, join).items():
                marked = Taint(facets, Source.DECIDED, test.line, taint.spelled)
                target[name] = marked.joined(target.get(name))
        return decided

    def _chosen_between_arms(self, test: Node, region: list[Node], join: Node) -> dict[str, Facet]:
        """The names the test's region binds whose value after the join depends on the
        arm taken, and how (its contents; its shape or dtype too where the arms make
        tensors of other literal sizes or dtypes). Left out: a name that no code
        outside the region binds (nor a parameter) while some arm leaves it unbound:
        after the join a rank either holds the one arm's value or stops with a
        ``NameError``, loudly (``if rank == 0: out_dir = make_dir()``)."""
        bound = {name for node in region for name in self._binds(node) if not self._rewraps(node)}
        inside = {node.index for node in region}
        binders = self._binding_nodes()
        given = set(self._entry) | _parameters_of(self.graph.scope)

        def bound_outside(name: str) -> bool:
            return name in given or bool(binders.get(name, set()) - inside - {test.index})

        arms = [self._arm_nodes(successor, inside, join) for successor, _ in _arms(test)]
        bound_on = [
            {name for node in arm for name in self._binds(node) if not self._rewraps(node)}
            for arm in arms
        ]
        agreed_on = [self._agreed_on_arm(arm) for arm in arms]
        augmented = self._augmented_only(region, bound)
        chosen: dict[str, Facet] = {}
        for name in bound:
            root = name.split(".", 1)[0]
            if all(name in agreed for agreed in agreed_on):
                continue  # every arm makes it agree: one broadcasts it, the others receive
            bound_before = bound_outside(name) or bound_outside(root) or "." in name
            if bound_before or all(name in names for names in bound_on):
                # Only augmented (``total += loss``) it is the same object whichever
                # arm ran: augmenting a ``None`` raises.
                presence = Facet(0) if name in augmented else Facet.PRESENCE
                chosen[name] = Facet.CONTENTS | presence | self._made_apart(name, arms)
        filled = _filled_apart(arms, bound, self._tensors, self._plain_dict_item)
        for name, facets in filled.items():
            chosen[name] = facets | chosen.get(name, Facet(0))
        return chosen

    def _made_apart(self, name: str, arms: list[list[Node]]) -> Facet:
        """SHAPE and DTYPE where each arm makes ``name`` once, a tensor of a literal
        size or dtype (``torch.zeros(4)`` on one arm, ``torch.zeros(8)`` on the other),
        or converts it to a dtype its call spells (``t = t.double()`` on one arm, ``t``
        kept or converted otherwise on the other), and the arms' sizes or dtypes
        differ; nothing where any arm cannot tell."""
        made: list[tuple[str | None, str | None]] = []
        kinds: set[str] = set()
        for arm in arms:
            values = _assigned_values(arm, name)
            if not values:
                kinds.add("kept")
                made.append((_KEPT, _KEPT))
                continue
            if len(values) != 1 or not isinstance(values[0], (ast.Call, ast.ListComp)):
                return Facet(0)
            converted = (
                self._converted_dtype(values[0], name)
                if isinstance(values[0], ast.Call)
                else _NOT_CONVERTED
            )
            kinds.add("made" if converted is _NOT_CONVERTED else "converted")
            fresh = converted is _NOT_CONVERTED
            made.append(_literal_make(values[0], self.names) if fresh else (_KEPT, converted))
        if {"kept", "made"} <= kinds:
            # A value made afresh against the one made before the test, when one
            # statement of the function makes it there; else not known.
            before = self._made_before(name, arms)
            if before is None:
                return Facet(0)
            made = [before if m == (_KEPT, _KEPT) else m for m in made]
        return _made_apart_between(made)

    def _made_before(
        self, name: str, arms: list[list[Node]]
    ) -> tuple[str | None, str | None] | None:
        """What the one statement outside the arms that binds ``name`` makes (a tensor
        or a list of tensors of a literal size), the value an arm that keeps ``name``
        holds; None where other statements bind it too or it is no such make."""
        inside = {node.index for arm in arms for node in arm}
        start = min((node.line for arm in arms for node in arm), default=0)
        outside = [
            node
            for node in self.graph.nodes
            if node.index not in inside and name in self._binds(node)
        ]
        if any(node.line >= start for node in outside):
            return None  # bound again later (a loop may carry it back): not known
        if len(outside) != 1 or name in _parameters_of(self.graph.scope):
            return None
        values = _assigned_values(outside, name)
        if len(values) != 1 or not isinstance(values[0], (ast.Call, ast.ListComp)):
            return None
        return _literal_make(values[0], self.names)

    def _converted_dtype(self, call: ast.Call, name: str) -> str | None:
        """The dtype ``name.double()`` / ``name.to(torch.int64)`` converts ``name`` to
        (None: one not spelled), or ``_NOT_CONVERTED`` for any other call."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and dotted_name(func.value) == name):
            return _NOT_CONVERTED
        if func.attr in DTYPE_METHODS and not call.args and not call.keywords:
            return _METHOD_DTYPES[func.attr]
        if func.attr in {"to", "type"}:
            given = self.evaluator.dtype_given(call, func.attr)
            if given is not None:
                return _canonical_dtype(self.names.resolve(given))
        return _NOT_CONVERTED

    def _binding_nodes(self) -> dict[str, set[int]]:
        """Name -> the nodes of the graph that bind it (made once)."""
        if self._binders is None:
            self._binders = {}
            for node in self.graph.nodes:
                for name in self._binds(node):
                    self._binders.setdefault(name, set()).add(node.index)
        return self._binders

    def _rewraps(self, node: Node) -> bool:
        """``pbar = tqdm(pbar, ...)``: a progress bar over the same items, which the
        name held before (a rank that shows no bar iterates alike)."""
        statement = node.statement
        if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
            return False
        value = statement.value
        return (
            isinstance(value, ast.Call)
            and self.names.resolve(value.func) in ITEMS_PRESERVING
            and bool(value.args)
            and dotted_name(value.args[0]) is not None
            and dotted_name(value.args[0]) == dotted_name(statement.targets[0])
        )

    def _arm_nodes(self, start: Node, inside: set[int], join: Node) -> list[Node]:
        """The nodes one arm of a test reaches before the join."""
        found: list[Node] = []
        seen: set[int] = set()
        pending = [start]
        while pending:
            node = pending.pop()
            if node.index in seen or node.index == join.index or node.index not in inside:
                continue
            seen.add(node.index)
            found.append(node)
            pending.extend(s for s, edge in node.successors if edge is not EdgeKind.EXCEPTION)
        return found

    def _agreed_on_arm(self, arm: list[Node]) -> set[str]:
        """Names an arm makes agree: those it hands to an in-place collective as its
        buffer (``broadcast_object_list([meta], src=0)`` on the sending rank) and those
        it reads back from such a buffer unchanged (``meta = received[0]`` on the
        others)."""
        buffers: set[str] = set()
        for node in arm:
            for call in _calls_of(node.statement) if node.statement is not None else ():
                for buffer in self.evaluator.agreed_arguments(call):
                    buffers.update(n.id for n in walk(buffer) if isinstance(n, ast.Name))
        received: set[str] = set()
        elsewhere: set[str] = set()
        for node in arm:
            statement = node.statement
            names = set(self._binds(node))
            if isinstance(statement, ast.Assign) and (
                _read_back(statement.value, buffers) or self._returns_agreed(statement.value)
            ):
                received |= names
            else:
                elsewhere |= names
        return buffers | (received - elsewhere)

    def _returns_agreed(self, value: ast.expr) -> bool:
        """A call of a function that communicates and returns the same on every rank
        whatever it is handed (``resume = broadcast_object(args, resume)``): its summary,
        local or the project's, lets no argument reach the result."""
        if not isinstance(value, ast.Call):
            return False
        summary = self.evaluator.summary(value)
        return summary is not None and summary.reaching == frozenset()

    def _augmented_only(self, region: list[Node], names: set[str]) -> set[str]:
        """The ``names`` that every statement of ``region`` binding them binds by an
        augmented assignment (``x += y``)."""
        kinds: dict[str, set[bool]] = {}
        for node in region:
            augmented = isinstance(node.statement, ast.AugAssign)
            for name in self._binds(node):
                if name in names:
                    kinds.setdefault(name, set()).add(augmented)
        return {name for name, found in kinds.items() if found == {True}}

    def _binds(self, node: Node) -> Iterator[str]:
        statement = node.statement
        if node.kind is NodeKind.STEP and isinstance(statement, (ast.For, ast.AsyncFor)):
            yield from bound_names(statement.target)
        elif node.kind is NodeKind.STATEMENT and isinstance(statement, ast.stmt):
            for target in _targets(statement):
                yield from (name for name in bound_names(target))

    def _propagate(self) -> None:
        self._before = {self.graph.entry.index: dict(self._entry)}
        pending = [self.graph.entry]
        queued = {self.graph.entry.index}
        while pending:
            node = pending.pop(0)
            queued.discard(node.index)
            state = self._before[node.index]
            decided = self._decided.get(node.index)
            if decided:
                state = {**state}
                for name, taint in decided.items():
                    state[name] = taint.joined(state.get(name))
                self._before[node.index] = state
            after = self._transfer(node, state)
            alone = self.one_process_edge(node)
            for successor, edge in node.successors:
                # On a way that runs one process no value can differ from a peer's.
                given = {} if edge is alone else after
                old = self._before.get(successor.index)
                new = given if old is None else _merged(old, given)
                if old is None or new != old:
                    self._before[successor.index] = new
                    if successor.index not in queued:
                        queued.add(successor.index)
                        pending.append(successor)

    def _transfer(self, node: Node, state: State) -> State:
        statement = node.statement
        if node.kind is NodeKind.STEP and isinstance(statement, (ast.For, ast.AsyncFor)):
            for part, taint in self.evaluator.iterated(statement.target, statement.iter, state):
                state = _bound(state, part, taint)
            for part in self._batches.loops.get(id(statement), ()) if self._batches else ():
                batch = Taint(VALUES, Source.BATCH, statement.lineno, ast.unparse(part))
                state = _bound(state, part, batch.joined(self.evaluator.taint(part, state)))
            return state
        if node.kind is not NodeKind.STATEMENT or not isinstance(statement, ast.stmt):
            return state
        if isinstance(statement, (ast.Assign, ast.AnnAssign)):
            for target in _targets(statement):
                parts = self._returned_parts(target, statement.value, state)
                if parts is not None:
                    assert isinstance(target, (ast.Tuple, ast.List))
                    for part, taint in zip(target.elts, parts, strict=True):
                        state = self._stored(state, part, taint)
                    continue
                for part, expression in _unpacked(target, statement.value):
                    value = self.evaluator.taint(expression, state)
                    contributed = self._with_contribution(part, value, statement.lineno)
                    state = self._stored(state, part, contributed)
                    if contributed == value:
                        state = self._literal_items(state, part, expression)
        elif isinstance(statement, ast.AugAssign):
            value = _join(
                self.evaluator.taint(statement.target, state),
                self._augmenting(statement, state),
            )
            existing = self._plain_dict_item(statement.target)
            state = self._stored(state, statement.target, value, existing_key=existing)
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            for item in statement.items:
                if item.optional_vars is not None:
                    value = self.evaluator.taint(item.context_expr, state)
                    state = _bound(state, item.optional_vars, value)
            return state
        return self._agreement(statement, state)

    def _augmenting(self, statement: ast.AugAssign, state: State) -> Taint | None:
        """What ``x += y`` takes from ``y``: never which object ``x`` is (augmenting a
        ``None`` raises), and for a tensor ``x`` its contents alone (an in-place
        operation keeps ``x``'s shape, dtype and device)."""
        found = self.evaluator.taint(statement.value, state)
        if found is None:
            return None
        if dotted_name(statement.target) in self._tensors:
            return found.as_contents(DECIDING | Facet.DTYPE)
        return found.only(~Facet.PRESENCE)

    def _returned_parts(
        self, target: ast.AST, value: ast.expr | None, state: State
    ) -> tuple[Taint | None, ...] | None:
        """``a, b = f(x)`` of a local function that returns a tuple: each name's own
        item (``_Evaluator.returned_parts``), where the call's result may differ as a
        whole (the items only split that: a result the call's summary finds agreed
        stays agreed)."""
        if not isinstance(target, (ast.Tuple, ast.List)) or not isinstance(value, ast.Call):
            return None
        if any(isinstance(e, ast.Starred) for e in target.elts):
            return None
        if self.evaluator.taint(value, state) is None:
            # Agreed as a whole, but for the rank a function of the module reads itself.
            return self.evaluator.own_rank_parts(value, state, len(target.elts))
        return self.evaluator.returned_parts(value, state, len(target.elts))

    def _literal_items(self, state: State, target: ast.AST, literal: ast.AST | None) -> State:
        """After ``name = {"rank": r, "world": w}``: each item under its fixed key
        (``_item_by_key``), so that ``name["world"]`` reads ``w`` alone."""
        container = dotted_name(target) if isinstance(target, (ast.Name, ast.Attribute)) else None
        if container is None or not isinstance(literal, ast.Dict) or container not in state:
            return state
        items: State = {}
        for key, value in zip(literal.keys, literal.values, strict=True):
            if not isinstance(key, ast.Constant) or not isinstance(key.value, (str, int)):
                return state  # ``**other`` or a computed key: not told apart
            taint = self.evaluator.taint(value, state)
            if taint is not None:
                items[f"{container}[{key.value!r}]"] = taint
        return {**state, **items}

    def _stored(
        self, state: State, target: ast.AST, value: Taint | None, existing_key: bool = False
    ) -> State:
        """``_bound``, and for an item stored under a key that differs between ranks
        (``d[key] = v``) the container's keys differ too where it is a mapping, what
        it holds where it is not; ``existing_key``: the store replaces an item the
        container holds already (``d[k] += v`` on a plain dict adds no key)."""
        container = dotted_name(target.value) if isinstance(target, ast.Subscript) else None
        if container is None or not isinstance(target, ast.Subscript):
            return _bound(state, target, value)
        key = self.evaluator.taint(target.slice, state)
        if existing_key:
            key = None
        elif key is not None and not isinstance(target.slice, ast.Slice):
            mapping = self.evaluator.is_mapping(target.value)
            key = _as_values(key) if mapping else _contents(key)
        else:
            key = None
        held = _join(_contents(value), key)
        new = {**state, container: held.joined(state.get(container))} if held else dict(state)
        keyed = keyed_item(target)
        if keyed is not None and key is None:
            new.pop(keyed, None)  # the item under a fixed key is replaced
            if held is not None:
                new[keyed] = held
        return new

    def _plain_dict_item(self, target: ast.expr) -> bool:
        """Whether ``target`` is an item of a container the function binds only to plain
        dicts (a display, a comprehension, ``dict(...)``): an augmented store into it
        raises unless the key is there, so it adds none (a ``defaultdict`` would)."""
        if not isinstance(target, ast.Subscript):
            return False
        container = dotted_name(target.value)
        if container is None:
            return False
        made = [
            statement.value
            for statement in self.graph.statements()
            if isinstance(statement, ast.Assign)
            and any(dotted_name(t) == container for t in statement.targets)
        ]
        return bool(made) and all(
            isinstance(value, (ast.Dict, ast.DictComp))
            or (isinstance(value, ast.Call) and self.names.resolve(value.func) == "dict")
            for value in made
        )

    def one_process_edge(self, node: Node) -> EdgeKind | None:
        """The branch of a test on which the job runs as one process
        (``dist.is_initialized()`` false, ``world_size > 1`` false, or a flag bound
        once to such a comparison), if the test asks that."""
        statement = node.statement
        if node.kind is not NodeKind.TEST or not isinstance(statement, (ast.If, ast.While)):
            return None
        several = asks_several(statement.test, self.names, self, _FOLLOWED_FLAGS)
        if several is None:
            return self._unshared_arm(node)
        return EdgeKind.FALSE if several else EdgeKind.TRUE

    def asks_several(self, test: ast.expr) -> bool | None:
        """``single_process.asks_several`` of ``test``: True when it holds in every
        multi-process run, False when it fails in every one; the function's own flags
        followed, then the module's switches."""
        found = asks_several(test, self.names, self, _FOLLOWED_FLAGS)
        if found is None and self._module_several is not None:
            found = self._module_several(test)
        return found

    def _unshared_arm(self, test: Node) -> EdgeKind | None:
        """The arm of a test that every rank answers alike (``if self.multi_gpu:``,
        ``if opts.num_gpus > 1:``) whose other arm shares values between the ranks
        (broadcasts a flag, all-reduces a count) while this one issues no collective:
        the job runs as one process there, with no peer to share with."""
        if test.index not in self._sharing_arms:
            self._sharing_arms[test.index] = self._arm_without_sharing(test)
        found = self._sharing_arms[test.index]
        if found is None or self.test_taint(test) is not None:
            return None
        return found

    def _arm_without_sharing(self, test: Node) -> EdgeKind | None:
        if not isinstance(test.statement, ast.If):
            return None
        join = self.dominance.immediate(test)
        if join is None:
            return None
        inside = {node.index for node in self.dominance.region(test)}
        arms = [(edge, self._arm_nodes(start, inside, join)) for start, edge in _arms(test)]
        if len(arms) != 2:
            return None
        (first_edge, first), (second_edge, second) = arms
        if self._agreed_on_arm(first) and not self._issues_collective(second):
            return second_edge
        if self._agreed_on_arm(second) and not self._issues_collective(first):
            return first_edge
        return None

    def _issues_collective(self, arm: list[Node]) -> bool:
        """Whether an arm calls torch.distributed (or deepspeed.comm) or a function
        that issues a collective (one the module or the project summarises)."""
        for node in arm:
            for call in _calls_of(node.statement) if node.statement is not None else ():
                if distributed_function(self.evaluator.names.resolve(call.func)) is not None:
                    return True
                if next(self.evaluator.agreed_arguments(call), None) is not None:
                    return True
                if self.evaluator.summary(call) is not None:
                    return True  # summarised: a function that issues a collective
        return False

    def switch(self, expression: ast.expr, depth: int) -> bool | None:
        """What a flag bound once in the function to a test of the process count says
        (``single_process.asks_several`` follows it)."""
        assigned = self.sole_assignment(expression.id) if isinstance(expression, ast.Name) else None
        return None if assigned is None else asks_several(assigned, self.names, self, depth)

    def world_size(self, expression: ast.expr, depth: int) -> bool:
        """Whether a name bound once in the function holds the world size."""
        assigned = self.sole_assignment(expression.id) if isinstance(expression, ast.Name) else None
        return assigned is not None and reads_world_size(assigned, self.names, self, depth)

    def launcher_rank(self, expression: ast.expr, depth: int) -> bool:
        """Whether a name bound once in the function holds the launcher's rank."""
        assigned = self.sole_assignment(expression.id) if isinstance(expression, ast.Name) else None
        return assigned is not None and reads_launcher_rank(assigned, self.names, self, depth)

    def sole_assignment(self, name: str) -> ast.expr | None:
        """The value of the one statement of the function that binds ``name``."""
        binders = self._binding_nodes().get(name, set())
        if len(binders) != 1 or name in _parameters_of(self.graph.scope):
            return None
        statement = self.graph.nodes[next(iter(binders))].statement
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            return statement.value
        return None

    def _with_contribution(self, target: ast.AST, value: Taint | None, line: int) -> Taint | None:
        """A value bound to a name this rank hands to a reduction below is its own
        share; bound after the reduction (``loss = loss / world``) it is whatever it
        is computed from."""
        spelled = dotted_name(target)
        contributed = self._contributed.get(spelled) if spelled is not None else None
        if contributed is None or line > contributed.line:
            return value
        return contributed.joined(value)

    def _agreement(self, statement: ast.stmt, state: State) -> State:
        """After an in-place collective (or a local function that runs one on its
        parameter) the buffer holds the same on every rank, whether the statement
        drops the call's result, keeps its work handle or uses it otherwise."""
        for call in _calls_of(statement):
            for buffer in self.evaluator.agreed_arguments(call):
                spelled = dotted_name(buffer)
                if spelled is not None and spelled in state:
                    state = {name: taint for name, taint in state.items() if name != spelled}
        if isinstance(statement, ast.Expr):
            state = self._copied_into(statement.value, state)
        return state

    def _copied_into(self, value: ast.expr, state: State) -> State:
        """``t.copy_(source)`` as a statement: ``t`` holds what ``source`` holds (its
        own shape, dtype and device kept), so a tensor filled from an agreed one agrees
        in its contents (``cu = t.cuda(); broadcast(cu); t.copy_(cu.cpu())``)."""
        if not (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr == "copy_"
            and len(value.args) == 1
        ):
            return state
        spelled = dotted_name(value.func.value)
        if spelled is None:
            return state
        kept = state[spelled].only(~Facet.CONTENTS) if spelled in state else None
        held = _join(kept, _contents(self.evaluator.taint(value.args[0], state)))
        new = {name: taint for name, taint in state.items() if name != spelled}
        return {**new, spelled: held} if held is not None else new


def _read_back(value: ast.expr, buffers: set[str]) -> bool:
    """``received`` or ``received[0]``: a buffer's contents, unchanged."""
    if isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Constant):
        value = value.value
    return isinstance(value, ast.Name) and value.id in buffers


def _self_field(spelled: str) -> bool:
    """``self.x``: a field of the object a method runs on."""
    return spelled.startswith("self.") and spelled.count(".") == 1


def _parameters_of(scope: ast.AST) -> set[str]:
    """The parameters of a function's graph (none for module or class code)."""
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return _parameters(scope)
    return set()


def _arms(test: Node) -> Iterator[tuple[Node, EdgeKind]]:
    """A test's branches (not its exception edges)."""
    return ((s, edge) for s, edge in test.successors if edge is not EdgeKind.EXCEPTION)


def _parameters(scope: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    arguments = scope.args
    return {a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs}


def _calls_of(statement: ast.AST) -> Iterator[ast.Call]:
    """The calls a statement node evaluates itself (not those of nested scopes)."""
    if isinstance(statement, ast.stmt) and not isinstance(statement, _SIMPLE):
        return
    pending: list[ast.AST] = [statement]
    while pending:
        current = pending.pop()
        if isinstance(current, (ast.Lambda, *_SCOPES)):
            continue
        if isinstance(current, ast.Call):
            yield current
        pending.extend(child_nodes(current))


def _lengths_read(expression: ast.AST) -> Iterator[str]:
    """The dotted names whose length an expression reads (``len(self.inflight)``)."""
    for node in walk(expression):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "len"
            and node.args
            and (spelled := dotted_name(node.args[0])) is not None
        ):
            yield spelled


_SIMPLE = (
    ast.Expr,
    ast.Assign,
    ast.AnnAssign,
    ast.AugAssign,
    ast.Return,
    ast.Raise,
    ast.Assert,
    ast.Delete,
)


def _unpacked(target: ast.AST, value: ast.expr | None) -> Iterator[tuple[ast.AST, ast.AST | None]]:
    """(target, the expression it takes) for each part of ``a, b = x, y`` (element by
    element, so ``rank`` does not taint ``epochs`` in ``epochs, rank = opt.epochs,
    opt.rank``); the whole value for any other shape."""
    if (
        isinstance(target, (ast.Tuple, ast.List))
        and isinstance(value, (ast.Tuple, ast.List))
        and len(target.elts) == len(value.elts)
        and not any(isinstance(e, ast.Starred) for e in (*target.elts, *value.elts))
    ):
        for part, expression in zip(target.elts, value.elts, strict=True):
            yield from _unpacked(part, expression)
    else:
        yield target, value


def _targets(statement: ast.stmt) -> list[ast.AST]:
    if isinstance(statement, ast.Assign):
        return list(statement.targets)
    if isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
        return [statement.target]
    if isinstance(statement, (ast.With, ast.AsyncWith)):
        return [i.optional_vars for i in statement.items if i.optional_vars is not None]
    return []


def _strategy(receiver: ast.expr) -> bool:
    """A trainer's (or Fabric's) strategy: ``trainer.strategy``, ``self.trainer.strategy``."""
    return isinstance(receiver, ast.Attribute) and receiver.attr == "strategy"


def _bound(state: State, target: ast.AST, value: Taint | None) -> State:
    """The state after ``target = value``: a name bound again loses its old taint; an
    item stored into a container adds its taint to the container's."""
    new = dict(state)
    if isinstance(target, ast.Subscript):
        # An item stored changes what the container holds, not its shape or dtype.
        container = dotted_name(target.value)
        stored = value.only(Facet.CONTENTS) if value is not None else None
        if container is not None and stored is not None:
            new[container] = stored.joined(new.get(container))
        return new
    for name in bound_names(target):
        new.pop(name, None)
        for held in [held for held in new if held.startswith((name + ".", name + "["))]:
            del new[held]
        if value is not None:
            new[name] = value
    return new


#: Methods that add an item to a list or mapping in place.
GROWING_METHODS = frozenset({"append", "extend", "insert", "setdefault"})


def _filled_containers(
    node: Node, tensors: frozenset[str], existing: Callable[[ast.expr], bool]
) -> Iterator[str]:
    """Containers the node adds items to: ``d[key] = v`` (also augmented, unless
    ``existing`` says the key must be there already: a plain dict; not a tensor, whose
    item assignment keeps its shape) and ``items.append(v)`` as a statement."""
    augmented = isinstance(node.statement, ast.AugAssign)
    for spelled, stored in _fillings(node):
        if stored is not None and augmented and existing(stored):
            continue
        if stored is None or spelled not in tensors:
            yield spelled


def _fillings(node: Node) -> Iterator[tuple[str, ast.Subscript | None]]:
    """Each container the node adds items to, with the item target where it stores one
    (``d[key] = v``), None where a method grows it (``items.append(v)``)."""
    statement = node.statement
    if node.kind is not NodeKind.STATEMENT or not isinstance(statement, ast.stmt):
        return
    for target in _targets(statement):
        if isinstance(target, ast.Subscript) and not isinstance(target.slice, ast.Slice):
            spelled = dotted_name(target.value)
            if spelled is not None:
                yield spelled, target
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        func = statement.value.func
        if isinstance(func, ast.Attribute) and func.attr in GROWING_METHODS:
            spelled = dotted_name(func.value)
            if spelled is not None:
                yield spelled, None


def _filled_apart(
    arms: list[list[Node]],
    bound: set[str],
    tensors: frozenset[str],
    existing: Callable[[ast.expr], bool],
) -> dict[str, Facet]:
    """Containers that some arms of a test add items to and others do not (neither
    binding them anew): after the join their length and keys depend on the arm taken."""
    filled_on = [
        {name for node in arm for name in _filled_containers(node, tensors, existing)}
        for arm in arms
    ]
    every = {name for filled in filled_on for name in filled}
    apart = {name for name in every if not all(name in filled for filled in filled_on)}
    found = {name: Facet.CONTENTS | Facet.SHAPE for name in apart - bound}
    for name in list(found):
        for item in _fixed_keys_filled(arms, name) or ():
            found[item] = Facet.CONTENTS | Facet.SHAPE
    return found


def _fixed_keys_filled(arms: list[list[Node]], container: str) -> set[str] | None:
    """The items (``keyed_item``) the arms store into ``container``, where every way
    they fill it is a store under a fixed key (``ckpt["ema"] = ...``); None where one
    is not (a computed key, an ``append``): then its items are not told apart."""
    items: set[str] = set()
    for node in (node for arm in arms for node in arm):
        for spelled, stored in _fillings(node):
            if spelled != container:
                continue
            keyed = keyed_item(stored) if stored is not None else None
            if keyed is None:
                return None
            items.add(keyed)
    return items


def _merged(first: State, second: State) -> State:
    merged = dict(first)
    for name, taint in second.items():
        merged[name] = taint.joined(merged.get(name))
    return merged
