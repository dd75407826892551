"""Values decided where they are set: the literal a name or a key holds wherever it is
read, and the tests such values decide before the run.

A *module constant* is a module-level name bound once, by ``NAME = <literal>`` (a
number, string, bool, None, or a tuple of them), and never bound again: no other
binding in module code, no ``global NAME`` in a function, no ``from m import *`` after
it. A *literal dict* is a name bound once in its scope to ``{"key": <literal>, ...}``
(or ``dict(key=<literal>, ...)``) whose every use is seen: a key stays *fixed* unless
something writes it (``d["key"] = ...``, ``d.update(...)``, ``d.pop("key")``); a use
the analysis cannot follow (the dict handed to an unknown call, stored, aliased,
merged with data of unknown keys) leaves every key open. A read in a function sees the
binding only where no scope between binds the name itself.

``decided(test)`` folds ``not``, ``and``/``or`` and comparisons over such values:
``USE_WANDB and is_main`` with ``USE_WANDB = False`` is False on every rank, so its
body never runs; with ``True`` it is as undecided as ``is_main``. Anything else (an
option, an environment read, a config file) stays unknown. Nothing is imported or run.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ddplint.analysis.module_nodes import ModuleNodes
from ddplint.analysis.names import Names

#: What a value is when the analysis cannot tell.
UNKNOWN = object()
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
#: Methods of a dict that only read it.
_READING_METHODS = frozenset({"get", "keys", "values", "items", "copy", "__contains__"})
#: Library calls that read the arguments they are handed and keep no hold on them.
_READING_CALLS = frozenset(
    {
        "print",
        "len",
        "str",
        "repr",
        "format",
        "dict",
        "sorted",
        "isinstance",
        "json.dump",
        "json.dumps",
        "yaml.dump",
        "yaml.safe_dump",
        "pprint.pprint",
        "copy.copy",
        "copy.deepcopy",
        "wandb.init",
    }
)
#: What each comparison operator computes.
COMPARISONS: dict[type[ast.cmpop], Callable[[Any, Any], object]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
    ast.In: lambda a, b: operator.contains(b, a),
    ast.NotIn: lambda a, b: not operator.contains(b, a),
}


def literal(expression: ast.AST | None) -> object:
    """The value of a literal that cannot change (a constant, a tuple of them, a
    negative number), else UNKNOWN."""
    if isinstance(expression, ast.Constant):
        return expression.value
    if isinstance(expression, ast.UnaryOp) and isinstance(expression.op, (ast.USub, ast.Not)):
        inner = literal(expression.operand)
        if inner is UNKNOWN:
            return UNKNOWN
        if isinstance(expression.op, ast.Not):
            return not inner
        return -inner if isinstance(inner, (int, float)) else UNKNOWN
    if isinstance(expression, ast.Tuple):
        items = [literal(e) for e in expression.elts]
        return UNKNOWN if any(i is UNKNOWN for i in items) else tuple(items)
    return UNKNOWN


def scalar_literal(expression: ast.AST | None) -> tuple[object, ...]:
    """``(value,)`` for a literal number, string, bool or None (``-1`` included), ``()``
    for anything else."""
    value = literal(expression)
    scalar = value is not UNKNOWN and isinstance(value, (int, float, str, bool, type(None)))
    return (value,) if scalar else ()


@dataclass
class _Scope:
    """One scope's own bindings: names stored, declared global / nonlocal."""

    node: ast.AST
    parent: _Scope | None
    stores: dict[str, list[ast.AST]] = field(default_factory=dict)
    declared: set[str] = field(default_factory=set)

    def binds(self, name: str) -> bool:
        return name in self.stores or name in self.declared


@dataclass
class _LiteralDict:
    """A name bound once to a dict literal: its keys' literals, the keys written later,
    and whether some use leaves every key open."""

    binding: ast.Assign
    scope: _Scope
    entries: dict[str, object]
    written: set[str] = field(default_factory=set)
    open: bool = False

    def fixed(self, key: str) -> object:
        if self.open or key in self.written:
            return UNKNOWN
        return self.entries.get(key, UNKNOWN)


class LiteralValues:
    """The values decided where they are set in one module, and the tests they decide."""

    def __init__(
        self, module: ast.Module, names: Names | None = None, nodes: ModuleNodes | None = None
    ) -> None:
        self._module = module
        self._names = names or Names(module)
        self._nodes = nodes or ModuleNodes(module)
        #: Names a read of which may have a value: bound at module level to a literal,
        #: or anywhere to a dict literal with keys. Nothing else needs the scopes below.
        self._candidates = {
            target.id
            for statement in module.body
            if isinstance(statement, (ast.Assign, ast.AnnAssign))
            and literal(statement.value) is not UNKNOWN
            for target in _plain_targets(statement)
        } | {
            target.id
            for statement in self._nodes.of_type(ast.Assign)
            if _dict_entries(statement.value, self._names)
            for target in _plain_targets(statement)
        }
        self._parents: dict[ast.AST, ast.AST] = {}
        self._scope_of: dict[ast.AST, _Scope] = {}
        self._scopes: list[_Scope] = []
        self._decided: dict[ast.AST, bool | None] = {}

    @cached_property
    def _constants(self) -> dict[str, object]:
        self._build_scopes()
        return self._module_constants()

    @cached_property
    def _dicts(self) -> dict[ast.Assign, _LiteralDict]:
        _ = self._constants  # the scopes
        return self._literal_dicts()

    def _holds_candidate(self, name: ast.expr) -> bool:
        return isinstance(name, ast.Name) and name.id in self._candidates

    # -- scopes ---------------------------------------------------------------------

    def _build_scopes(self) -> None:
        root = _Scope(self._module, None)
        self._scopes.append(root)
        pending: list[tuple[ast.AST, _Scope]] = [(self._module, root)]
        while pending:
            node, scope = pending.pop()
            for child in ast.iter_child_nodes(node):
                self._parents[child] = node
                inner = scope
                if isinstance(child, _SCOPES):
                    if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        scope.stores.setdefault(child.name, []).append(child)
                    inner = _Scope(child, scope)
                    self._scopes.append(inner)
                    _bind_parameters(child, inner)
                self._scope_of[child] = inner
                _record_binding(child, scope if inner is scope else inner)
                pending.append((child, inner))

    def _module_constants(self) -> dict[str, object]:
        root = self._scopes[0]
        globals_written = {n for s in self._scopes[1:] for n in s.declared}
        last_star = max(
            (
                n.lineno
                for n in self._nodes.of_type(ast.ImportFrom)
                if any(a.name == "*" for a in n.names)
            ),
            default=0,
        )
        found: dict[str, object] = {}
        for name, bindings in root.stores.items():
            if len(bindings) != 1 or name in globals_written:
                continue
            (binding,) = bindings
            statement = self._parents.get(binding)
            if not isinstance(statement, (ast.Assign, ast.AnnAssign)):
                continue
            if isinstance(statement, ast.Assign) and statement.targets != [binding]:
                continue
            value = literal(statement.value)
            if value is not UNKNOWN and statement.lineno > last_star:
                found[name] = value
        return found

    def _literal_dicts(self) -> dict[ast.Assign, _LiteralDict]:
        declared = {n for s in self._scopes[1:] for n in s.declared}
        found: dict[ast.Assign, _LiteralDict] = {}
        for scope in self._scopes:
            for name, bindings in scope.stores.items():
                if len(bindings) != 1 or name in declared:
                    continue
                statement = self._parents.get(bindings[0])
                if not isinstance(statement, ast.Assign) or statement.targets != bindings:
                    continue
                entries = _dict_entries(statement.value, self._names)
                if entries is not None:
                    found[statement] = _LiteralDict(statement, scope, entries)
        if not found:
            return found
        wanted = {_bound_name(d.binding) for d in found.values()}
        for node in self._nodes.of_type(ast.Name):
            if node.id in wanted and isinstance(node.ctx, ast.Load):
                held = self._dict_read(node, found)
                if held is not None:
                    self._record_use(held, node)
        return found

    def _dict_read(
        self, name: ast.Name, dicts: dict[ast.Assign, _LiteralDict]
    ) -> _LiteralDict | None:
        """The literal dict a read of ``name`` sees, if any."""
        binding = self._binding_scope(name)
        stored = binding.stores.get(name.id, []) if binding is not None else []
        statement = self._parents.get(stored[0]) if len(stored) == 1 else None
        return dicts.get(statement) if isinstance(statement, ast.Assign) else None

    def _binding_scope(self, name: ast.Name) -> _Scope | None:
        """The scope whose binding of ``name.id`` a read sees (class bodies are skipped
        from the functions inside them), None for a builtin or an unbound name."""
        scope: _Scope | None = self._scope_of.get(name)
        first = True
        while scope is not None:
            skipped = not first and isinstance(scope.node, ast.ClassDef)
            if not skipped and scope.binds(name.id):
                if name.id in scope.declared and scope.parent is not None:
                    return self._scopes[0] if name.id in self._scopes[0].stores else None
                return scope
            scope, first = scope.parent, False
        return None

    def _record_use(self, held: _LiteralDict, use: ast.Name) -> None:
        parent = self._parents.get(use)
        if isinstance(parent, ast.Subscript) and parent.value is use:
            if isinstance(parent.ctx, ast.Load):
                return
            key = literal(parent.slice)
            if isinstance(key, str):
                held.written.add(key)
            else:
                held.open = True
            return
        if isinstance(parent, ast.Attribute) and parent.value is use:
            call = self._parents.get(parent)
            if parent.attr in _READING_METHODS:
                return
            if isinstance(call, ast.Call) and call.func is parent:
                if parent.attr == "setdefault":
                    return  # an existing key keeps its value
                keys = _written_keys(parent.attr, call)
                if keys is not None:
                    held.written |= keys
                    return
            held.open = True
            return
        if isinstance(parent, ast.Compare) and use in parent.comparators:
            return  # ``key in d``
        if isinstance(parent, (ast.keyword, ast.Dict)) and _spread(parent, use):
            return  # ``f(**d)``, ``{**d}``: a copy
        if isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is use:
            return
        if isinstance(parent, ast.FormattedValue):
            return
        if isinstance(parent, ast.keyword):
            parent = self._parents.get(parent)
        if (
            isinstance(parent, ast.Call)
            and parent.func is not use
            and self._names.resolve(parent.func) in _READING_CALLS
        ):
            return
        held.open = True

    # -- questions --------------------------------------------------------------------

    def value(self, expression: ast.AST) -> object:
        """The literal ``expression`` holds wherever it is read, else UNKNOWN: a
        constant, a module constant, a fixed key of a literal dict (``d["k"]``,
        ``d.get("k")``)."""
        if isinstance(expression, ast.Name) and isinstance(expression.ctx, ast.Load):
            if not self._holds_candidate(expression) or expression.id not in self._constants:
                return UNKNOWN
            scope = self._binding_scope(expression)
            return self._constants[expression.id] if scope is self._scopes[0] else UNKNOWN
        if isinstance(expression, ast.Subscript) and isinstance(expression.value, ast.Name):
            key = literal(expression.slice)
            held = self._dict_of(expression.value)
            return held.fixed(key) if held is not None and isinstance(key, str) else UNKNOWN
        if (
            isinstance(expression, ast.Call)
            and isinstance(expression.func, ast.Attribute)
            and expression.func.attr == "get"
            and isinstance(expression.func.value, ast.Name)
            and expression.args
            and not expression.keywords
        ):
            key = literal(expression.args[0])
            held = self._dict_of(expression.func.value)
            if held is None or not isinstance(key, str) or held.open or key in held.written:
                return UNKNOWN
            if key in held.entries:
                return held.entries[key]
            return literal(expression.args[1]) if len(expression.args) > 1 else None
        return literal(expression)

    def _dict_of(self, name: ast.Name) -> _LiteralDict | None:
        if (
            not self._holds_candidate(name)
            or not self._dicts
            or name not in self._parents
            or not isinstance(name.ctx, ast.Load)
        ):
            return None
        return self._dict_read(name, self._dicts)

    def decided(self, test: ast.AST) -> bool | None:
        """True / False when literal values decide ``test`` on every run, else None."""
        if test not in self._decided:
            self._decided[test] = self._fold(test)
        return self._decided[test]

    def _fold(self, test: ast.AST) -> bool | None:
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self._fold(test.operand)
            return None if inner is None else not inner
        if isinstance(test, ast.BoolOp):
            deciding = isinstance(test.op, ast.Or)
            values = [self._fold(v) for v in test.values]
            if deciding in values:
                return deciding
            return (not deciding) if all(v is not None for v in values) else None
        if isinstance(test, ast.Compare):
            operands = [self.value(test.left), *(self.value(c) for c in test.comparators)]
            if any(o is UNKNOWN for o in operands):
                return None
            try:
                return all(
                    bool(COMPARISONS[type(op)](left, right))
                    for op, left, right in zip(test.ops, operands, operands[1:], strict=False)
                )
            except (TypeError, ValueError, KeyError):
                return None
        found = self.value(test)
        return None if found is UNKNOWN else bool(found)

    def expressions(self) -> Iterator[ast.expr]:
        """The reads whose value is a literal wherever they run (names, subscripts,
        ``.get`` calls), for callers that look nodes up by position."""
        for kind in (ast.Name, ast.Subscript, ast.Call):
            yield from (n for n in self._nodes.of_type(kind) if self.value(n) is not UNKNOWN)

    def _branches(self) -> list[ast.If | ast.While]:
        return [*self._nodes.of_type(ast.If), *self._nodes.of_type(ast.While)]

    def never_taken(self) -> Iterator[list[ast.stmt]]:
        """The arms no run takes: the body of an ``if`` / ``while`` whose test is
        decided False, the ``else`` of an ``if`` decided True."""
        for node in self._branches():
            decision = self.decided(node.test)
            if decision is False:
                yield node.body
            elif decision is True and isinstance(node, ast.If) and node.orelse:
                yield node.orelse


def _plain_targets(statement: ast.Assign | ast.AnnAssign) -> list[ast.Name]:
    """The target of ``name = value`` (one name, no unpacking, no chain)."""
    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
    return [targets[0]] if len(targets) == 1 and isinstance(targets[0], ast.Name) else []


def _bound_name(binding: ast.Assign) -> str:
    target = binding.targets[0]
    return target.id if isinstance(target, ast.Name) else ""


def _bind_parameters(scope_node: ast.AST, scope: _Scope) -> None:
    arguments = getattr(scope_node, "args", None)
    if not isinstance(arguments, ast.arguments):
        return
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    for parameter in every:
        scope.stores.setdefault(parameter.arg, []).append(parameter)


def _record_binding(node: ast.AST, scope: _Scope) -> None:
    """Note what ``node`` binds in ``scope`` (a comprehension's targets bind in it too:
    conservative, never a missed binding)."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        scope.stores.setdefault(node.id, []).append(node)
    elif isinstance(node, (ast.Global, ast.Nonlocal)):
        scope.declared.update(node.names)
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            local = alias.asname or alias.name.split(".", 1)[0]
            scope.stores.setdefault(local, []).append(node)
    elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
        scope.stores.setdefault(node.name, []).append(node)
    elif isinstance(node, ast.MatchMapping) and node.rest:
        scope.stores.setdefault(node.rest, []).append(node)


def _dict_entries(value: ast.AST, names: Names) -> dict[str, object] | None:
    """Key -> literal (UNKNOWN where not one) of ``{"k": v}`` / ``dict(k=v)`` with every
    key spelled, else None."""
    pairs: list[tuple[object, ast.AST]] = []
    if isinstance(value, ast.Dict):
        if any(k is None for k in value.keys):
            return None
        pairs = [(literal(k), v) for k, v in zip(value.keys, value.values, strict=False)]
    elif isinstance(value, ast.Call) and names.resolve(value.func) == "dict" and not value.args:
        if any(k.arg is None for k in value.keywords):
            return None
        pairs = [(k.arg, k.value) for k in value.keywords]
    else:
        return None
    if not all(isinstance(k, str) for k, _ in pairs):
        return None
    return {str(k): literal(v) for k, v in pairs}


def _written_keys(method: str, call: ast.Call) -> set[str] | None:
    """The keys a mutating method call writes, when it says which (``update`` with a
    dict literal or keywords, ``pop("k")``); None when it may write any."""
    if method == "update":
        keys = {k.arg for k in call.keywords if k.arg is not None}
        if any(k.arg is None for k in call.keywords) or len(call.args) > 1:
            return None
        if call.args:
            (given,) = call.args
            if not isinstance(given, ast.Dict) or any(k is None for k in given.keys):
                return None
            spelled = [literal(k) for k in given.keys]
            if not all(isinstance(k, str) for k in spelled):
                return None
            keys |= {str(k) for k in spelled}
        return keys
    if method == "pop" and call.args:
        key = literal(call.args[0])
        return {key} if isinstance(key, str) else None
    return None


def _spread(holder: ast.AST, use: ast.Name) -> bool:
    if isinstance(holder, ast.keyword):
        return holder.arg is None and holder.value is use
    if isinstance(holder, ast.Dict):
        return any(k is None and v is use for k, v in zip(holder.keys, holder.values, strict=False))
    return False
