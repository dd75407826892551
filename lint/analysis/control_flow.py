"""A control-flow graph per function, on CPython's ``ast``.

One node per statement (a compound statement's header is a node of its own: the test of
an ``if`` / ``while`` / ``assert``, a ``for`` loop's step, an ``except`` clause's match),
plus synthetic nodes: the entry, the normal exit, the exceptional exit, a ``with``
block's exit (one per way out: normal, each jump, an exception) and the dispatch to a
``try``'s handlers. A jump that leaves a ``try`` with a ``finally`` runs its own copy of
the ``finally`` body, as CPython compiles it, so a ``return`` never seems to fall through
to the statement after the ``try``.

Edges say why they are taken: ``TRUE`` / ``FALSE`` out of a test (for a ``for`` step:
another item / exhausted), ``RAISE`` for an exit the code spells (``raise``, a failing
``assert``, ``sys.exit()``), ``EXCEPTION`` for an exception any statement may raise.
Analyses of what the code decides read the graph without ``EXCEPTION`` edges;
``ends_loudly`` tells an exit that fails the process (an exception, an error status)
from one that ends it as a success (``sys.exit(0)``).

Module code, class bodies, functions, lambdas and comprehensions are each a graph of
their own (``ScopeGraphs``); a ``def`` or ``class`` statement is one node of the graph
it sits in.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum

from ddplint.analysis.children import child_nodes, walk
from ddplint.analysis.names import dotted_name

Scope = (
    ast.Module
    | ast.FunctionDef
    | ast.AsyncFunctionDef
    | ast.ClassDef
    | ast.Lambda
    | ast.ListComp
    | ast.SetComp
    | ast.DictComp
    | ast.GeneratorExp
)
SCOPE_TYPES = (
    ast.Module,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Lambda,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: The comprehensions (each its own scope).
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
#: Calls that end the process: a ``SystemExit`` (``finally`` and handlers still run).
EXIT_CALLS = frozenset({"sys.exit", "exit", "quit"})
#: Calls that end the process at once, running nothing on the way out.
ABORT_CALLS = frozenset({"os._exit", "os.abort"})
#: Statements that cannot raise.
_QUIET = (ast.Pass, ast.Break, ast.Continue, ast.Global, ast.Nonlocal)


#: The statements that leave a block for elsewhere in the function: ``return``,
#: ``break``, ``continue``.
JUMPS = (ast.Return, ast.Break, ast.Continue)


class NodeKind(str, Enum):
    ENTRY = "entry"
    EXIT = "exit"  # the function returns (or module code ends)
    RAISE = "raise"  # an exception leaves the function
    STATEMENT = "statement"
    TEST = "test"  # if / while / assert / except clause / match case: TRUE or FALSE
    STEP = "step"  # a for loop takes its next item (TRUE) or is exhausted (FALSE)
    WITH_EXIT = "with-exit"  # a context manager's __exit__
    DISPATCH = "dispatch"  # an exception reaches a try's handlers


class EdgeKind(str, Enum):
    NEXT = "next"
    TRUE = "true"
    FALSE = "false"
    BREAK = "break"
    CONTINUE = "continue"
    RETURN = "return"
    RAISE = "raise"  # an exit the code spells
    EXCEPTION = "exception"  # an exception a statement may raise


@dataclass(eq=False)
class Node:
    """One point of the graph; ``statement`` is the ``ast`` node it stands for (for a
    synthetic node, the statement it belongs to, or None)."""

    index: int
    kind: NodeKind
    statement: ast.AST | None
    line: int
    successors: list[tuple[Node, EdgeKind]] = field(default_factory=list)
    predecessors: list[tuple[Node, EdgeKind]] = field(default_factory=list)

    def __repr__(self) -> str:
        what = type(self.statement).__name__ if self.statement is not None else "-"
        return f"<{self.index} {self.kind.value} {what} line {self.line}>"


class Graph:
    """The control-flow graph of one scope."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.nodes: list[Node] = []
        line = getattr(scope, "lineno", 1)
        self.entry = self.add(NodeKind.ENTRY, None, line)
        self.exit = self.add(NodeKind.EXIT, None, line)
        self.raise_exit = self.add(NodeKind.RAISE, None, line)
        self._by_statement: dict[ast.AST, list[Node]] = {}

    def add(self, kind: NodeKind, statement: ast.AST | None, line: int) -> Node:
        node = Node(len(self.nodes), kind, statement, line)
        self.nodes.append(node)
        if statement is not None and kind in (NodeKind.STATEMENT, NodeKind.TEST, NodeKind.STEP):
            self._by_statement.setdefault(statement, []).append(node)
        return node

    @staticmethod
    def connect(source: Node, target: Node, kind: EdgeKind) -> None:
        if any(t is target and k is kind for t, k in source.successors):
            return
        source.successors.append((target, kind))
        target.predecessors.append((source, kind))

    def nodes_of(self, statement: ast.AST) -> list[Node]:
        """The nodes that run ``statement`` (more than one inside a copied ``finally``)."""
        return self._by_statement.get(statement, [])

    def statements(self) -> Iterator[ast.AST]:
        """Every statement with a node, in the order the nodes were made."""
        return iter(self._by_statement)

    @staticmethod
    def reached_from(starts: list[Node]) -> Iterator[Node]:
        """Every node some way from ``starts`` reaches (the starts included), each once."""
        seen: set[int] = set()
        pending = list(starts)
        while pending:
            node = pending.pop()
            if node.index in seen:
                continue
            seen.add(node.index)
            yield node
            pending.extend(successor for successor, _ in node.successors)

    def leaves_loop(self, node: Node, loop: ast.For | ast.AsyncFor | ast.While) -> bool:
        """Every way on from ``node`` inside ``loop`` (exceptions left out) leaves the
        loop (a ``return``, a ``break``, a ``raise``) before its next pass: ``node`` runs
        at most once each time the loop runs. False when ``loop`` is not in this graph."""
        heads = self.nodes_of(loop)
        inside = {id(n) for statement in loop.body for n in walk(statement, leaves=False)}
        seen: set[int] = set()
        pending = [node]
        while heads and pending:
            current = pending.pop()
            if current in heads:
                return False
            if current.index in seen or id(current.statement) not in inside:
                continue
            seen.add(current.index)
            pending.extend(n for n, kind in current.successors if kind is not EdgeKind.EXCEPTION)
        return bool(heads)


Pending = tuple[Node, EdgeKind]


@dataclass
class _Loop:
    head: Node
    breaks: list[Pending] = field(default_factory=list)


@dataclass
class _With:
    statement: ast.With | ast.AsyncWith
    unwind: Node | None = None  # __exit__ on the way of an exception
    suppressed: list[Pending] = field(default_factory=list)


@dataclass
class _Finally:
    body: list[ast.stmt]
    unwind: Node | None = None  # the copy of the body an exception runs


@dataclass
class _Handlers:
    dispatch: Node


_Frame = _Loop | _With | _Finally | _Handlers


#: The statements after which nothing in the same block runs.
_BLOCK_ENDS = (*JUMPS, ast.Raise)
_BLOCK_FIELDS = ("body", "orelse", "finalbody")


def unreachable_lines(tree: ast.AST) -> frozenset[int]:
    """The lines of statements no way reaches: those after a ``return``, ``raise``,
    ``break`` or ``continue`` in the same block (the jump leaves the block first)."""
    found: set[int] = set()
    for node in walk(tree, leaves=False):
        for name in _BLOCK_FIELDS:
            block = getattr(node, name, None)
            if not isinstance(block, list):
                continue
            end = next((i for i, s in enumerate(block) if isinstance(s, _BLOCK_ENDS)), None)
            if end is not None and end + 1 < len(block):
                jump, last = block[end], block[-1]
                first = max(block[end + 1].lineno, (jump.end_lineno or jump.lineno) + 1)
                found.update(range(first, (last.end_lineno or last.lineno) + 1))
    return frozenset(found)


def holds_node(outer: ast.AST, inner: ast.AST) -> bool:
    """Whether ``inner`` is ``outer`` or one of its nodes."""
    return any(node is inner for node in walk(outer))


def own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a scope's own code: nested functions, classes and lambdas left out."""
    pending: list[ast.AST] = child_nodes(scope)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        pending.extend(child_nodes(node))
        yield node


def single_bindings(scope: ast.AST, nodes: Iterable[ast.AST] | None = None) -> dict[str, ast.expr]:
    """Names the scope's own code binds exactly once, by a plain ``name = value`` or
    ``a, b = x, y`` (a tuple of names from a tuple of as many values). ``nodes``: its
    ``own_nodes``, where the caller has walked them."""
    values: dict[str, ast.expr] = {}
    counts: dict[str, int] = {}
    for node in own_nodes(scope) if nodes is None else nodes:
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            counts[node.id] = counts.get(node.id, 0) + 1
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            values.update(paired_names(node.targets[0], node.value))
    return {name: value for name, value in values.items() if counts.get(name) == 1}


def paired_names(target: ast.expr, value: ast.expr) -> Iterator[tuple[str, ast.expr]]:
    """(name, value) for ``name = value`` and for each name of ``a, b = x, y``."""
    if isinstance(target, ast.Name):
        yield target.id, value
    elif (
        isinstance(target, (ast.Tuple, ast.List))
        and isinstance(value, (ast.Tuple, ast.List))
        and len(target.elts) == len(value.elts)
        and not any(isinstance(e, ast.Starred) for e in (*target.elts, *value.elts))
    ):
        for name, element in zip(target.elts, value.elts, strict=True):
            if isinstance(name, ast.Name):
                yield name.id, element


def _exit_call(statement: ast.stmt) -> str | None:
    """``"exit"`` or ``"abort"`` when the statement is a call that ends the process."""
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        name = dotted_name(statement.value.func)
        if name in EXIT_CALLS:
            return "exit"
        if name in ABORT_CALLS:
            return "abort"
    return None


def ends_loudly(statement: ast.AST | None) -> bool:
    """Whether a statement that leaves along a ``RAISE`` edge ends the process with an
    error: an exception (``raise``, a failing ``assert``, ``os.abort()``) or an exit
    with an error status (``sys.exit(1)``, ``sys.exit("message")``, ``os._exit(2)``,
    ``raise SystemExit(1)``). Under torchrun (and any elastic agent) a worker that
    fails makes the agent stop every other worker: nobody waits. An exit with status 0
    (``sys.exit()``, ``sys.exit(0)``, ``raise SystemExit``) ends this process as a
    success, and its peers wait in their next collective."""
    if isinstance(statement, ast.Assert):
        return True
    if isinstance(statement, ast.Raise):
        exc = statement.exc
        if exc is not None and dotted_name(exc) == "SystemExit":
            return False  # ``raise SystemExit``: status 0
        if isinstance(exc, ast.Call) and dotted_name(exc.func) == "SystemExit":
            return _error_status(exc)
        return True
    ending = _exit_call(statement) if isinstance(statement, ast.stmt) else None
    if ending is None:
        return False
    assert isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)
    if dotted_name(statement.value.func) == "os.abort":
        return True
    return _error_status(statement.value)


def _error_status(call: ast.Call) -> bool:
    """Whether an exit call (or ``SystemExit(...)``) surely ends with a status other
    than 0: a non-zero int, ``True``, or a message (printed, status 1; a string the
    code formats counts). A status the code computes (``sys.exit(main())``, a child's
    return code, ``0 if ok else 1``) is 0 on the runs that succeed: not surely an
    error, so the exit still counts as a way out on which the peers wait."""
    arguments = [*call.args, *(k.value for k in call.keywords)]
    if not arguments:
        return False
    if len(arguments) > 1:
        return True  # ``SystemExit(a, b)``: a tuple, printed, status 1
    return _surely_not_zero(arguments[0])


def _surely_not_zero(status: ast.expr) -> bool:
    if isinstance(status, ast.IfExp):
        return _surely_not_zero(status.body) and _surely_not_zero(status.orelse)
    if isinstance(status, ast.JoinedStr):
        return True
    if isinstance(status, ast.BinOp) and any(
        isinstance(side, (ast.JoinedStr, ast.Constant)) and _is_text(side)
        for side in (status.left, status.right)
    ):
        return True  # ``"... %s" % value``, ``"..." + text``
    if (
        isinstance(status, ast.Call)
        and isinstance(status.func, ast.Attribute)
        and status.func.attr == "format"
        and _is_text(status.func.value)
    ):
        return True
    try:
        value = ast.literal_eval(status)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    if value is None:
        return False
    return not isinstance(value, int) or value != 0  # a message or a float: status 1


def _is_text(expression: ast.expr) -> bool:
    return isinstance(expression, ast.JoinedStr) or (
        isinstance(expression, ast.Constant) and isinstance(expression.value, str)
    )


def _always_true(test: ast.expr) -> bool:
    return isinstance(test, ast.Constant) and bool(test.value)


def takes_a_turn(loop: ast.AST) -> bool:
    """Whether a ``for`` loop surely runs its body at least once: it walks a display
    with items (``for n, x in (("a", a), ("b", b)):``, no starred item, which may be
    empty), a non-empty string, or a ``range`` of constants that is not empty; its
    exhausted way is then taken only after a turn."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return False
    walked = loop.iter
    if isinstance(walked, (ast.Tuple, ast.List, ast.Set)):
        return bool(walked.elts) and not any(isinstance(e, ast.Starred) for e in walked.elts)
    if isinstance(walked, ast.Dict):
        return any(key is not None for key in walked.keys)
    if isinstance(walked, ast.Constant):
        return isinstance(walked.value, (str, bytes)) and bool(walked.value)
    return _constant_range_length(walked) > 0


def _constant_range_length(expression: ast.expr) -> int:
    """The length of ``range(...)`` given integer constants (``range(3)``); 0 otherwise."""
    if not (
        isinstance(expression, ast.Call)
        and isinstance(expression.func, ast.Name)
        and expression.func.id == "range"
        and not expression.keywords
        and 1 <= len(expression.args) <= 3
    ):
        return 0
    bounds = []
    for argument in expression.args:
        if not (isinstance(argument, ast.Constant) and type(argument.value) is int):
            return 0
        bounds.append(argument.value)
    try:
        return len(range(*bounds))
    except ValueError:  # a step of 0
        return 0


class _Builder:
    """Builds one scope's graph, statement by statement, with the stack of enclosing
    loops, ``with`` blocks, ``finally`` bodies and handler sets a jump must cross."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.frames: list[_Frame] = []

    # -- plumbing -------------------------------------------------------------------

    def _node(self, kind: NodeKind, statement: ast.AST, incoming: Sequence[Pending]) -> Node:
        node = self.graph.add(kind, statement, getattr(statement, "lineno", 0))
        for source, edge in incoming:
            self.graph.connect(source, node, edge)
        return node

    def _may_raise(self, node: Node) -> None:
        self.graph.connect(node, self._exception_target(len(self.frames)), EdgeKind.EXCEPTION)

    def _exception_target(self, depth: int) -> Node:
        """Where an exception raised under ``frames[:depth]`` goes first."""
        for i in range(depth - 1, -1, -1):
            frame = self.frames[i]
            if isinstance(frame, _Handlers):
                return frame.dispatch
            if isinstance(frame, _With):
                if frame.unwind is None:
                    statement = frame.statement
                    frame.unwind = self.graph.add(NodeKind.WITH_EXIT, statement, statement.lineno)
                    frame.suppressed.append((frame.unwind, EdgeKind.FALSE))
                    outer = self._exception_target(i)
                    self.graph.connect(frame.unwind, outer, EdgeKind.EXCEPTION)
                return frame.unwind
            if isinstance(frame, _Finally):
                if frame.unwind is None:
                    frame.unwind = self._finally_copy(i, frame, EdgeKind.EXCEPTION)
                return frame.unwind
        return self.graph.raise_exit

    def _finally_copy(self, depth: int, frame: _Finally, then: EdgeKind) -> Node:
        """A copy of a ``finally`` body entered by an exception, re-raising at its end."""
        saved = self.frames
        self.frames = saved[:depth]
        try:
            start = self.graph.add(NodeKind.DISPATCH, None, frame.body[0].lineno)
            ends = self._block(frame.body, [(start, EdgeKind.NEXT)])
            target = self._exception_target(depth)
            for source, _ in ends:
                self.graph.connect(source, target, then)
        finally:
            self.frames = saved
        return start

    def _leave(self, pending: list[Pending], depth: int) -> list[Pending]:
        """Route a jump out through ``frames[depth:]``, innermost first: each ``with``
        it leaves runs ``__exit__``, each ``finally`` it leaves runs its body."""
        for i in range(len(self.frames) - 1, depth - 1, -1):
            frame = self.frames[i]
            if isinstance(frame, _With):
                exit_node = self._node(NodeKind.WITH_EXIT, frame.statement, pending)
                self._may_raise_at(exit_node, i)
                pending = [(exit_node, EdgeKind.NEXT)]
            elif isinstance(frame, _Finally):
                saved = self.frames
                self.frames = saved[:i]
                try:
                    pending = self._block(frame.body, pending)
                finally:
                    self.frames = saved
        return pending

    def _may_raise_at(self, node: Node, depth: int) -> None:
        self.graph.connect(node, self._exception_target(depth), EdgeKind.EXCEPTION)

    def _innermost_loop(self) -> int | None:
        for i in range(len(self.frames) - 1, -1, -1):
            if isinstance(self.frames[i], _Loop):
                return i
        return None

    # -- statements -----------------------------------------------------------------

    def _block(self, statements: Sequence[ast.stmt], incoming: list[Pending]) -> list[Pending]:
        pending = incoming
        for statement in statements:
            if not pending:  # unreachable code still gets its nodes, with no way in
                pending = []
            pending = self._statement(statement, pending)
        return pending

    def _statement(self, statement: ast.stmt, incoming: list[Pending]) -> list[Pending]:
        if isinstance(statement, ast.If):
            return self._if(statement, incoming)
        if isinstance(statement, ast.While):
            return self._while(statement, incoming)
        if isinstance(statement, (ast.For, ast.AsyncFor)):
            return self._for(statement, incoming)
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            return self._with(statement, incoming)
        if isinstance(statement, (ast.Try, ast.TryStar)):
            return self._try(statement, incoming)
        if isinstance(statement, ast.Match):
            return self._match(statement, incoming)
        return self._simple(statement, incoming)

    def _simple(self, statement: ast.stmt, incoming: list[Pending]) -> list[Pending]:
        if isinstance(statement, ast.Assert):
            node = self._node(NodeKind.TEST, statement, incoming)
            self._may_raise(node)
            self.graph.connect(node, self._exception_target(len(self.frames)), EdgeKind.RAISE)
            return [(node, EdgeKind.TRUE)]
        node = self._node(NodeKind.STATEMENT, statement, incoming)
        if not isinstance(statement, _QUIET) and not (
            isinstance(statement, ast.Return) and statement.value is None
        ):
            self._may_raise(node)
        if isinstance(statement, ast.Return):
            for source, edge in self._leave([(node, EdgeKind.RETURN)], 0):
                self.graph.connect(source, self.graph.exit, edge)
            return []
        if isinstance(statement, ast.Raise):
            self.graph.connect(node, self._exception_target(len(self.frames)), EdgeKind.RAISE)
            return []
        if isinstance(statement, (ast.Break, ast.Continue)):
            return self._loop_jump(statement, node)
        ending = _exit_call(statement)
        if ending == "exit":
            self.graph.connect(node, self._exception_target(len(self.frames)), EdgeKind.RAISE)
            return []
        if ending == "abort":
            self.graph.connect(node, self.graph.raise_exit, EdgeKind.RAISE)
            return []
        return [(node, EdgeKind.NEXT)]

    def _loop_jump(self, statement: ast.Break | ast.Continue, node: Node) -> list[Pending]:
        depth = self._innermost_loop()
        if depth is None:  # a syntax error CPython reports; nothing follows it
            return []
        loop = self.frames[depth]
        assert isinstance(loop, _Loop)
        if isinstance(statement, ast.Break):
            loop.breaks.extend(self._leave([(node, EdgeKind.BREAK)], depth + 1))
        else:
            for source, edge in self._leave([(node, EdgeKind.CONTINUE)], depth + 1):
                self.graph.connect(source, loop.head, edge)
        return []

    def _if(self, statement: ast.If, incoming: list[Pending]) -> list[Pending]:
        test = self._node(NodeKind.TEST, statement, incoming)
        self._may_raise(test)
        after = self._block(statement.body, [(test, EdgeKind.TRUE)])
        if statement.orelse:
            return after + self._block(statement.orelse, [(test, EdgeKind.FALSE)])
        return [*after, (test, EdgeKind.FALSE)]

    def _while(self, statement: ast.While, incoming: list[Pending]) -> list[Pending]:
        test = self._node(NodeKind.TEST, statement, incoming)
        self._may_raise(test)
        loop = _Loop(test)
        self.frames.append(loop)
        try:
            ends = self._block(statement.body, [(test, EdgeKind.TRUE)])
        finally:
            self.frames.pop()
        for source, edge in ends:
            self.graph.connect(source, test, edge)
        done: list[Pending] = []
        if not _always_true(statement.test):
            done = self._block(statement.orelse, [(test, EdgeKind.FALSE)])
        return done + loop.breaks

    def _for(self, statement: ast.For | ast.AsyncFor, incoming: list[Pending]) -> list[Pending]:
        step = self._node(NodeKind.STEP, statement, incoming)
        self._may_raise(step)
        loop = _Loop(step)
        self.frames.append(loop)
        try:
            ends = self._block(statement.body, [(step, EdgeKind.TRUE)])
        finally:
            self.frames.pop()
        for source, edge in ends:
            self.graph.connect(source, step, edge)
        return self._block(statement.orelse, [(step, EdgeKind.FALSE)]) + loop.breaks

    def _with(self, statement: ast.With | ast.AsyncWith, incoming: list[Pending]) -> list[Pending]:
        enter = self._node(NodeKind.STATEMENT, statement, incoming)
        self._may_raise(enter)
        frame = _With(statement)
        self.frames.append(frame)
        try:
            ends = self._block(statement.body, [(enter, EdgeKind.NEXT)])
        finally:
            self.frames.pop()
        out: list[Pending] = []
        if ends:
            exit_node = self._node(NodeKind.WITH_EXIT, statement, ends)
            self._may_raise(exit_node)
            out.append((exit_node, EdgeKind.NEXT))
        return out + frame.suppressed

    def _try(self, statement: ast.Try | ast.TryStar, incoming: list[Pending]) -> list[Pending]:
        final = _Finally(statement.finalbody) if statement.finalbody else None
        if final is not None:
            self.frames.append(final)
        try:
            out = self._try_handlers(statement, incoming)
        finally:
            if final is not None:
                self.frames.pop()
        if final is None:
            return out
        return self._block(statement.finalbody, out)

    def _try_handlers(
        self, statement: ast.Try | ast.TryStar, incoming: list[Pending]
    ) -> list[Pending]:
        if not statement.handlers:
            body_ends = self._block(statement.body, incoming)
            return self._block(statement.orelse, body_ends)
        dispatch = self.graph.add(NodeKind.DISPATCH, statement, statement.lineno)
        self.frames.append(_Handlers(dispatch))
        try:
            body_ends = self._block(statement.body, incoming)
        finally:
            self.frames.pop()
        out = self._block(statement.orelse, body_ends)
        previous: Pending = (dispatch, EdgeKind.NEXT)
        for handler in statement.handlers:
            match = self._node(NodeKind.TEST, handler, [previous])
            self._may_raise(match)
            out += self._block(handler.body, [(match, EdgeKind.TRUE)])
            previous = (match, EdgeKind.FALSE)
            if handler.type is None:
                break
        else:
            target = self._exception_target(len(self.frames))
            self.graph.connect(previous[0], target, EdgeKind.EXCEPTION)
        return out

    def _match(self, statement: ast.Match, incoming: list[Pending]) -> list[Pending]:
        subject = self._node(NodeKind.STATEMENT, statement, incoming)
        self._may_raise(subject)
        previous: Pending = (subject, EdgeKind.NEXT)
        out: list[Pending] = []
        for case in statement.cases:
            test = self.graph.add(NodeKind.TEST, case, case.pattern.lineno)
            self.graph.connect(previous[0], test, previous[1])
            self._may_raise(test)
            out += self._block(case.body, [(test, EdgeKind.TRUE)])
            previous = (test, EdgeKind.FALSE)
        return [*out, previous]


def _comprehension_graph(graph: Graph, scope: ast.expr) -> None:
    """A comprehension as nested loops: a step per ``for``, a test per ``if``, the
    element last."""
    assert isinstance(scope, COMPREHENSIONS)
    builder = _Builder(graph)
    pending: list[Pending] = [(graph.entry, EdgeKind.NEXT)]
    steps: list[Node] = []
    for generator in scope.generators:
        step = builder._node(NodeKind.STEP, generator, pending)
        builder._may_raise(step)
        graph.connect(step, steps[-1] if steps else graph.exit, EdgeKind.FALSE)
        steps.append(step)
        pending = [(step, EdgeKind.TRUE)]
        for condition in generator.ifs:
            test = builder._node(NodeKind.TEST, condition, pending)
            builder._may_raise(test)
            graph.connect(test, step, EdgeKind.FALSE)
            pending = [(test, EdgeKind.TRUE)]
    element = scope.key if isinstance(scope, ast.DictComp) else scope.elt
    node = builder._node(NodeKind.STATEMENT, element, pending)
    builder._may_raise(node)
    graph.connect(node, steps[-1], EdgeKind.NEXT)


def build_graph(scope: Scope) -> Graph:
    """The control-flow graph of one scope."""
    graph = Graph(scope)
    if isinstance(scope, COMPREHENSIONS):
        _comprehension_graph(graph, scope)
        return graph
    builder = _Builder(graph)
    if isinstance(scope, ast.Lambda):
        node = builder._node(NodeKind.STATEMENT, scope.body, [(graph.entry, EdgeKind.NEXT)])
        builder._may_raise(node)
        graph.connect(node, graph.exit, EdgeKind.NEXT)
        return graph
    ends = builder._block(scope.body, [(graph.entry, EdgeKind.NEXT)])
    for source, edge in ends:
        graph.connect(source, graph.exit, edge)
    return graph


class ScopeGraphs:
    """The graphs of a module's scopes, built on first use."""

    def __init__(self, module: ast.Module) -> None:
        self.module = module
        self._graphs: dict[Scope, Graph] = {}

    def graph(self, scope: Scope) -> Graph:
        graph = self._graphs.get(scope)
        if graph is None:
            graph = self._graphs[scope] = build_graph(scope)
        return graph

    def scopes(self) -> Iterator[Scope]:
        """Every scope of the module, outermost first."""
        pending: list[ast.AST] = [self.module]
        while pending:
            node = pending.pop(0)
            if isinstance(node, SCOPE_TYPES):
                yield node
            pending.extend(child_nodes(node))
