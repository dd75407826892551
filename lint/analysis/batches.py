"""Where this rank's own batch enters a function: the seeds of a batch view.

The divergence analysis counts an unknown value as uniform; the questions that ask
whether a decision reads this rank's *data* (a stop flag set on a NaN loss, a skip
flag broadcast from one rank) ask a view of it seeded here as well
(``ModuleAnalysis.batch_view``):

- the batch (and outputs) a LightningModule's step methods and per-batch hooks are
  handed, by position (``training_step(self, batch, batch_idx)``,
  ``on_train_batch_end(self, outputs, batch, batch_idx)``);
- the items of a training loop: a ``for`` (or ``while``) loop whose own body runs
  ``x.backward(...)`` (itself, or through a call of a local function that does:
  ``train_step(batch)``) and holds no inner such loop (an epoch loop around one walks
  epochs), its ``enumerate`` counter left out; and what ``next(it)`` draws in its body.

A loop that counts its turns walks no batches: a ``range`` (``trange``,
``itertools.count``), also through a name bound only to one and a progress bar that
wraps it on some ranks (``progress = range(n)``; ``if rank == 0: progress =
tqdm(progress)``), and a loop over a mapping's entries (``for name, opt in
optimizers.items()``) or a display of constants (``for name in ["timing", "shapes"]``,
also a parameter's default, a field the class binds only to one, a slice of one, or
``["actor"] if free else self.names``) walks what the code built, not this rank's
data: its turn number or entry is the same on every rank in the same turn. A loop that
steps its items (``for opt in self.optimizers: ... opt.step()``) walks optimizers; the
loop around it, if any, walks the batches.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

from ddplint.analysis.api import COUNTERS, ITEMS_PRESERVING
from ddplint.analysis.control_flow import own_nodes
from ddplint.analysis.names import Names, bound_names, dotted_name

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
#: Methods of a mapping that walk its entries.
_ENTRIES = frozenset({"items", "keys", "values"})
#: How many names a counted iterable is followed through.
_FOLLOWED = 3

Loop = ast.For | ast.AsyncFor | ast.While
_DEFINITIONS = (*_FUNCTIONS, ast.ClassDef)
#: A LightningModule's methods handed a batch, and the positions (after ``self``)
#: that hold this rank's batch or outputs.
LIGHTNING_BATCH_POSITIONS: dict[str, tuple[int, ...]] = {
    "training_step": (1,),
    "validation_step": (1,),
    "test_step": (1,),
    "predict_step": (1,),
    "on_train_batch_start": (1,),
    "on_train_batch_end": (1, 2),
    "on_validation_batch_start": (1,),
    "on_validation_batch_end": (1, 2),
    "on_test_batch_start": (1,),
    "on_test_batch_end": (1, 2),
}


@dataclass(frozen=True)
class BatchSeeds:
    """The parameters of a function that hold this rank's batch, for each loop that
    walks batches (by the loop's id) the parts of its target that hold one, and the
    ``next(it)`` calls (by id) that draw one."""

    parameters: frozenset[str] = frozenset()
    loops: dict[int, tuple[ast.expr, ...]] = field(default_factory=dict)
    drawn: frozenset[int] = frozenset()


def batch_seeds(
    scope: ast.AST,
    lightning_method: bool,
    helpers: frozenset[str] = frozenset(),
    names: Names | None = None,
    fields: dict[str, list[ast.expr | None]] | None = None,
    generators: dict[str, tuple[bool, ...]] | None = None,
) -> BatchSeeds:
    """Where this rank's batch enters ``scope``; ``lightning_method``: it is a method of
    a LightningModule class; ``helpers``: how calls name the local functions that run a
    backward; ``names``: the module's imports (``trange``, ``itertools.count``);
    ``fields``: for a method, what its class binds each ``self.x`` to
    (``field_bindings``); ``generators``: the module's generator functions that yield
    tuples, by name, and which parts of their tuples carry a batch (``yielded_parts``)."""
    parameters: set[str] = set()
    if lightning_method and isinstance(scope, _FUNCTIONS):
        positional = [*scope.args.posonlyargs, *scope.args.args]
        for position in LIGHTNING_BATCH_POSITIONS.get(scope.name, ()):
            if position < len(positional):
                parameters.add(positional[position].arg)
    counted = _Counted(scope, names, fields or {}, generators or {})
    loops = training_loops(scope, helpers)
    targets: dict[int, tuple[ast.expr, ...]] = {}
    for loop in loops:
        parts = counted.batch_targets(loop)
        if not _steps_items(loop, parts):
            targets[id(loop)] = parts
            continue
        # A loop over the optimizers (``for opt in self.optimizers: ... opt.step()``)
        # inside the loop that walks the batches: that one's items are the batch.
        targets[id(loop)] = ()
        outer = enclosing_loop(scope, loop)
        if outer is not None and id(outer) not in targets:
            targets[id(outer)] = counted.batch_targets(outer)
    drawn = frozenset(
        id(node)
        for loop in loops
        for statement in loop.body
        for node in (statement, *own_nodes(statement))
        if isinstance(node, ast.Call) and counted.draws_batch(node)
    )
    return BatchSeeds(frozenset(parameters), targets, drawn)


#: Methods that step (or clear) an optimizer: a batch is never stepped.
_STEPPING = frozenset({"step", "zero_grad"})
#: The attribute only an optimizer has among what a training loop walks.
_PARAMETER_GROUPS = "param_groups"


def _steps_items(loop: Loop, parts: tuple[ast.expr, ...]) -> bool:
    """Whether the loop's body steps what its items hold (``opt.step()``,
    ``opt.zero_grad()``) or reads their parameter groups (``opt.param_groups``, an
    optimizer's own attribute): a walk of optimizers, not of batches. (An item handed to
    a ``step`` is no sign: ``self.step(batch)`` runs a training step on a batch.)"""
    items = {name for part in parts for name in bound_names(part)}
    if not items:
        return False
    return any(
        _optimizer_use(node, items)
        for statement in loop.body
        if not isinstance(statement, _DEFINITIONS)
        for node in (statement, *own_nodes(statement))
    )


def _optimizer_use(node: ast.AST, items: set[str]) -> bool:
    """``opt.step()``, ``opt.zero_grad()`` or ``opt.param_groups`` on one of ``items``."""
    if isinstance(node, ast.Call):
        func = node.func
        return (
            isinstance(func, ast.Attribute)
            and func.attr in _STEPPING
            and isinstance(func.value, ast.Name)
            and func.value.id in items
        )
    return (
        isinstance(node, ast.Attribute)
        and node.attr == _PARAMETER_GROUPS
        and isinstance(node.value, ast.Name)
        and node.value.id in items
    )


def enclosing_loop(scope: ast.AST, loop: Loop) -> Loop | None:
    """The innermost loop of ``scope``'s own code whose body holds ``loop``."""
    found: Loop | None = None
    for candidate in own_nodes(scope):
        if not isinstance(candidate, _LOOPS) or candidate is loop:
            continue
        if any(
            node is loop
            for statement in candidate.body
            for node in (statement, *own_nodes(statement))
        ):
            found = candidate  # own_nodes walks outer loops first: the last one is innermost
    return found


def training_loops(scope: ast.AST, helpers: frozenset[str] = frozenset()) -> list[Loop]:
    """The loops of ``scope``'s own code that walk batches (their body runs a backward,
    itself or through a call of one of ``helpers``; no inner loop of theirs does)."""
    return [
        loop
        for loop in own_nodes(scope)
        if isinstance(loop, _LOOPS) and _training_loop(loop, helpers)
    ]


def step_method(scope: ast.AST, lightning_method: bool) -> bool:
    """A LightningModule's ``training_step`` (or another method handed a batch)."""
    return (
        lightning_method
        and isinstance(scope, _FUNCTIONS)
        and scope.name in LIGHTNING_BATCH_POSITIONS
    )


def _runs_backward(statements: list[ast.stmt], helpers: frozenset[str]) -> bool:
    return any(
        isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Attribute) and node.func.attr == "backward")
            or dotted_name(node.func) in helpers
        )
        for statement in statements
        if not isinstance(statement, _DEFINITIONS)
        for node in (statement, *own_nodes(statement))
    )


def _training_loop(loop: Loop, helpers: frozenset[str]) -> bool:
    """A loop whose body runs a backward, with no inner loop that does."""
    if not _runs_backward(loop.body, helpers):
        return False
    return not any(
        isinstance(inner, _LOOPS) and _runs_backward(inner.body, helpers)
        for statement in loop.body
        if not isinstance(statement, _DEFINITIONS)
        for inner in (statement, *own_nodes(statement))
    )


class _Counted:
    """Which iterables of a scope count turns or walk a mapping's entries, and so
    yield no batch."""

    def __init__(
        self,
        scope: ast.AST,
        names: Names | None,
        fields: dict[str, list[ast.expr | None]],
        generators: dict[str, tuple[bool, ...]] | None = None,
    ) -> None:
        self._names = names
        self._generators = generators or {}
        #: name -> the values the scope binds it to (None: bound some other way); a
        #: ``self.x`` field -> those its class binds it to.
        self._values: dict[str, list[ast.expr | None]] = dict(fields)
        plain: set[int] = set()
        walked = list(own_nodes(scope))
        for node in walked:
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
            ):
                plain.add(id(node.targets[0]))
                self._values.setdefault(node.targets[0].id, []).append(node.value)
        if isinstance(scope, _FUNCTIONS):
            arguments = scope.args
            positional = [*arguments.posonlyargs, *arguments.args]
            defaulted = zip(
                positional[len(positional) - len(arguments.defaults) :],
                arguments.defaults,
                strict=True,
            )
            given = [*defaulted, *zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)]
            for argument in [*positional, *arguments.kwonlyargs]:
                self._values[argument.arg] = [None]
            for argument, default in given:
                if default is not None:
                    self._values[argument.arg] = [default]
        for node in walked:
            stored = isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
            if stored and id(node) not in plain:
                assert isinstance(node, ast.Name)
                self._values.setdefault(node.id, []).append(None)

    def _resolve(self, func: ast.expr) -> str | None:
        if self._names is not None:
            return self._names.resolve(func)
        return dotted_name(func)

    def counts(self, iterable: ast.expr, depth: int = _FOLLOWED) -> bool:
        """``range(n)``, ``trange(n)``, ``itertools.count()``, a progress bar over one,
        or a name every binding of which is one (or re-wraps the name in a bar)."""
        if isinstance(iterable, ast.Call):
            resolved = self._resolve(iterable.func)
            if resolved in COUNTERS:
                return True
            if resolved in (*ITEMS_PRESERVING, "iter") and iterable.args:
                return self.counts(iterable.args[0], depth)
            return False
        if isinstance(iterable, ast.Name) and depth > 0:
            return self._bound_only_to(iterable.id, lambda v: self.counts(v, depth - 1))
        return False

    def _bound_only_to(self, name: str, kind: Callable[[ast.expr], bool]) -> bool:
        """Whether every binding of ``name`` in the scope is of ``kind`` (or re-wraps
        the name in a progress bar), its parameter default included."""
        values = self._values.get(name, [])
        return bool(values) and all(
            value is not None and (kind(value) or self._rewraps(value, name)) for value in values
        )

    def fixed(self, iterable: ast.expr, depth: int = _FOLLOWED) -> bool:
        """A walk of what the code built: a mapping's entries (``d.items()``), a
        display of constants (``["timing", "shapes"]``), also through a name bound
        only to one (a parameter by its default) or a progress bar over one."""
        if isinstance(iterable, ast.Call):
            resolved = self._resolve(iterable.func)
            if resolved in (*ITEMS_PRESERVING, "iter") and iterable.args:
                return self.fixed(iterable.args[0], depth)
            return _entries(iterable)
        if isinstance(iterable, (ast.List, ast.Tuple, ast.Set)):
            # An empty default (``loaders=()``) says nothing of what callers pass.
            return bool(iterable.elts) and all(isinstance(e, ast.Constant) for e in iterable.elts)
        if isinstance(iterable, ast.IfExp):
            # ``["actor"] if free else self.names``: one display or the other.
            return self._fixed_or_empty(iterable.body, depth) and self._fixed_or_empty(
                iterable.orelse, depth
            )
        if isinstance(iterable, ast.Subscript) and isinstance(iterable.slice, ast.Slice):
            return self.fixed(iterable.value, depth)  # ``self.names[:-1]``: some of them
        spelled = dotted_name(iterable) if isinstance(iterable, (ast.Name, ast.Attribute)) else None
        if spelled is not None and depth > 0:
            return self._bound_only_to(spelled, lambda v: self.fixed(v, depth - 1))
        return False

    def _fixed_or_empty(self, iterable: ast.expr, depth: int) -> bool:
        """``fixed``, or an empty display (an arm that walks nothing)."""
        empty = isinstance(iterable, (ast.List, ast.Tuple)) and not iterable.elts
        return empty or self.fixed(iterable, depth)

    def _rewraps(self, value: ast.expr, name: str) -> bool:
        """``progress = tqdm(progress)``: a bar over the items the name held."""
        return (
            isinstance(value, ast.Call)
            and self._resolve(value.func) in ITEMS_PRESERVING
            and bool(value.args)
            and isinstance(value.args[0], ast.Name)
            and value.args[0].id == name
        )

    def batch_targets(self, loop: Loop) -> tuple[ast.expr, ...]:
        """The parts of a loop's target that hold its items (``enumerate``'s counter,
        a counted loop's number and a mapping's entries left out; a ``while`` loop
        binds none)."""
        if isinstance(loop, ast.While):
            return ()
        iterated = shown_items(loop.iter, self._resolve)
        bound = self._values.get(iterated.id, []) if isinstance(iterated, ast.Name) else []
        if (
            len(bound) == 1
            and bound[0] is not None
            and isinstance(made := shown_items(bound[0], self._resolve), ast.Call)
            and self._resolve(made.func) in ("enumerate", "zip")
        ):
            iterated = made  # ``it = enumerate(loader)`` bound once, then ``for i, b in it``
        # ``it = make_batches(...)`` (in each arm of a choice): generators of the module.
        walks = [iterated] if not bound else [value for value in bound if value is not None]
        if (
            len(walks) == max(len(bound), 1)
            and (yielded := self._yielded(walks, loop.target)) is not None
        ):
            return yielded
        if (
            isinstance(iterated, ast.Call)
            and self._resolve(iterated.func) == "enumerate"
            and iterated.args
            and isinstance(loop.target, ast.Tuple)
        ):
            if self.counts(iterated.args[0]) or self.fixed(iterated.args[0]):
                return ()
            return tuple(loop.target.elts[1:])
        if self.counts(iterated) or self.fixed(iterated):
            return ()
        if (
            isinstance(iterated, ast.Call)
            and self._resolve(iterated.func) == "zip"
            and isinstance(loop.target, ast.Tuple)
            and len(iterated.args) == len(loop.target.elts)
            and not iterated.keywords
        ):
            # ``zip(loader, range(start, stop))``: each part from its own iterable.
            return tuple(
                part
                for part, inner in zip(loop.target.elts, iterated.args, strict=True)
                if not self.counts(inner) and not self.fixed(inner)
            )
        return (loop.target,)

    def _yielded(self, walks: list[ast.expr], target: ast.expr) -> tuple[ast.expr, ...] | None:
        """The parts of ``target`` that hold a batch where the loop walks a call of one of
        the module's generators (any of ``walks``, either arm of a choice) whose yielded
        tuples are as long as the target (a step counter yielded beside each batch is no
        batch); None for any other walk."""
        if not isinstance(target, ast.Tuple):
            return None
        carried = [False] * len(target.elts)
        arms = list(walks)
        while any(isinstance(arm, ast.IfExp) for arm in arms):
            arms = [
                part
                for arm in arms
                for part in ((arm.body, arm.orelse) if isinstance(arm, ast.IfExp) else (arm,))
            ]
        for walk in arms:
            if not (isinstance(walk, ast.Call) and isinstance(walk.func, ast.Name)):
                return None
            name = walk.func.id
            if self._names is not None and name in self._names.imports:
                return None
            parts = self._generators.get(name)
            if parts is None or len(parts) != len(carried):
                return None
            carried = [before or now for before, now in zip(carried, parts, strict=True)]
        return tuple(part for part, carries in zip(target.elts, carried, strict=True) if carries)

    def draws_batch(self, call: ast.Call) -> bool:
        """``next(it)`` on anything but a counter: the next item of this rank's data."""
        return (
            self._resolve(call.func) == "next" and bool(call.args) and not self.counts(call.args[0])
        )


def field_bindings(owner: ast.ClassDef) -> dict[str, list[ast.expr | None]]:
    """``self.x`` -> the values the class's methods bind it to (None: bound some other
    way: augmented, unpacked, a ``for`` target)."""
    found: dict[str, list[ast.expr | None]] = {}
    for method in owner.body:
        if not isinstance(method, _FUNCTIONS):
            continue
        nodes = own_nodes(method)
        plain: set[int] = set()
        for node in nodes:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if _self_field(target):
                        plain.add(id(target))
                        found.setdefault(ast.unparse(target), []).append(node.value)
        for node in nodes:
            stored = isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
            if stored and _self_field(node) and id(node) not in plain:
                found.setdefault(ast.unparse(node), []).append(None)
    return found


def _self_field(node: ast.AST) -> bool:
    """``self.x``."""
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def shown_items(expression: ast.expr, resolve: Callable[[ast.expr], str | None]) -> ast.expr:
    """What a loop over ``expression`` walks: ``x`` for a progress bar over ``x``
    (``tqdm(x, ...)``, at any depth), and either arm of a choice between arms that walk
    the same (``tqdm(enumerate(loader)) if is_main else enumerate(loader)``: the test
    chooses how the items are shown, not which)."""
    while True:
        if (
            isinstance(expression, ast.Call)
            and resolve(expression.func) in ITEMS_PRESERVING
            and expression.args
            and not isinstance(expression.args[0], ast.Starred)
        ):
            expression = expression.args[0]
        elif isinstance(expression, ast.IfExp) and same_items(
            expression.body, expression.orelse, resolve
        ):
            expression = shown_items(expression.body, resolve)
        else:
            return expression


def same_items(
    first: ast.expr, second: ast.expr, resolve: Callable[[ast.expr], str | None]
) -> bool:
    """Whether loops over two expressions walk the same items (the same expression once
    progress bars are taken off)."""
    return ast.dump(shown_items(first, resolve)) == ast.dump(shown_items(second, resolve))


#: Builtins whose result is a number computed from what they are handed.
_ARITHMETIC_BUILTINS = frozenset({"len", "int", "float", "min", "max", "abs", "round", "bool"})


def yielded_parts(function: ast.AST, names: Names | None) -> tuple[bool, ...] | None:
    """For a generator whose every ``yield`` hands out a tuple of the same length, which
    parts carry this rank's batch; None for any other function. A part carries none when
    all it is computed from (through the generator's own bindings) are numbers: constants,
    parameters and names bound only to arithmetic on them (``curr_step // accum + 1``,
    a dict of such counts, ``len(dataset)``); an item of a loop that walks data, a
    ``next(...)``, any other call or an item read out of something (``dataset[i]``)
    carries one."""
    yields = [
        node.value for node in own_nodes(function) if isinstance(node, (ast.Yield, ast.YieldFrom))
    ]
    if not yields or not all(isinstance(value, ast.Tuple) for value in yields):
        return None
    width = {len(value.elts) for value in yields if isinstance(value, ast.Tuple)}
    if len(width) != 1 or any(
        isinstance(e, ast.Starred) for v in yields if isinstance(v, ast.Tuple) for e in v.elts
    ):
        return None
    counted = _Counted(function, names, {})
    parameters = _parameter_names(function)
    carrying = _carrying_names(function, counted, parameters, names)
    tuples = [value for value in yields if isinstance(value, ast.Tuple)]
    return tuple(
        any(not _counted_only(value.elts[index], carrying, parameters, names) for value in tuples)
        for index in range(width.pop())
    )


def _parameter_names(function: ast.AST) -> set[str]:
    if not isinstance(function, _FUNCTIONS):
        return set()
    arguments = function.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    return {argument.arg for argument in every}


def _carrying_names(
    function: ast.AST, counted: _Counted, parameters: set[str], names: Names | None
) -> set[str]:
    """The names a generator binds to anything but arithmetic on numbers, to a fixed
    point (``x = batch; y = x`` carries)."""
    values: dict[str, list[ast.expr | None]] = {}
    for node in own_nodes(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for name in _stored(target):
                    # ``a, b = x, y`` pairs each part; anything else binds each name to all.
                    values.setdefault(name, []).append(node.value)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name):
            values.setdefault(node.target.id, []).append(node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            counts = counted.counts(node.iter)
            for name in _stored(node.target):
                values.setdefault(name, []).append(None if not counts else ast.Constant(0))
        elif isinstance(node, (ast.With, ast.AsyncWith, ast.ExceptHandler, ast.NamedExpr)):
            for name in bound_names(node):
                values.setdefault(name, []).append(None)
        elif isinstance(node, ast.comprehension):
            for name in _stored(node.target):
                values.setdefault(name, []).append(None)
    carrying = {name for name, found in values.items() if any(v is None for v in found)}
    changed = True
    while changed:
        changed = False
        for name, found in values.items():
            if name not in carrying and any(
                not _counted_only(value, carrying, parameters, names)
                for value in found
                if value is not None
            ):
                carrying.add(name)
                changed = True
    return carrying


def _stored(target: ast.expr) -> list[str]:
    return [node.id for node in ast.walk(target) if isinstance(node, ast.Name)]


def _counted_only(
    expression: ast.expr,
    carrying: set[str],
    parameters: set[str],
    names: Names | None,
    operand: bool = False,
) -> bool:
    """Whether ``expression`` is arithmetic on numbers only: no name of ``carrying``, a
    parameter only as an operand of arithmetic (``step // accum``, ``len(dataset)``: a
    parameter handed out as it is may be the data), no call but arithmetic builtins, no
    item read out of anything; displays (``{"step": n + 1}``) of such values."""

    def counted(child: ast.expr, as_operand: bool) -> bool:
        return _counted_only(child, carrying, parameters, names, as_operand)

    if isinstance(expression, ast.Constant):
        return True
    if isinstance(expression, ast.Name):
        return expression.id not in carrying and (operand or expression.id not in parameters)
    if isinstance(expression, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp)):
        return all(
            counted(child, True)
            for child in ast.iter_child_nodes(expression)
            if isinstance(child, ast.expr)
        )
    if isinstance(expression, ast.Call):
        func = expression.func
        arithmetic = (
            isinstance(func, ast.Name)
            and func.id in _ARITHMETIC_BUILTINS
            and (names is None or func.id not in names.imports)
        )
        return (
            arithmetic
            and not expression.keywords
            and all(counted(argument, True) for argument in expression.args)
        )
    if isinstance(expression, (ast.Tuple, ast.List, ast.Set, ast.Dict, ast.IfExp)):
        return all(
            counted(child, operand)
            for child in ast.iter_child_nodes(expression)
            if isinstance(child, ast.expr)
        )
    return False


def _entries(iterable: ast.expr) -> bool:
    """``d.items()`` / ``d.keys()`` / ``d.values()``: a mapping's entries."""
    return (
        isinstance(iterable, ast.Call)
        and isinstance(iterable.func, ast.Attribute)
        and iterable.func.attr in _ENTRIES
        and not iterable.args
        and not iterable.keywords
    )
