"""Tests that the code they guard turns off: once-only flags and re-armed thresholds.

A test runs its guarded code only now and then, whatever it reads, when that code
itself makes the test fail on the next pass:

- once: it tests a flag kept across passes (a field ``self.x``, a global) and sets the
  flag to a value that fails the test (``if not self.ready: ...; self.ready = True``,
  the flag also set at the end of a function the guarded code calls), or it asks
  whether a field exists and makes it (``if not hasattr(self, "table"): self.table =
  ...``); no other method of the module sets the flag back (``__init__`` aside); or,
  asked of a loop (``once_in_loop``), a plain name bound before it that the guarded code
  sets so and no store in the loop sets back (once per run of the loop);
- re-armed: it compares against a threshold or a mark that the guarded code moves on
  (``if step >= next_eval: ...; next_eval += every``, ``if time.time() - last > 60:
  ...; last = time.time()``, ``if elapsed // interval >= saved: ...; saved += 1``).

Only statements the test decides directly count (a store under a further test may not
run); a call of the module's own function counts by the statements of that function's
top level.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from ddplint.analysis.host_waits import walk_own
from ddplint.analysis.module_nodes import ModuleNodes
from ddplint.analysis.names import dotted_name
from ddplint.analysis.single_process import strip_not

Function = ast.FunctionDef | ast.AsyncFunctionDef
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: How many calls deep the guarded code is followed for the store that turns it off.
_CALLS_DEEP = 2


class DisarmingTests:
    """The once-only and re-armed tests of one module."""

    def __init__(
        self, nodes: ModuleNodes, callee_of: Callable[[ast.Call], Function | None] | None
    ) -> None:
        self._nodes = nodes
        self._callee_of = callee_of
        self._stores: dict[str, list[tuple[Function | None, ast.expr | None]]] | None = None

    def stores(self, spelled: str) -> list[tuple[Function | None, ast.expr | None]]:
        """Each store of ``spelled`` (``self.x``, a name) in the module: the function
        that makes it (None at module level) and the value (None when augmented or
        unpacked)."""
        if self._stores is None:
            self._stores = {}
            scopes: list[ast.AST] = [self._nodes.module, *self._nodes.functions()]
            for scope in scopes:
                function = scope if isinstance(scope, _FUNCTIONS) else None
                for node in walk_own(scope):
                    for target, value in _stored(node):
                        if (name := dotted_name(target)) is not None:
                            self._stores.setdefault(name, []).append((function, value))
        return self._stores.get(spelled, [])

    def once(self, test: ast.expr, truth: bool, guarded: list[ast.stmt], scope: ast.AST) -> bool:
        """Taking ``test`` the ``truth`` way runs ``guarded``, which sets the flag the
        test reads to a value that fails it; nothing else in the module sets it back."""
        positive, polarity = strip_not(test)
        holds = polarity == truth  # what ``positive`` is on the way taken
        asked = _flag_question(positive, holds)
        if asked is None:
            return False
        flag, fails = asked
        if not _kept_across_passes(flag, scope):
            return False
        if not any(fails(value) for value in self._stored_by(guarded, flag, _CALLS_DEEP)):
            return False
        return all(
            fails(value)
            for function, value in self.stores(flag)
            if function is not None and function.name != "__init__"
        )

    def once_in_loop(
        self, test: ast.expr, truth: bool, guarded: list[ast.stmt], loop: ast.AST
    ) -> bool:
        """``once`` for a plain name the loop's function keeps across the loop's passes
        (``first = True`` before it): taking ``test`` the ``truth`` way runs
        ``guarded``, which sets the name so that the test fails, and no store inside
        ``loop`` sets it so that the test holds again."""
        positive, polarity = strip_not(test)
        asked = _flag_question(positive, polarity == truth)
        if asked is None or "." in asked[0]:
            return False
        flag, fails = asked
        if not any(fails(value) for value in self._stored_by(guarded, flag, _CALLS_DEEP)):
            return False
        return all(
            fails(value)
            for node in walk_own(loop)
            for target, value in _stored(node)
            if dotted_name(target) == flag
        )

    def rearmed(self, test: ast.expr, truth: bool, guarded: list[ast.stmt]) -> bool:
        """Taking ``test`` the ``truth`` way runs ``guarded``, which moves the threshold
        on (``next_eval += every``) or the mark the elapsed value counts from (``last =
        time.time()``)."""
        positive, polarity = strip_not(test)
        if not (isinstance(positive, ast.Compare) and len(positive.ops) == 1):
            return False
        op = positive.ops[0]
        if not isinstance(op, (ast.Gt, ast.GtE, ast.Lt, ast.LtE)):
            return False
        left, right = positive.left, positive.comparators[0]
        greater, lesser = (left, right) if isinstance(op, (ast.Gt, ast.GtE)) else (right, left)
        if polarity != truth:
            greater, lesser = lesser, greater
        moved = set(_terms(lesser))
        if isinstance(greater, ast.BinOp) and isinstance(greater.op, ast.Sub):
            marks = set(_terms(greater.right))
        else:
            marks = set()
        for statement in guarded:
            for target, value in _stored(statement):
                name = dotted_name(target)
                if name in marks:
                    return True
                if name in moved and (value is None or _beyond(value, name, greater)):
                    return True
        return False

    def _stored_by(
        self, guarded: list[ast.stmt], flag: str, depth: int
    ) -> Iterator[ast.expr | None]:
        """The values ``guarded`` stores in ``flag``, itself or at the top level of a
        function of the module it calls (``depth`` calls deep)."""
        for statement in guarded:
            for target, value in _stored(statement):
                if dotted_name(target) == flag:
                    yield value
            if depth == 0 or self._callee_of is None:
                continue
            for node in walk_own(statement):
                if isinstance(node, ast.Call) and (callee := self._callee_of(node)) is not None:
                    yield from self._stored_by(callee.body, flag, depth - 1)


def _stored(node: ast.AST) -> Iterator[tuple[ast.expr, ast.expr | None]]:
    """The targets a statement stores into, each with its value (None when augmented
    or unpacked); ``setattr(obj, "x", v)`` stores ``obj.x``."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, (ast.Tuple, ast.List)):
                yield from ((part, None) for part in target.elts)
            else:
                yield target, node.value
    elif isinstance(node, ast.AugAssign):
        yield node.target, None
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        yield node.target, node.value
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        call = node.value
        if (
            isinstance(call.func, ast.Name)
            and call.func.id == "setattr"
            and len(call.args) == 3
            and isinstance(call.args[1], ast.Constant)
            and isinstance(call.args[1].value, str)
        ):
            yield ast.Attribute(call.args[0], call.args[1].value, ast.Store()), call.args[2]


#: Whether a stored value (None: augmented or unpacked) makes a flag's test fail.
Fails = Callable[[ast.expr | None], bool]


def _flag_question(positive: ast.expr, holds: bool) -> tuple[str, Fails] | None:
    """The flag ``positive`` reads and which stored values make it answer ``not
    holds``: a flag's truth (``F``), ``F is None`` / ``F == None``, ``hasattr(obj,
    "x")`` (the flag is ``obj.x``: any store makes it exist)."""
    if isinstance(positive, (ast.Name, ast.Attribute)):
        flag = dotted_name(positive)
        if flag is None:
            return None
        return flag, lambda v: isinstance(v, ast.Constant) and bool(v.value) != holds
    if isinstance(positive, ast.Compare) and len(positive.ops) == 1:
        right = positive.comparators[0]
        flag = dotted_name(positive.left)
        if flag is None or not (isinstance(right, ast.Constant) and right.value is None):
            return None
        is_none = isinstance(positive.ops[0], (ast.Is, ast.Eq))
        if not (is_none or isinstance(positive.ops[0], (ast.IsNot, ast.NotEq))):
            return None
        empty_after = is_none != holds  # the store must leave it None
        return flag, lambda v: v is not None and _is_none(v) == empty_after
    if (
        isinstance(positive, ast.Call)
        and isinstance(positive.func, ast.Name)
        and positive.func.id == "hasattr"
        and len(positive.args) == 2
        and isinstance(positive.args[1], ast.Constant)
        and isinstance(positive.args[1].value, str)
        and not holds
        and (owner := dotted_name(positive.args[0])) is not None
    ):
        return f"{owner}.{positive.args[1].value}", lambda v: True
    return None


def _is_none(value: ast.expr) -> bool:
    return isinstance(value, ast.Constant) and value.value is None


def _kept_across_passes(flag: str, scope: ast.AST) -> bool:
    """A field of the method's object (``self.x``), or a module global (read in module
    code, or declared ``global`` in the function)."""
    if isinstance(scope, ast.Module):
        return True
    if not isinstance(scope, _FUNCTIONS):
        return False
    if "." in flag:
        owner = flag.split(".")[0]
        return bool(scope.args.args) and scope.args.args[0].arg == owner and flag.count(".") == 1
    return any(isinstance(n, ast.Global) and flag in n.names for n in walk_own(scope))


def _beyond(value: ast.expr, threshold: str, compared: ast.expr) -> bool:
    """``value`` moves ``threshold`` on past what is compared with it: a sum of the
    threshold itself (``next + every``) or of the compared value and something more
    (``step + every``), not the compared value alone (``best = loss``: a new best)."""
    terms = list(_terms(value))
    return threshold in terms or (len(terms) > 1 and bool(set(_terms(compared)) & set(terms)))


def _terms(expression: ast.expr) -> Iterator[str]:
    """The names and fields a sum or difference is made of (``next_eval``, ``self.k``
    in ``self.k + 1``), or the expression itself when it is one."""
    if isinstance(expression, ast.BinOp) and isinstance(expression.op, (ast.Add, ast.Sub)):
        yield from _terms(expression.left)
        yield from _terms(expression.right)
    elif (spelled := dotted_name(expression)) is not None:
        yield spelled
