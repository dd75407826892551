"""Work handles of asynchronous collectives: where one is not waited before it matters.

A ``torch.distributed`` collective issued with ``async_op=True`` (and every ``isend`` /
``irecv``, and the list ``batch_isend_irecv`` returns) hands back a work handle; its
output tensor holds the result only once the handle is waited. ``unwaited_handles``
follows each handle forward along the control-flow graph (a may-analysis: some path
suffices) and answers where it is still pending when

- the output tensor is used (read too early: numbers from before the collective);
- the name holding it is bound again (a loop keeps only the last handle);
- the function returns, or, for a handle never bound at all, at any point.

A handle is *settled* by ``h.wait()``; a list of handles by ``for w in works: w.wait()``
or ``[w.wait() for w in works]`` (handles reach a list by ``works.append(h)``,
``works.append(dist.isend(...))`` or a comprehension of async calls); a test
``h is None`` settles its own branch (a rank outside the group gets None), and a test
that repeats one the handle was issued under (``if overlap:`` ... ``if overlap:
h.wait()``) takes the same branch;
``torch.cuda.synchronize()`` and a blocking ``barrier()`` (NCCL runs a group's
collectives in order) settle everything. A handle that *escapes* (returned,
stored on an object or in a dict, passed to a function, ``.get_future()``, used by a
nested function) is someone else's to wait: it is dropped, and nothing is said.

Calls count by their resolved name (``names``), never by how the module spells them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, replace
from enum import Enum

from ddplint.analysis.api import TORCH_DIST_MODULES
from ddplint.analysis.control_flow import SCOPE_TYPES, EdgeKind, Graph, Node, NodeKind, Scope
from ddplint.analysis.dominance import PostDominance, decision_successors
from ddplint.analysis.effects import header_parts
from ddplint.analysis.functions import Facts, ModuleAnalysis, condition_fact, path_facts
from ddplint.analysis.names import Names, call_argument, dotted_name

#: Where each function takes ``async_op`` positionally, and its output tensor (position,
#: keyword; None: it writes nothing this rank reads).
_ASYNC_POSITION: dict[str, int] = {
    "all_reduce": 3,
    "all_reduce_coalesced": 3,
    "broadcast": 3,
    "reduce": 4,
    "all_gather": 3,
    "all_gather_into_tensor": 3,
    "all_gather_coalesced": 3,
    "reduce_scatter": 4,
    "reduce_scatter_tensor": 4,
    "all_to_all": 3,
    "all_to_all_single": 5,
    "gather": 4,
    "scatter": 4,
    "barrier": 1,
}
_OUTPUTS: dict[str, tuple[int, str]] = {
    "all_reduce": (0, "tensor"),
    "all_reduce_coalesced": (0, "tensors"),
    "broadcast": (0, "tensor"),
    "reduce": (0, "tensor"),
    "all_gather": (0, "tensor_list"),
    "all_gather_into_tensor": (0, "output_tensor"),
    "all_gather_coalesced": (0, "output_tensor_lists"),
    "reduce_scatter": (0, "output"),
    "reduce_scatter_tensor": (0, "output"),
    "all_to_all": (0, "output_tensor_list"),
    "all_to_all_single": (0, "output"),
    "gather": (1, "gather_list"),
    "scatter": (0, "tensor"),
    "irecv": (0, "tensor"),
}
#: Point-to-point calls that always return a handle.
_ALWAYS_ASYNC = frozenset({"isend", "irecv"})
#: Calls that return a list of handles.
_HANDLE_LISTS = frozenset({"batch_isend_irecv"})
#: Calls that wait for every kernel of the device, collectives included.
_DEVICE_WAITS = frozenset({"torch.cuda.synchronize"})
#: A blocking barrier: NCCL runs a group's collectives in order, so it ends after them.
_BARRIERS = frozenset(f"{module}.barrier" for module in TORCH_DIST_MODULES)
_LIST_SCOPES = (ast.ListComp, ast.GeneratorExp, ast.SetComp)
#: What a tensor tells without its contents: reading these is no use of the result.
_METADATA = frozenset(
    {"shape", "size", "dtype", "device", "numel", "dim", "ndim", "is_cuda", "element_size"}
)


class Pending(str, Enum):
    """Where a handle's pending state is found out."""

    READ = "read"  # its output tensor is used before the wait
    REBOUND = "rebound"  # the name holding it is bound again before the wait
    UNWAITED = "unwaited"  # the function ends with it not waited
    DISCARDED = "discarded"  # never bound: nothing can wait it


@dataclass(frozen=True)
class AsyncCall:
    """An asynchronous collective: ``name`` (``all_reduce``), its output tensor as the
    code spells it (None if none), and whether it returns a list of handles."""

    call: ast.Call
    name: str
    output: str | None
    returns_list: bool = False

    @property
    def line(self) -> int:
        return self.call.lineno


@dataclass(frozen=True)
class UnwaitedHandle:
    """``issued``'s handle is still pending at ``at`` (line ``line``) for ``how``;
    ``holder`` is the name holding it (None: discarded)."""

    function: Scope
    issued: AsyncCall
    how: Pending
    at: ast.AST | None
    line: int
    holder: str | None


@dataclass(frozen=True)
class _Fact:
    issued: AsyncCall
    holder: str | None  # a handle's name, a list's name, or None when discarded
    output: str | None  # the output tensor while the name still holds it
    guard: Facts = frozenset()  # the plain-name tests that held where it was issued


def async_call(call: ast.Call, names: Names) -> AsyncCall | None:
    """The asynchronous collective ``call`` issues, if it is one."""
    resolved = names.resolve(call.func)
    module, _, function = (resolved or "").rpartition(".")
    if module not in TORCH_DIST_MODULES:
        return None
    if function in _HANDLE_LISTS:
        return AsyncCall(call, function, None, returns_list=True)
    if function not in _ALWAYS_ASYNC and not _async_requested(call, function):
        return None
    return AsyncCall(call, function, _output(call, function))


def _async_requested(call: ast.Call, function: str) -> bool:
    position = _ASYNC_POSITION.get(function)
    if position is None:
        return False
    value: ast.expr | None = None
    for keyword in call.keywords:
        if keyword.arg == "async_op":
            value = keyword.value
    if value is None and len(call.args) > position:
        value = call.args[position]
    return isinstance(value, ast.Constant) and value.value is True


def _output(call: ast.Call, function: str) -> str | None:
    if function not in _OUTPUTS:
        return None
    value = call_argument(call, *_OUTPUTS[function])
    while isinstance(value, ast.Subscript):  # a slice of a buffer is the buffer
        value = value.value
    return dotted_name(value) if value is not None else None


# -- what a node does to names ---------------------------------------------------------


def _evaluated(node: ast.AST) -> Iterator[ast.AST]:
    """The expression nodes a graph node evaluates in its own scope: a comprehension's
    first iterable is, its element and a lambda's body are not."""
    pending = list(header_parts(node))
    while pending:
        current = pending.pop()
        yield current
        if isinstance(current, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(current, (*_LIST_SCOPES, ast.DictComp)):
            pending.append(current.generators[0].iter)
            continue
        pending.extend(
            child for child in ast.iter_child_nodes(current) if not isinstance(child, ast.stmt)
        )


def _bound(statement: ast.AST, kind: NodeKind) -> set[str]:
    """The names (dotted for attributes) a node binds."""
    targets: list[ast.AST] = []
    if kind is NodeKind.STEP and isinstance(statement, (ast.For, ast.AsyncFor)):
        targets.append(statement.target)
    elif isinstance(statement, ast.Assign):
        targets.extend(statement.targets)
    elif isinstance(statement, (ast.AugAssign, ast.AnnAssign)):
        targets.append(statement.target)
    elif isinstance(statement, (ast.With, ast.AsyncWith)):
        targets.extend(item.optional_vars for item in statement.items if item.optional_vars)
    elif isinstance(statement, ast.Delete):
        targets.extend(statement.targets)
    elif isinstance(statement, ast.ExceptHandler):
        return {statement.name} if statement.name else set()
    elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    bound: set[str] = set()
    for target in targets:
        for part in ast.walk(target):
            if isinstance(part, (ast.Name, ast.Attribute)) and isinstance(
                part.ctx, (ast.Store, ast.Del)
            ):
                spelled = dotted_name(part)
                if spelled is not None:
                    bound.add(spelled)
    for part in _evaluated(statement):
        if isinstance(part, ast.NamedExpr):
            bound.add(part.target.id)
    return bound


def _waited_element(element: ast.expr, target: ast.expr) -> bool:
    """``w.wait()`` where ``w`` is the loop's target."""
    return (
        isinstance(element, ast.Call)
        and isinstance(element.func, ast.Attribute)
        and element.func.attr == "wait"
        and isinstance(target, ast.Name)
        and isinstance(element.func.value, ast.Name)
        and element.func.value.id == target.id
    )


def _loop_waits_each(loop: ast.For | ast.AsyncFor) -> bool:
    """Whether the loop's body waits each item it takes (``for w in works: w.wait()``)."""
    for statement in loop.body:
        for part in ast.walk(statement):
            if isinstance(part, ast.Call) and _waited_element(part, loop.target):
                return True
    return False


def _indexed_in_loop(loop: ast.For | ast.AsyncFor, holders: set[str]) -> set[str]:
    """Lists of handles the loop's body takes items of (``for i in range(n):
    works[i].wait()``): the loop handles them, also when it runs no trip (no items)."""
    found: set[str] = set()
    for statement in loop.body:
        for part in ast.walk(statement):
            if (
                isinstance(part, ast.Subscript)
                and isinstance(part.value, ast.Name)
                and part.value.id in holders
            ):
                found.add(part.value.id)
    return found


class _Uses:
    """What one graph node does with the names that hold handles: which it waits,
    which escape, which it only looks at, which lists it appends handles to."""

    def __init__(self, node: Node, holders: set[str], names: Names) -> None:
        self.waited: set[str] = set()
        self.escaped: set[str] = set()
        self.appended: dict[str, str] = {}  # handle -> list it is appended to
        self.touched: set[str] = set()  # every dotted chain loaded (for outputs)
        statement = node.statement
        assert statement is not None
        if (
            node.kind is NodeKind.STEP
            and isinstance(statement, (ast.For, ast.AsyncFor))
            and isinstance(statement.iter, ast.Name)
            and _loop_waits_each(statement)
        ):
            self.waited.add(statement.iter.id)
        if node.kind is NodeKind.STEP and isinstance(statement, (ast.For, ast.AsyncFor)):
            self.waited |= _indexed_in_loop(statement, holders)
        parents: dict[ast.AST, ast.AST] = {}
        parts = list(_evaluated(statement))
        for part in parts:
            for child in ast.iter_child_nodes(part):
                parents[child] = part
        handed = _not_reads(parts, names)
        for part in parts:
            if (
                isinstance(part, (ast.Name, ast.Attribute))
                and isinstance(part.ctx, ast.Load)
                and not isinstance(parents.get(part), ast.Attribute)
                and part not in handed
                and (spelled := dotted_name(part)) is not None
            ):
                self.touched.add(spelled)
            if isinstance(part, ast.Name) and part.id in holders:
                self._use(part, parents, statement)

    def _use(self, name: ast.Name, parents: dict[ast.AST, ast.AST], statement: ast.AST) -> None:
        holder = name.id
        parent = parents.get(name)
        if isinstance(name.ctx, (ast.Store, ast.Del)):
            return
        if isinstance(parent, ast.Attribute):
            call = parents.get(parent)
            if isinstance(call, ast.Call) and call.func is parent:
                if parent.attr == "wait":
                    self.waited.add(holder)
                    return
                if parent.attr in ("is_completed", "append", "extend"):
                    return
            self.escaped.add(holder)
            return
        if _only_tested(name, parent, statement):
            return
        if isinstance(parent, ast.Call) and parent.args == [name] and not parent.keywords:
            receiver = parent.func
            if (
                isinstance(receiver, ast.Attribute)
                and receiver.attr == "append"
                and isinstance(receiver.value, ast.Name)
            ):
                self.appended[holder] = receiver.value.id
                return
            if isinstance(receiver, ast.Name) and receiver.id == "len":
                return
        if isinstance(parent, _LIST_SCOPES) and parent.generators[0].iter is name:
            generator = parent.generators[0]
            element = parent.elt
            if len(parent.generators) == 1 and _waited_element(element, generator.target):
                self.waited.add(holder)
                return
        loop = isinstance(statement, (ast.For, ast.AsyncFor)) and statement.iter is name
        if not (loop and holder in self.waited):
            self.escaped.add(holder)


def _not_reads(parts: list[ast.AST], names: Names) -> set[ast.AST]:
    """The nodes inside the arguments of ``torch.distributed`` calls (a tensor handed
    to the next collective: a group runs its collectives in order) and of ``len()``
    (a list's length is known before its tensors are filled)."""
    handed: set[ast.AST] = set()
    for part in parts:
        if not isinstance(part, ast.Call):
            continue
        resolved = names.resolve(part.func) or ""
        if resolved.rpartition(".")[0] in TORCH_DIST_MODULES or resolved == "len":
            for argument in [*part.args, *(k.value for k in part.keywords)]:
                handed.update(ast.walk(argument))
    return handed


def _only_tested(name: ast.Name, parent: ast.AST | None, statement: ast.AST) -> bool:
    """``h is None``, ``h is not None``, ``if h:``, ``not h``: a look, not a use."""
    if isinstance(parent, ast.Compare):
        return all(isinstance(op, (ast.Is, ast.IsNot)) for op in parent.ops) and any(
            isinstance(c, ast.Constant) and c.value is None for c in parent.comparators
        )
    if isinstance(parent, (ast.BoolOp, ast.UnaryOp)):
        return True
    return isinstance(statement, (ast.If, ast.While, ast.Assert)) and statement.test is name


def _none_edge(node: Node) -> tuple[str, EdgeKind] | None:
    """(name, the edge taken when it is None) for a test on a handle's None-ness."""
    statement = node.statement
    if node.kind is not NodeKind.TEST or not isinstance(statement, (ast.If, ast.While)):
        return None
    test = statement.test
    negated = False
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, negated = test.operand, not negated
    if isinstance(test, ast.Name):
        edge = EdgeKind.TRUE if negated else EdgeKind.FALSE
        return test.id, edge
    if (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and len(test.ops) == 1
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    ):
        is_none = isinstance(test.ops[0], ast.Is) != negated
        return test.left.id, EdgeKind.TRUE if is_none else EdgeKind.FALSE
    return None


def _captured(scope: Scope) -> set[str]:
    """Names a nested function, lambda or comprehension of ``scope`` reads from it, and
    names it declares ``global`` / ``nonlocal``: handles held there are not followed."""
    found: set[str] = set()
    for node in ast.walk(scope):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            found.update(node.names)
        if node is scope or not isinstance(node, SCOPE_TYPES):
            continue
        inside = list(_inside(node))
        loaded = {n.id for n in inside if isinstance(n, ast.Name)}
        own = {n.id for n in inside if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            own |= {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
        found |= loaded - own
    return found


def _inside(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a nested scope that run in it (a comprehension's first iterable runs
    in the scope around it)."""
    skipped = scope.generators[0].iter if isinstance(scope, (*_LIST_SCOPES, ast.DictComp)) else None
    pending = [scope]
    while pending:
        current = pending.pop()
        if current is skipped:
            continue
        yield current
        pending.extend(ast.iter_child_nodes(current))


# -- the analysis ----------------------------------------------------------------------


class _HandleFlow:
    """The pending handles of one scope, forward over its graph to a fixed point."""

    def __init__(self, scope: Scope, graph: Graph, names: Names) -> None:
        self.scope = scope
        self.graph = graph
        self.names = names
        self.captured = _captured(scope)
        self.dominance = PostDominance(graph)
        self.issued: dict[int, list[tuple[AsyncCall, str | None]]] = {}
        self.findings: dict[ast.Call, UnwaitedHandle] = {}
        for node in graph.nodes:
            if node.statement is not None and node.kind is NodeKind.STATEMENT:
                found = list(self._issued_at(node.statement))
                if found:
                    self.issued[node.index] = found
        self.holders = {h for found in self.issued.values() for _, h in found if h is not None}
        self.holders |= _lists_appended_to(scope, self.holders) - self.captured

    def _issued_at(self, statement: ast.AST) -> Iterator[tuple[AsyncCall, str | None]]:
        """Handles a statement makes, and the name that holds each (None: discarded);
        a handle put anywhere else escapes at birth and is not followed."""
        value: ast.expr | None = None
        holder: str | None = None
        if isinstance(statement, ast.Expr):
            value = statement.value
            appended = _appended_call(value)
            if appended is not None:
                value, holder = appended
        elif (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            value, holder = statement.value, statement.targets[0].id
            if holder == "_":  # bound to the throwaway name: discarded
                holder = None
            if holder in self.captured:
                return
            if isinstance(value, _LIST_SCOPES) and len(value.generators) == 1:
                element = _future_of(value.elt)
                made = async_call(element, self.names) if isinstance(element, ast.Call) else None
                if made is not None and not made.returns_list:
                    yield replace(made, output=None), holder
                return
        if not isinstance(value, ast.Call) or holder in self.captured:
            return
        handle = _future_of(value)
        made = async_call(handle, self.names) if isinstance(handle, ast.Call) else None
        if made is not None and not (holder is None and made.returns_list):
            yield made, holder

    def solve(self) -> list[UnwaitedHandle]:
        facts_in: dict[int, frozenset[_Fact]] = {self.graph.entry.index: frozenset()}
        pending = [self.graph.entry]
        while pending:
            node = pending.pop()
            out = self._transfer(node, facts_in[node.index], report=False)
            for successor, edge in decision_successors(node):
                carried = self._along(node, edge, out)
                before = facts_in.get(successor.index)
                merged = carried if before is None else before | carried
                if merged != before:
                    facts_in[successor.index] = merged
                    pending.append(successor)
        for node in self.graph.nodes:
            if node.index in facts_in:
                self._transfer(node, facts_in[node.index], report=True)
        return sorted(self.findings.values(), key=lambda f: (f.issued.line, f.line))

    def _along(self, node: Node, edge: EdgeKind, facts: frozenset[_Fact]) -> frozenset[_Fact]:
        """The facts that go along ``edge``: a handle is None on its None edge, and a
        test repeating one that held where the handle was issued takes the same way."""
        tested = _none_edge(node)
        if tested is not None and edge is tested[1]:
            facts = frozenset(f for f in facts if f.holder != tested[0])
        statement = node.statement
        if node.kind is NodeKind.TEST and isinstance(statement, (ast.If, ast.While)):
            decided = condition_fact(statement.test)
            if decided is not None and edge in (EdgeKind.TRUE, EdgeKind.FALSE):
                name, truth = decided
                value = truth if edge is EdgeKind.TRUE else not truth
                facts = frozenset(f for f in facts if (name, not value) not in f.guard)
        return facts

    def _transfer(self, node: Node, facts: frozenset[_Fact], report: bool) -> frozenset[_Fact]:
        if node.kind is NodeKind.EXIT:
            if report:
                for fact in facts:
                    how = Pending.UNWAITED if fact.holder is not None else Pending.DISCARDED
                    self._report(fact, how, None, node.line)
            return facts
        statement = node.statement
        if statement is None or node.kind not in (NodeKind.STATEMENT, NodeKind.TEST, NodeKind.STEP):
            return facts
        if any(self._settles_all(part) for part in _evaluated(statement)):
            return frozenset()
        uses = _Uses(node, self.holders, self.names)
        bound = _bound(statement, node.kind)
        kept: set[_Fact] = set()
        for fact in facts:
            holder = fact.holder
            if holder in uses.waited or holder in uses.escaped:
                continue
            if holder is not None and holder in bound and holder not in uses.appended:
                if report:
                    self._report(fact, Pending.REBOUND, statement, node.line)
                continue
            if fact.output is not None and _touches(uses.touched, fact.output) and report:
                self._report(fact, Pending.READ, statement, node.line)
            if holder in uses.appended:
                fact = replace(fact, holder=uses.appended[holder])
            if fact.output is not None and any(_within(fact.output, b) for b in bound):
                fact = replace(fact, output=None)
            kept.add(fact)
        for issued, holder in self.issued.get(node.index, []):
            kept.add(_Fact(issued, holder, issued.output, path_facts(node, self.dominance)))
        return frozenset(kept)

    def _settles_all(self, part: ast.AST) -> bool:
        """``torch.cuda.synchronize()``, or a blocking ``barrier()``."""
        if not isinstance(part, ast.Call):
            return False
        resolved = self.names.resolve(part.func)
        if resolved in _DEVICE_WAITS:
            return True
        return resolved in _BARRIERS and async_call(part, self.names) is None

    def _report(self, fact: _Fact, how: Pending, at: ast.AST | None, line: int) -> None:
        found = UnwaitedHandle(self.scope, fact.issued, how, at, line, fact.holder)
        earlier = self.findings.get(fact.issued.call)
        if earlier is None or _rank(found) < _rank(earlier):
            self.findings[fact.issued.call] = found


def _rank(found: UnwaitedHandle) -> tuple[int, int]:
    order = (Pending.READ, Pending.REBOUND, Pending.DISCARDED, Pending.UNWAITED)
    return order.index(found.how), found.line


def _append_of(node: ast.AST) -> tuple[str, ast.expr] | None:
    """(list, item) for ``works.append(item)``."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "append"
        and isinstance(node.func.value, ast.Name)
        and len(node.args) == 1
    ):
        return node.func.value.id, node.args[0]
    return None


def _lists_appended_to(scope: Scope, holders: set[str]) -> set[str]:
    """Names of lists that ``works.append(h)`` hands a handle to."""
    found: set[str] = set()
    for node in ast.walk(scope):
        appended = _append_of(node)
        if appended is not None and (
            isinstance(appended[1], ast.Name) and appended[1].id in holders
        ):
            found.add(appended[0])
    return found


def _appended_call(value: ast.expr) -> tuple[ast.Call, str] | None:
    """(call, list) for ``works.append(call(...))``."""
    appended = _append_of(value)
    if appended is not None and isinstance(appended[1], ast.Call):
        return appended[1], appended[0]
    return None


def _future_of(value: ast.expr) -> ast.expr:
    """The call under ``call(...).get_future()`` (its future is its handle)."""
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "get_future"
        and isinstance(value.func.value, ast.Call)
    ):
        return value.func.value
    return value


def _within(spelled: str, prefix: str) -> bool:
    return spelled == prefix or spelled.startswith(prefix + ".")


def _touches(loaded: set[str], output: str) -> bool:
    """Whether a loaded chain is the output tensor or reaches into it (``t``, ``t.sum``,
    ``p.grad.data.div_``)."""
    return any(
        _within(spelled, output) and spelled[len(output) + 1 :] not in _METADATA
        for spelled in loaded
    )


def unwaited_handles(analysis: ModuleAnalysis) -> list[UnwaitedHandle]:
    """Every asynchronous collective of the module whose handle is pending where it
    matters, at most one answer per call (a read first, then a re-binding)."""
    nodes, names = analysis.nodes, analysis.names
    scopes: list[Scope] = []
    for scope, calls in nodes.calls_by_scope.items():
        if not any(async_call(call, names) for call in calls):
            continue
        while isinstance(scope, (*_LIST_SCOPES, ast.DictComp)):
            scope = nodes.scope_of[scope]
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)) and (
            scope not in scopes
        ):
            scopes.append(scope)
    found: list[UnwaitedHandle] = []
    for scope in scopes:
        found.extend(_HandleFlow(scope, analysis.graphs.graph(scope), names).solve())
    return found
