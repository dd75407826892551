"""Where the object one call makes travels in a module, and the loops that walk it.

Real training scripts make a data loader in one function and walk it in another: a
factory returns it, ``main`` passes it to ``run_one_epoch(model, loader)`` inside the
epoch loop, or a trainer keeps it in ``self.train_data`` and ``_run_epoch`` walks it
while ``fit`` loops over epochs. ``ObjectFlow`` follows an allocation (any expression
the caller's predicate says makes the object) through the module, as a may-analysis to
a fixed point:

- a name bound to it in a function (or module code), a field of ``self`` (its class's,
  in every method), the first target of a tuple unpacking where the caller's
  ``made_first`` says the call makes a tuple whose first item is the object (``engine, *_
  = deepspeed.initialize(...)``), what a function returns (at its calls), a parameter it
  is handed to (a module function, a method through ``self``, a class of the module through its
  ``__init__``);
- either value of a conditional (``DistributedSampler(ds) if distributed else None``,
  ``RandomSampler if single else DistributedSampler``, ``given or Made()``);
- an item under a constant key of a container in any of those places (``loaders =
  {"train": loader}``, ``self.samplers["train"] = sampler``), read back by the same key
  (``loaders["train"]``) wherever the container travels, two keys deep;
- ``loops()``: each ``for`` over a place that holds it (through ``enumerate`` and
  progress bars), and each iterator made of it to be stepped with ``next`` (``it =
  iter(loader)``, made anew when it runs out), with its outer loop: a loop around it
  in the same function, else a loop around a call of that function (by name, through
  ``self``), a few callers up.

Only this module is read; an object that leaves it (another module's function, a
library call that wraps it) is not followed. Names are places, not values: a name bound
twice holds what either binding made.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property

from ddplint.analysis.constants import nodes_within, parameter_names
from ddplint.analysis.control_flow import own_nodes
from ddplint.analysis.enumerate_loops import walked_iterable
from ddplint.analysis.module_nodes import ModuleNodes
from ddplint.analysis.names import Names

Function = ast.FunctionDef | ast.AsyncFunctionDef
Loop = ast.For | ast.AsyncFor | ast.While
#: A place holding the object: ("name", scope, name), ("field", class, attribute) or
#: ("return", function, ""); a container holding it under constant keys: the kind
#: followed by the keys (``"name['train']"``).
Place = tuple[str, ast.AST, str]
#: The constant keys, outermost first, under which a container holds the object (none:
#: the place holds the object itself).
Keys = tuple[object, ...]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
#: Rounds of the fixed point over the module's bindings, returns and calls.
_ROUNDS = 6
#: How many callers up an outer loop is looked for.
_CALLER_DEPTH = 3
#: How many constant keys deep a container is followed (``runs["train"]["loader"]``).
_KEY_DEPTH = 2


@dataclass(frozen=True)
class WalkLoop:
    """A walk over the object (``walk``: a ``for``, or an ``iter(x)`` bound to a name
    or field) and the loop that repeats it (``outer``): in the same function, or around
    a call of the function holding ``walk`` (``calls``: the calls from ``outer``'s body
    down to it, outermost first). ``steps``: what each step of the walk runs (the
    ``for``'s body; for an iterator, the body of ``outer``, which steps it)."""

    walk: ast.For | ast.AsyncFor | ast.Call
    outer: Loop
    calls: tuple[ast.Call, ...] = ()
    steps: tuple[ast.stmt, ...] = ()

    @property
    def walked(self) -> ast.expr:
        """The expression walked (``loader`` of ``for b in enumerate(loader)`` before
        unwrapping, of ``it = iter(loader)``)."""
        if isinstance(self.walk, ast.Call):
            return self.walk.args[0]
        return self.walk.iter


class ModuleCode:
    """The scopes of a module's code (module code and functions), the scope of each of
    their nodes, the loops around each node, and which of the module's functions a call
    runs."""

    def __init__(self, nodes: ModuleNodes, names: Names) -> None:
        self.nodes = nodes
        self.names = names
        self.scopes: list[ast.AST] = [nodes.module, *nodes.functions()]
        self._scope_of: dict[int, ast.AST] = {}
        self._loop_of: dict[int, Loop] = {}
        self._bound: dict[int, set[str]] = {}
        for scope in self.scopes:
            for node in own_nodes(scope):
                self._scope_of[id(node)] = scope
            for statement in _body(scope):
                self._mark_loops(statement, None)

    def binds(self, scope: ast.AST, name: str) -> bool:
        """Whether a function binds ``name`` itself (a parameter, an assignment, a loop
        target): then it does not read the module's ``name``."""
        if not isinstance(scope, _FUNCTIONS):
            return True
        found = self._bound.get(id(scope))
        if found is None:
            found = parameter_names(scope) | {
                node.id
                for node in own_nodes(scope)
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
            }
            self._bound[id(scope)] = found
        return name in found

    def scope_of(self, node: ast.AST) -> ast.AST:
        """The function (or module) whose own code holds ``node``."""
        return self._scope_of.get(id(node), self.nodes.module)

    def loop_around(self, node: ast.AST) -> Loop | None:
        """The innermost loop of the same function whose body holds ``node``."""
        return self._loop_of.get(id(node))

    def loops_around(self, node: ast.AST) -> Iterator[Loop]:
        """The loops of the same function around ``node``, innermost first."""
        loop = self.loop_around(node)
        while loop is not None:
            yield loop
            loop = self.loop_around(loop)

    def _mark_loops(self, node: ast.AST, loop: Loop | None) -> None:
        if isinstance(node, _NESTED):
            return
        if loop is not None:
            self._loop_of[id(node)] = loop
        if isinstance(node, _LOOPS):
            for child in ast.iter_child_nodes(node):
                inside = any(child is s for s in node.body)
                self._mark_loops(child, node if inside else loop)
            return
        for child in ast.iter_child_nodes(node):
            self._mark_loops(child, loop)

    @cached_property
    def _defined(self) -> dict[tuple[int, str], list[Function]]:
        """The functions each scope defines, by (id of the scope, name)."""
        found: dict[tuple[int, str], list[Function]] = {}
        for function in self.nodes.functions():
            owner = self.nodes.scope_of.get(function)
            if owner is not None:
                found.setdefault((id(owner), function.name), []).append(function)
        return found

    def _visible_function(self, name: str, scope: ast.AST) -> Function | None:
        """The function ``name`` calls from ``scope``: one its own code or an enclosing
        function defines (a nested ``def``), else the module's (defined once)."""
        current: ast.AST | None = scope
        while current is not None:
            if not isinstance(current, ast.ClassDef):  # a class body's names are not seen
                found = self._defined.get((id(current), name))
                if found is not None:
                    return found[0] if len(found) == 1 else None
            if isinstance(current, ast.Module):
                return None
            current = self.nodes.scope_of.get(current)
        return None

    @cached_property
    def classes(self) -> dict[str, ast.ClassDef]:
        """Classes defined once in module code, by name."""
        found: dict[str, list[ast.ClassDef]] = {}
        for cls in self.nodes.of_type(ast.ClassDef):
            if isinstance(self.nodes.scope_of.get(cls), ast.Module):
                found.setdefault(cls.name, []).append(cls)
        return {name: cs[0] for name, cs in found.items() if len(cs) == 1}

    @staticmethod
    def is_instance(expression: ast.expr, scope: ast.AST) -> bool:
        """``expression`` is the instance the method ``scope`` runs on."""
        return _is_instance(expression, scope)

    def class_of(self, scope: ast.AST) -> ast.ClassDef | None:
        """The class whose method ``scope`` is."""
        owner = self.nodes.scope_of.get(scope) if isinstance(scope, _FUNCTIONS) else None
        return owner if isinstance(owner, ast.ClassDef) else None

    def method(self, cls: ast.ClassDef, name: str) -> Function | None:
        found = [f for f in cls.body if isinstance(f, _FUNCTIONS) and f.name == name]
        return found[0] if len(found) == 1 else None

    def callee(self, call: ast.Call, scope: ast.AST) -> tuple[Function, bool] | None:
        """The module's function a call runs, and whether the call binds its first
        parameter itself (a method through ``self``, a class through ``__init__``):
        ``f(...)`` (a module function or one nested in the caller's functions),
        ``self.f(...)`` in a method of the class, ``Cls(...)``."""
        func = call.func
        if isinstance(func, ast.Name):
            function = self._visible_function(func.id, scope)
            if function is not None:
                return function, False
            cls = self.classes.get(func.id)
            init = self.method(cls, "__init__") if cls is not None else None
            return (init, True) if init is not None else None
        if isinstance(func, ast.Attribute) and _is_instance(func.value, scope):
            cls = self.class_of(scope)
            method = self.method(cls, func.attr) if cls is not None else None
            if method is not None and not _static(method):
                return method, True
        return None

    @cached_property
    def calls(self) -> list[tuple[ast.Call, ast.AST]]:
        """Every call of module code and functions, with its scope."""
        return [
            (node, scope)
            for scope in self.scopes
            for node in own_nodes(scope)
            if isinstance(node, ast.Call)
        ]

    def calls_of(self, function: Function) -> Iterator[tuple[ast.Call, ast.AST]]:
        """The module's calls that run ``function``."""
        for call, scope in self.calls:
            found = self.callee(call, scope)
            if found is not None and found[0] is function:
                yield call, scope


class ObjectFlow:
    """The places of one module that hold the object ``made`` says an expression makes
    (``made(expression, scope)``)."""

    def __init__(
        self,
        code: ModuleCode,
        made: Callable[[ast.expr, ast.AST], bool],
        made_first: Callable[[ast.expr, ast.AST], bool] | None = None,
    ) -> None:
        """``made_first``: what makes a tuple whose first item is the object
        (``engine, *_ = deepspeed.initialize(...)``)."""
        self.code = code
        self._made = made
        self._made_first = made_first
        self.places: set[Place] = set()
        #: The keys under which some container of the module holds the object.
        self._keys: set[Keys] = {()}
        self._follow()

    def carries(self, expression: ast.expr, scope: ast.AST) -> bool:
        """Whether ``expression``, read in ``scope``, may hold the object."""
        return self._holds(expression, scope, ())

    def _holds(self, expression: ast.expr, scope: ast.AST, keys: Keys) -> bool:
        """Whether ``expression`` may hold the object under ``keys`` (none: the object
        itself; else a container whose item under those keys is the object)."""
        if not keys and self._made(expression, scope):
            return True
        suffix = _suffix(keys)
        if isinstance(expression, ast.Name):
            if ("name" + suffix, scope, expression.id) in self.places:
                return True
            module = self.code.nodes.module
            return not self.code.binds(scope, expression.id) and (
                ("name" + suffix, module, expression.id) in self.places
            )
        if isinstance(expression, ast.Call):
            found = self.code.callee(expression, scope)
            return found is not None and ("return" + suffix, found[0], "") in self.places
        if isinstance(expression, ast.Attribute):
            place = self._place_of(expression, scope, keys)
            return place is not None and place in self.places
        if isinstance(expression, ast.Subscript) and len(keys) < _KEY_DEPTH:
            key = _constant_key(expression.slice)
            return key is not None and self._holds(expression.value, scope, (key, *keys))
        if isinstance(expression, ast.IfExp):  # either branch: a may-analysis
            return self._holds(expression.body, scope, keys) or self._holds(
                expression.orelse, scope, keys
            )
        if isinstance(expression, ast.BoolOp):  # ``a or b``: any operand's value
            return any(self._holds(value, scope, keys) for value in expression.values)
        if isinstance(expression, ast.Dict) and keys:
            return any(
                self._holds(value, scope, keys[1:])
                for key, value in zip(expression.keys, expression.values, strict=True)
                if key is not None and _constant_key(key) == keys[0]
            )
        return False

    def walks(self) -> Iterator[ast.For | ast.AsyncFor | ast.Call]:
        """The walks over the object, in source order: ``for`` loops, and iterators kept
        to be stepped with ``next`` (``it = iter(loader)``, ``self.it = iter(loader)``;
        not ``next(iter(loader))``, which takes one item)."""
        walks: list[ast.For | ast.AsyncFor | ast.Call] = []
        for scope in self.code.scopes:
            for node in own_nodes(scope):
                walk: ast.For | ast.AsyncFor | ast.Call
                if isinstance(node, (ast.For, ast.AsyncFor)):
                    walk, walked = node, walked_iterable(self.code.names, node.iter)
                elif isinstance(node, ast.Assign) and self._is_iterator(node.value, scope):
                    assert isinstance(node.value, ast.Call)
                    walk, walked = node.value, node.value.args[0]
                else:
                    continue
                if self.carries(walked, scope):
                    walks.append(walk)
        yield from sorted(walks, key=lambda n: (n.lineno, n.col_offset))

    def _is_iterator(self, value: ast.expr, scope: ast.AST) -> bool:
        """``iter(x)``, the builtin (not a name the module or function binds)."""
        return (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "iter"
            and len(value.args) == 1
            and not value.keywords
            and not self._binds_iter(scope)
        )

    @cached_property
    def _module_binds_iter(self) -> bool:
        module = self.code.nodes.module
        return "iter" in self.code.names.imports or any(
            (isinstance(node, ast.Name) and node.id == "iter" and isinstance(node.ctx, ast.Store))
            or (isinstance(node, _FUNCTIONS) and node.name == "iter")
            for node in own_nodes(module)
        )

    def _binds_iter(self, scope: ast.AST) -> bool:
        """Whether ``iter`` read in ``scope`` is not the builtin."""
        in_function = isinstance(scope, _FUNCTIONS) and self.code.binds(scope, "iter")
        return in_function or self._module_binds_iter

    def loops(self) -> Iterator[WalkLoop]:
        """Each walk over the object that an outer loop repeats, with that loop."""
        for walk in self.walks():
            scope = self.code.scope_of(walk)
            outer = self.code.loop_around(walk)
            if outer is not None:
                steps = walk.body if isinstance(walk, ast.For | ast.AsyncFor) else outer.body
                yield WalkLoop(walk, outer, (), tuple(steps))
                continue
            found = self._loop_around_calls(scope, _CALLER_DEPTH, ())
            if found is not None:
                if isinstance(walk, ast.For | ast.AsyncFor):
                    steps = walk.body
                else:  # an iterator made below a call of the loop: that call's function steps it
                    steps = self._called_body(found[1]) or found[0].body
                yield WalkLoop(walk, found[0], found[1], tuple(steps))

    def _called_body(self, calls: tuple[ast.Call, ...]) -> list[ast.stmt] | None:
        """The body of the module function the first of ``calls`` runs when it has a loop
        of its own (``validate(...)`` in the epoch loop, whose own loop steps the
        iterator made below it); None where it has none (``self.refill()``, which only
        makes the iterator the loop around the call steps)."""
        if not calls:
            return None
        found = self.code.callee(calls[0], self.code.scope_of(calls[0]))
        if found is None:
            return None
        body = found[0].body
        loops = (ast.For, ast.AsyncFor, ast.While)
        return body if any(isinstance(n, loops) for n in nodes_within(body)) else None

    def _calls_handing_it(self, scope: Function) -> list[tuple[ast.Call, ast.AST]]:
        """The calls of the function ``scope`` that hand it the object as an argument,
        where some do (a shared helper called with the training loader here and the
        validation loader there walks each only from its own calls); else all of them
        (the object reaches it otherwise: a field, a global)."""
        calls = list(self.code.calls_of(scope))
        handing = [
            (call, caller)
            for call, caller in calls
            if any(
                self.carries(argument, caller)
                for argument in (*call.args, *(k.value for k in call.keywords))
                if not isinstance(argument, ast.Starred)
            )
        ]
        return handing or calls

    def _loop_around_calls(
        self, scope: ast.AST, depth: int, below: tuple[ast.Call, ...]
    ) -> tuple[Loop, tuple[ast.Call, ...]] | None:
        """A loop around a call of the function ``scope`` (or of a caller of it), and
        the calls from there down."""
        if depth == 0 or not isinstance(scope, _FUNCTIONS):
            return None
        calls = self._calls_handing_it(scope)
        for call, _ in calls:
            outer = self.code.loop_around(call)
            if outer is not None:
                return outer, (call, *below)
        for call, caller in calls:
            if caller is scope:
                continue
            found = self._loop_around_calls(caller, depth - 1, (call, *below))
            if found is not None:
                return found
        return None

    def _follow(self) -> None:
        bindings: list[tuple[ast.expr, ast.expr, ast.AST]] = []
        returns: list[tuple[ast.expr, ast.AST]] = []
        displays: list[tuple[ast.Dict, ast.AST]] = []
        for scope in self.code.scopes:
            for node in own_nodes(scope):
                if isinstance(node, ast.Assign) and len(node.targets) == 1:
                    bindings.append((node.targets[0], node.value, scope))
                    self._bind_first_item(node.targets[0], node.value, scope)
                elif isinstance(node, ast.AnnAssign) and node.value is not None:
                    bindings.append((node.target, node.value, scope))
                elif (
                    isinstance(node, ast.Return)
                    and node.value is not None
                    and isinstance(scope, _FUNCTIONS)
                ):
                    returns.append((node.value, scope))
                elif isinstance(node, ast.Dict):
                    displays.append((node, scope))
        for _ in range(_ROUNDS):
            before = (len(self.places), len(self._keys))
            self._keys |= self._keys_of_displays(displays)
            for target, value, scope in bindings:
                self._bind(target, value, scope)
            for value, scope in returns:
                for keys in list(self._keys):
                    if self._holds(value, scope, keys):
                        self.places.add(("return" + _suffix(keys), scope, ""))
            for call, scope in self.code.calls:
                self._hand_to_parameters(call, scope)
            if (len(self.places), len(self._keys)) == before:
                return

    def _keys_of_displays(self, displays: list[tuple[ast.Dict, ast.AST]]) -> set[Keys]:
        """The keys of dict displays that hold the object (``{"train": loader}``)."""
        found: set[Keys] = set()
        for display, scope in displays:
            for key, value in zip(display.keys, display.values, strict=True):
                constant = _constant_key(key) if key is not None else None
                if constant is None:
                    continue
                for keys in list(self._keys):
                    if len(keys) < _KEY_DEPTH and self._holds(value, scope, keys):
                        found.add((constant, *keys))
        return found

    def _bind(self, target: ast.expr, value: ast.expr, scope: ast.AST) -> None:
        """The places ``target = value`` makes hold the object (or a container of it),
        ``target[key] = value`` included."""
        for keys in list(self._keys):
            if not self._holds(value, scope, keys):
                continue
            place_keys, stored = keys, target
            if isinstance(target, ast.Subscript) and len(keys) < _KEY_DEPTH:
                key = _constant_key(target.slice)
                if key is None:
                    continue
                place_keys, stored = (key, *keys), target.value
                self._keys.add(place_keys)
            place = self._place_of(stored, scope, place_keys)
            if place is not None:
                self.places.add(place)

    def _bind_first_item(self, target: ast.expr, value: ast.expr, scope: ast.AST) -> None:
        """``first, *_ = value`` where ``value`` makes a tuple whose first item is the
        object: the first target holds it."""
        if (
            self._made_first is not None
            and isinstance(target, (ast.Tuple, ast.List))
            and target.elts
            and not isinstance(target.elts[0], ast.Starred)
            and self._made_first(value, scope)
        ):
            place = self._place_of(target.elts[0], scope)
            if place is not None:
                self.places.add(place)

    def _hand_to_parameters(self, call: ast.Call, scope: ast.AST) -> None:
        """The parameters of a module function ``call`` hands the object to."""
        found = self.code.callee(call, scope)
        if found is None:
            return
        callee, bound_first = found
        positional = [a.arg for a in callee.args.posonlyargs + callee.args.args]
        if bound_first:
            positional = positional[1:]
        named = set(positional) | {a.arg for a in callee.args.kwonlyargs}
        for keys in list(self._keys):
            kind = "name" + _suffix(keys)
            for position, argument in enumerate(call.args):
                if isinstance(argument, ast.Starred):
                    return
                if position < len(positional) and self._holds(argument, scope, keys):
                    self.places.add((kind, callee, positional[position]))
            for keyword in call.keywords:
                if keyword.arg in named and self._holds(keyword.value, scope, keys):
                    self.places.add((kind, callee, keyword.arg))

    def _place_of(self, target: ast.expr, scope: ast.AST, keys: Keys = ()) -> Place | None:
        suffix = _suffix(keys)
        if isinstance(target, ast.Name):
            return ("name" + suffix, scope, target.id)
        if isinstance(target, ast.Attribute) and _is_instance(target.value, scope):
            owner = self.code.class_of(scope)
            if owner is not None:
                return ("field" + suffix, owner, target.attr)
        return None


def _constant_key(key: ast.expr) -> object:
    """The str or int constant a subscript or a dict display's key spells, else None."""
    if isinstance(key, ast.Constant) and type(key.value) in (str, int):
        return key.value
    return None


def _suffix(keys: Keys) -> str:
    """How a place's kind names the keys it holds the object under."""
    return "".join(f"[{key!r}]" for key in keys)


def _body(scope: ast.AST) -> list[ast.stmt]:
    return list(getattr(scope, "body", []))


def _static(function: Function) -> bool:
    return any(
        isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod")
        for d in function.decorator_list
    )


def _is_instance(expression: ast.expr, scope: ast.AST) -> bool:
    """``expression`` is the instance a method runs on: its first parameter, or a
    parameter called ``self`` (``def _worker(rank, self)`` for ``mp.spawn``)."""
    if not (isinstance(expression, ast.Name) and isinstance(scope, _FUNCTIONS)):
        return False
    names = [a.arg for a in scope.args.posonlyargs + scope.args.args]
    return bool(names) and (
        expression.id == names[0] or (expression.id == "self" and "self" in names)
    )
