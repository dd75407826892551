"""Per-rank shards of a data list on CPython's ``ast`` (DDP405): ``files[rank::world]``
and ``islice(stream, rank, None, world)`` (round robin), ``i % world == rank`` (a
stream filtered), ``data[rank * n // w:(rank + 1) * n // w]`` and
``np.array_split(data, w)[rank]`` (contiguous chunks), each of which can give ranks
parts of different lengths; and whether the code around one gives every rank the same
count anyway (``equalises``).

The rank and the world size are found by where a value comes from: a rank or world-size
call of the libraries (``dist.get_rank()``, ``get_world_size()``), the launcher's
variables (``os.environ["RANK"]``), the libraries' attributes (``sampler.rank``,
``num_replicas``), names bound to one (tuples unpacked element by element) and
``self.<field>`` a method of the class sets from one. A name bound to something else
is that something else, whatever it is called; only a name never bound in its scope (a
parameter) is read by its spelling, as the libraries spell the rank and world size.
Only the data-parallel rank counts: a per-rank truth value (``is_main_process``) is no
index.

What evens shards out is what the code does, never what it is called: a list padded
with its own items (``x + x[:k]``, how ``DistributedSampler`` pads), an endless stream
(``while True``, ``itertools.cycle`` / ``repeat``), a tail dropped (``drop_last=True``,
a ``DistributedSampler``), a count the ranks agree on through a collective, a length
taken modulo the world size or divided into one count for all (``len(x) // world *
world``, ``x[: k * world]``), ``islice(stream, count)``; in the code of the class or function that
shards, or in a function of the module it calls (a padding helper).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ddplint.analysis.api import (
    DISTRIBUTED_SAMPLERS,
    GROUP_CREATIONS,
    RANK_ENV_VARS,
    RANK_FUNCTION_NAMES,
    RANK_NUMBER_ATTRIBUTES,
    TORCH_COLLECTIVES,
    WORLD_SIZE_ATTRIBUTES,
    WORLD_SIZE_ENV_VARS,
    WORLD_SIZE_FUNCTION_NAMES,
    torch_distributed_function,
)
from ddplint.analysis.forms import ARRAY_SPLITS
from ddplint.analysis.names import Names, dotted_name, keyword_true
from ddplint.analysis.single_process import ENVIRONMENT_READERS

_Function = ast.FunctionDef | ast.AsyncFunctionDef
#: Where a name is looked up: the function around it, else the module (None).
_Scope = _Function | None
#: A binding whose value cannot be seen (a loop target, an unpacked call).
_UNSEEN = ast.Constant(value=None)
#: Calls that hand every rank the same count whatever the shard: an endless stream
#: (stopped by a step count) or a sampler that pads or drops the uneven tail itself.
#: How many names a truncation bound is followed through.
_NAME_HOPS = 3
#: How many calls deep the functions a shard's owner calls are read for what evens out.
CALL_DEPTH = 2
#: The module's function a call runs, if any (``ModuleAnalysis.callee_of``).
Callee = Callable[[ast.Call], "ast.FunctionDef | ast.AsyncFunctionDef | None"]
_EQUALISING_CALLS = frozenset({"itertools.cycle", "itertools.repeat", *DISTRIBUTED_SAMPLERS})
_ISLICE = "itertools.islice"


@dataclass(frozen=True)
class RankShard:
    """One expression that picks this rank's part of ``data`` in a way that gives ranks
    parts of different lengths unless the length divides (``form``, for messages), and
    the function and class its code sits in."""

    node: ast.expr
    data: ast.expr
    form: str
    function: _Scope
    owner_class: ast.ClassDef | None


class RankShards:
    """The uneven per-rank shards of one module."""

    def __init__(self, module: ast.Module, names: Names, callee_of: Callee) -> None:
        self._module = module
        self._names = names
        self._callee_of = callee_of
        self._bindings: dict[tuple[int, str], list[ast.expr]] = {}
        self._fields: dict[tuple[int, str], list[ast.expr]] = {}
        self._placed: list[tuple[ast.AST, _Scope, ast.ClassDef | None]] = list(
            _walk(module.body, None, None)
        )
        for node, function, cls in self._placed:
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.With)):
                self._bind(node, function, cls)

    def shards(self) -> Iterator[RankShard]:
        for node, function, cls in self._placed:
            found: tuple[ast.expr, str] | None = None
            if isinstance(node, ast.Subscript):
                found = self._round_robin(node, function, cls) or self._contiguous(
                    node, function, cls
                )
            elif isinstance(node, ast.Call):
                found = self._round_robin_islice(node, function, cls)
            elif isinstance(node, ast.Compare):
                found = self._modulo_filter(node, function, cls)
            if found is not None and isinstance(node, ast.expr):
                yield RankShard(node, found[0], found[1], function, cls)

    def equalises(self, owner: ast.AST) -> bool:
        """Whether ``owner`` (a class, function or the module) gives every rank the same
        count by what its code does (see the module's docstring), itself or in the
        functions of the module it calls (a few calls deep)."""
        placed = {id(node): (function, cls) for node, function, cls in self._placed}
        return self._equalises(owner, placed, CALL_DEPTH, {id(owner)})

    def _equalises(
        self,
        owner: ast.AST,
        placed: dict[int, tuple[_Scope, ast.ClassDef | None]],
        depth: int,
        entered: set[int],
    ) -> bool:
        nodes = list(ast.walk(owner))
        compared_mods = {
            id(operand)
            for node in nodes
            if isinstance(node, ast.Compare) and id(node) in placed
            for operand in (node.left, *node.comparators)
            if isinstance(operand, ast.BinOp)
            and isinstance(operand.op, ast.Mod)
            and self.reads_rank(node, *placed[id(node)])
        }
        for node in nodes:
            if id(node) not in placed:
                continue
            function, cls = placed[id(node)]
            if isinstance(node, ast.Call):
                if self._equalising_call(node):
                    return True
                callee = self._callee_of(node) if depth > 0 else None
                if callee is not None and id(callee) not in entered:
                    entered.add(id(callee))
                    if self._equalises(callee, placed, depth - 1, entered):
                        return True
            elif self._evens_out(node, function, cls, id(node) in compared_mods):
                return True
        return False

    def _evens_out(
        self, node: ast.AST, function: _Scope, cls: ast.ClassDef | None, picks: bool
    ) -> bool:
        """What one node (not a call) does to even shards out; ``picks``: a modulo that
        picks items (``i % world == rank``) rather than checks a count."""
        if isinstance(node, ast.While):
            return isinstance(node.test, ast.Constant) and node.test.value is True
        if isinstance(node, ast.BinOp):
            return _pads_with_itself(node.op, node.left, node.right) or (
                not picks and self._one_count(node, function, cls)
            )
        if isinstance(node, ast.AugAssign):
            return _pads_with_itself(node.op, node.target, node.value)
        if isinstance(node, ast.Subscript):
            return self._truncates_to_multiple(node, function, cls)
        return False

    def _truncates_to_multiple(
        self, subscript: ast.Subscript, function: _Scope, cls: ast.ClassDef | None
    ) -> bool:
        """``x[: k * world]``: a list cut to a multiple of the world size (the bound, or
        a name bound to it, either arm of ``a if t else b``, a product with the world
        size and no rank)."""
        piece = subscript.slice
        if not isinstance(piece, ast.Slice) or piece.upper is None:
            return False
        if piece.lower is not None or piece.step is not None:
            return False
        pending: list[tuple[ast.expr, _Scope, int]] = [(piece.upper, function, 0)]
        while pending:
            bound, where, hops = pending.pop()
            if isinstance(bound, ast.IfExp):
                pending.extend([(bound.body, where, hops), (bound.orelse, where, hops)])
            elif isinstance(bound, ast.BinOp) and isinstance(bound.op, ast.Mult):
                factors = (bound.left, bound.right)
                if any(self.reads_world_size(f, where, cls) for f in factors) and not any(
                    self.reads_rank(f, where, cls) for f in factors
                ):
                    return True
            elif isinstance(bound, ast.Name) and hops < _NAME_HOPS:
                followed = self._followed(bound, where, cls, frozenset())
                if followed is not None:
                    values, _, bound_in = followed
                    pending.extend((value, bound_in, hops + 1) for value in values)
        return False

    def reads_rank(self, expression: ast.AST, function: _Scope, cls: ast.ClassDef | None) -> bool:
        """``expression`` reads the data-parallel rank number."""
        return self._reads(expression, function, cls, world=False, seen=frozenset())

    def reads_world_size(
        self, expression: ast.AST, function: _Scope, cls: ast.ClassDef | None
    ) -> bool:
        """``expression`` reads the world size."""
        return self._reads(expression, function, cls, world=True, seen=frozenset())

    # -- the forms -------------------------------------------------------------------

    def _round_robin(
        self, subscript: ast.Subscript, function: _Scope, cls: ast.ClassDef | None
    ) -> tuple[ast.expr, str] | None:
        """``x[rank::world]`` (also ``x[rank * k + worker::world * k]``)."""
        piece = subscript.slice
        if not isinstance(piece, ast.Slice) or piece.lower is None or piece.step is None:
            return None
        if piece.upper is not None:
            return None
        if self.reads_rank(piece.lower, function, cls) and self.reads_world_size(
            piece.step, function, cls
        ):
            return subscript.value, "round robin"
        return None

    def _contiguous(
        self, subscript: ast.Subscript, function: _Scope, cls: ast.ClassDef | None
    ) -> tuple[ast.expr, str] | None:
        """``x[rank * n // w:(rank + 1) * n // w]`` (bounds floored one by one: parts of
        ``n // w`` and ``n // w + 1`` items) and ``array_split(x, w)[rank]``."""
        piece = subscript.slice
        if isinstance(piece, ast.Slice):
            if piece.lower is None or piece.upper is None or piece.step is not None:
                return None
            bounds = (piece.lower, piece.upper)
            if all(self._floored_rank_bound(bound, function, cls) for bound in bounds):
                return subscript.value, "contiguous chunks"
            return None
        split = subscript.value
        if not isinstance(split, ast.Call) or len(split.args) < 2:
            return None
        if self._names.resolve(split.func) not in ARRAY_SPLITS:
            return None
        if self.reads_rank(piece, function, cls) and self.reads_world_size(
            split.args[1], function, cls
        ):
            return split.args[0], "array_split"
        return None

    def _floored_rank_bound(
        self, bound: ast.expr, function: _Scope, cls: ast.ClassDef | None
    ) -> bool:
        return (
            isinstance(bound, ast.BinOp)
            and isinstance(bound.op, ast.FloorDiv)
            and self.reads_rank(bound.left, function, cls)
            and self.reads_world_size(bound.right, function, cls)
        )

    def _round_robin_islice(
        self, call: ast.Call, function: _Scope, cls: ast.ClassDef | None
    ) -> tuple[ast.expr, str] | None:
        """``itertools.islice(stream, rank, None, world)``."""
        if self._names.resolve(call.func) != _ISLICE or len(call.args) != 4:
            return None
        if self.reads_rank(call.args[1], function, cls) and self.reads_world_size(
            call.args[3], function, cls
        ):
            return call.args[0], "round robin"
        return None

    def _modulo_filter(
        self, compare: ast.Compare, function: _Scope, cls: ast.ClassDef | None
    ) -> tuple[ast.expr, str] | None:
        """``i % world == rank`` / ``!=`` (keep every world-th item of a stream)."""
        if len(compare.ops) != 1 or not isinstance(compare.ops[0], (ast.Eq, ast.NotEq)):
            return None
        left, right = compare.left, compare.comparators[0]
        for modulo, other in ((left, right), (right, left)):
            if (
                isinstance(modulo, ast.BinOp)
                and isinstance(modulo.op, ast.Mod)
                and self.reads_world_size(modulo.right, function, cls)
                and self.reads_rank(other, function, cls)
            ):
                return modulo.left, "modulo filter"
        return None

    # -- what evens shards out -------------------------------------------------------

    def _equalising_call(self, call: ast.Call) -> bool:
        resolved = self._names.resolve(call.func)
        if resolved == _ISLICE and len(call.args) == 2:
            return True  # every rank stops after the same count
        function = torch_distributed_function(resolved)
        if function in TORCH_COLLECTIVES and function not in GROUP_CREATIONS:
            return True  # the ranks agree on the count
        return keyword_true(call, "drop_last") or resolved in _EQUALISING_CALLS

    def _one_count(self, node: ast.BinOp, function: _Scope, cls: ast.ClassDef | None) -> bool:
        """``n % world`` (a divisibility check or remainder) or ``n // world`` with no rank
        on the left (one count for every rank, as in ``len(x) // world * world``)."""
        if not self.reads_world_size(node.right, function, cls):
            return False
        if isinstance(node.op, ast.Mod):
            return True
        return isinstance(node.op, ast.FloorDiv) and not self.reads_rank(node.left, function, cls)

    # -- where values come from ------------------------------------------------------

    def _bind(self, statement: ast.AST, function: _Scope, cls: ast.ClassDef | None) -> None:
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                self._bind_target(target, statement.value, function, cls)
        elif isinstance(statement, ast.AnnAssign):
            self._bind_target(statement.target, statement.value or _UNSEEN, function, cls)
        elif isinstance(statement, (ast.AugAssign, ast.For)):
            self._bind_target(statement.target, _UNSEEN, function, cls)
        elif isinstance(statement, ast.With):
            for item in statement.items:
                if item.optional_vars is not None:
                    self._bind_target(item.optional_vars, _UNSEEN, function, cls)

    def _bind_target(
        self, target: ast.expr, value: ast.expr, function: _Scope, cls: ast.ClassDef | None
    ) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for position, element in enumerate(target.elts):
                for part in _elements(value, position, len(target.elts)):
                    self._bind_target(element, part, function, cls)
            return
        if isinstance(target, ast.Name):
            self._bindings.setdefault((id(function), target.id), []).append(value)
        elif (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
            and cls is not None
        ):
            self._fields.setdefault((id(cls), target.attr), []).append(value)

    def _reads(
        self,
        expression: ast.AST,
        function: _Scope,
        cls: ast.ClassDef | None,
        *,
        world: bool,
        seen: frozenset[str],
    ) -> bool:
        pending: list[ast.AST] = [expression]
        while pending:
            node = pending.pop()
            if isinstance(node, (ast.Lambda, *_SCOPES)):
                continue
            if self._is_read(node, world):
                return True
            followed = self._followed(node, function, cls, seen)
            if followed is not None:
                values, key, where = followed
                if any(
                    self._reads(value, where, cls, world=world, seen=seen | {key})
                    for value in values
                ):
                    return True
                if not isinstance(node, ast.Attribute):
                    continue
            elif isinstance(node, ast.Name):
                if node.id in (WORLD_SIZE_ATTRIBUTES if world else RANK_NUMBER_ATTRIBUTES):
                    return True  # never bound here: a parameter, read by its spelling
                continue
            pending.extend(ast.iter_child_nodes(node))
        return False

    def _followed(
        self, node: ast.AST, function: _Scope, cls: ast.ClassDef | None, seen: frozenset[str]
    ) -> tuple[list[ast.expr], str, _Scope] | None:
        """The values a name (in its function, else the module) or a ``self`` field is
        bound to, the key that stops a cycle, and where the values are read."""
        if isinstance(node, ast.Name):
            for where in (function, None):
                key = f"{id(where)}:{node.id}"
                values = self._bindings.get((id(where), node.id))
                if values is not None:
                    return ([] if key in seen else values), key, where
            return None
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and cls is not None
        ):
            key = f"self.{node.attr}"
            values = self._fields.get((id(cls), node.attr), [])
            return ([] if key in seen else values), key, None
        return None

    def _is_read(self, node: ast.AST, world: bool) -> bool:
        """A library call, launcher variable or library attribute that is the rank
        number (or the world size)."""
        if isinstance(node, ast.Call):
            resolved = self._names.resolve(node.func) or ""
            if resolved in ENVIRONMENT_READERS and node.args:
                return _environment_key(node.args[0], world)
            last = resolved.rsplit(".", 1)[-1]
            if world:
                return last in WORLD_SIZE_FUNCTION_NAMES
            return last in RANK_FUNCTION_NAMES and not last.startswith("is_")
        if isinstance(node, ast.Subscript) and self._names.resolve(node.value) == "os.environ":
            return _environment_key(node.slice, world)
        if isinstance(node, ast.Attribute):
            return node.attr in (WORLD_SIZE_ATTRIBUTES if world else RANK_NUMBER_ATTRIBUTES)
        return False


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _environment_key(key: ast.AST, world: bool) -> bool:
    wanted = WORLD_SIZE_ENV_VARS if world else RANK_ENV_VARS
    return isinstance(key, ast.Constant) and key.value in wanted


def _elements(value: ast.expr, position: int, count: int) -> list[ast.expr]:
    """What the element at ``position`` of a ``count``-long unpacking of ``value`` is
    bound to: the element of a tuple or list display, of either arm of ``a if t else
    b``; anything else cannot be seen."""
    if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == count:
        if any(isinstance(element, ast.Starred) for element in value.elts):
            return [_UNSEEN]
        return [value.elts[position]]
    if isinstance(value, ast.IfExp):
        return [
            *_elements(value.body, position, count),
            *_elements(value.orelse, position, count),
        ]
    return [_UNSEEN]


def _walk(
    statements: list[ast.stmt], function: _Scope, cls: ast.ClassDef | None
) -> Iterator[tuple[ast.AST, _Scope, ast.ClassDef | None]]:
    """Every node of the module with the function and class its code sits in."""
    pending: list[tuple[ast.AST, _Scope, ast.ClassDef | None]] = [
        (statement, function, cls) for statement in statements
    ]
    while pending:
        node, inner_function, inner_class = pending.pop()
        yield node, inner_function, inner_class
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            pending.extend((child, node, inner_class) for child in node.body)
            pending.extend((d, inner_function, inner_class) for d in node.decorator_list)
        elif isinstance(node, ast.ClassDef):
            pending.extend((child, inner_function, node) for child in node.body)
        else:
            pending.extend(
                (child, inner_function, inner_class) for child in ast.iter_child_nodes(node)
            )


def _pads_with_itself(operator: ast.operator, base: ast.expr, added: ast.expr) -> bool:
    """``x + x[:k]``, ``x += (x * m)[:k]``: a list extended with its own items (how
    ``DistributedSampler`` pads to a multiple of the world size)."""
    if not isinstance(operator, ast.Add) or not isinstance(added, ast.Subscript):
        return False
    spelled = dotted_name(base)
    if spelled is None:
        return False
    return any(dotted_name(part) == spelled for part in _operands(added.value))


def _operands(expression: ast.expr) -> Iterator[ast.expr]:
    """``expression`` and the operands of the arithmetic it is made of."""
    yield expression
    if isinstance(expression, ast.BinOp):
        yield from _operands(expression.left)
        yield from _operands(expression.right)


def joins_uneven_inputs(module: ast.Module) -> bool:
    """The module uses DDP's uneven-input support: ``with model.join():`` or ``Join``."""
    for node in ast.walk(module):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                call = item.context_expr
                if isinstance(call, ast.Call):
                    func = call.func
                    name = func.attr if isinstance(func, ast.Attribute) else dotted_name(func)
                    if name in ("join", "Join"):
                        return True
    return False
