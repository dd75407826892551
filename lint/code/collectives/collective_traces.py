"""The sequence of collectives a function issues, per choice of rank-condition values.

Collectives pair by order, so what matters is whether every rank issues the same
sequence. A trace is that sequence as a tree: collective events, branches on
conditions that are the same on every rank (kept as branches, both arms), loops, and
``end`` markers where a path leaves early. Rank conditions are either decided by a
choice of atom values (``true_atoms``), which gives one trace per kind of rank, or, when
no choice is given, kept symbolic as ``rank`` branches (to compare the two arms of one
``if``). Two ranks are in step when their traces are equal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import libcst as cst

from ddplint.code.ranks.rank_conditions import Formula, evaluate
from ddplint.code.syntax.module_index import children_of

Event = tuple[object, ...]
Trace = tuple[Event, ...]
Continuation = Callable[[], Trace]

_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)
_SCOPES = (cst.Lambda, cst.FunctionDef, cst.ClassDef)


def _nothing() -> Trace:
    return ()


class TraceSource(Protocol):
    """What the tracer asks of the module analysis."""

    def condition(self, expr: cst.BaseExpression) -> Formula | None: ...

    def text(self, node: cst.CSTNode) -> str: ...

    def eventful(self, node: cst.CSTNode) -> bool: ...

    def call_events(self, call: cst.Call) -> tuple[Trace, Formula | None]: ...

    def reference_events(self, node: cst.CSTNode) -> Trace: ...

    def exit_call(self, call: cst.Call) -> bool: ...


def statements_of(body: cst.BaseSuite | cst.Module | None) -> Sequence[cst.CSTNode]:
    """The statements of a block; a one-line suite (``if x: a(); b()``) is one line."""
    if body is None:
        return ()
    if isinstance(body, cst.SimpleStatementSuite):
        return (body,)
    return tuple(body.body)


def orelse_statements(node: cst.If) -> Sequence[cst.CSTNode]:
    orelse = node.orelse
    if orelse is None:
        return ()
    if isinstance(orelse, cst.If):
        return (orelse,)
    return statements_of(orelse.body)


def ending_of(statement: cst.CSTNode, source: TraceSource) -> str | None:
    """``return``/``raise``/``continue``/``break``/``exit`` when a small statement leaves."""
    if isinstance(statement, cst.Return):
        return "return"
    if isinstance(statement, cst.Raise):
        return "raise"
    if isinstance(statement, cst.Continue):
        return "continue"
    if isinstance(statement, cst.Break):
        return "break"
    if (
        isinstance(statement, cst.Expr)
        and isinstance(statement.value, cst.Call)
        and source.exit_call(statement.value)
    ):
        return "exit"
    return None


def always_leaves(statements: Sequence[cst.CSTNode], source: TraceSource) -> bool:
    """Whether the block surely ends in a return/raise/continue/break (structurally)."""
    if not statements:
        return False
    last = statements[-1]
    if isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        return any(ending_of(small, source) for small in last.body)
    if isinstance(last, cst.If):
        return always_leaves(statements_of(last.body), source) and always_leaves(
            orelse_statements(last), source
        )
    if isinstance(last, cst.With):
        return always_leaves(statements_of(last.body), source)
    return False


def strip_trailing_end(trace: Trace, *kinds: str) -> Trace:
    """A path that leaves at its very end is the same as one that falls off it."""
    while trace and trace[-1][0] == "end" and (not kinds or trace[-1][1] in kinds):
        trace = trace[:-1]
    return trace


#: Endings of error paths: a rank that raises ends the run (torchrun stops the others,
#: the traceback names the cause), so such a path is not compared with the others.
ERROR_ENDINGS = frozenset({"raise", "exit"})


def _dead(trace: Trace) -> bool:
    return bool(trace) and trace[-1][0] == "end" and trace[-1][1] in ERROR_ENDINGS


def branch(key: object, first: Trace, second: Trace) -> Trace:
    """A branch event; the arms inline when they are the same or one is an error path."""
    if first == second or _dead(second):
        return first
    if _dead(first):
        return second
    return (("branch", key, first, second),)


def has_callback(trace: object) -> bool:
    """Whether a function that issues collectives is passed on rather than called: what
    it issues, and when, is out of sight."""
    if not isinstance(trace, tuple) or not trace:
        return False
    return trace[0] == "callback" or any(has_callback(part) for part in trace)


class Tracer:
    """Builds traces for one choice of atom values (``true_atoms``), or symbolically."""

    def __init__(self, source: TraceSource, true_atoms: frozenset[str] | None) -> None:
        self._source = source
        self._true_atoms = true_atoms

    def unit(self, statements: Sequence[cst.CSTNode]) -> Trace:
        return strip_trailing_end(self.block(statements, 0, _nothing))

    def block(self, statements: Sequence[cst.CSTNode], start: int, then: Continuation) -> Trace:
        """The trace of ``statements[start:]`` followed by ``then`` when it falls through."""
        out: list[Event] = []
        index = start
        while index < len(statements):
            statement = statements[index]
            index += 1

            def rest(index: int = index) -> Trace:
                return self.block(statements, index, then)

            if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                for small in statement.body:
                    out.extend(self.expression(small))
                    ending = ending_of(small, self._source)
                    if ending is not None:
                        out.append(("end", ending))
                        return tuple(out)
            elif isinstance(statement, cst.If):
                done = self._if(statement, out, rest)
                if done:
                    return tuple(out)
            elif isinstance(statement, (cst.For, cst.While)):
                self._loop(statement, out)
            elif isinstance(statement, cst.With):
                for item in statement.items:
                    out.extend(self.expression(item.item))
                out.extend(self.block(statements_of(statement.body), 0, rest))
                return tuple(out)
            elif isinstance(statement, (cst.Try, cst.TryStar)):
                self._try(statement, out)
            elif isinstance(statement, cst.Match):
                out.extend(self.expression(statement.subject))
                cases = tuple(
                    self.block(statements_of(c.body), 0, _nothing) for c in statement.cases
                )
                if any(cases):
                    out.append(("match", self._source.text(statement.subject), cases))
        return (*out, *then())

    def _arms(self, condition: cst.BaseExpression) -> tuple[object, bool | None]:
        """The branch key for a condition, and its value when this choice decides it."""
        formula = self._source.condition(condition)
        if formula is None:
            return ("if", self._source.text(condition)), None
        if self._true_atoms is None:
            return ("rank", formula), None
        value = evaluate(formula, self._true_atoms)
        if isinstance(value, bool):
            return None, value
        return ("if", value), None

    def _if(self, node: cst.If, out: list[Event], rest: Continuation) -> bool:
        """Appends the trace of an ``if``; True when it consumed what follows."""
        out.extend(self.expression(node.test))
        body, orelse = statements_of(node.body), orelse_statements(node)
        key, value = self._arms(node.test)
        if value is not None:
            out.extend(self.block(body if value else orelse, 0, rest))
            return True
        leaves_body = always_leaves(body, self._source)
        leaves_orelse = always_leaves(orelse, self._source)
        if not leaves_body and not leaves_orelse:
            out.extend(branch(key, self.block(body, 0, _nothing), self.block(orelse, 0, _nothing)))
            return False
        # One arm leaves: what follows the `if` runs on the other arm only.
        first = self.block(body, 0, _nothing if leaves_body else rest)
        second = self.block(orelse, 0, _nothing if leaves_orelse else rest)
        out.extend(branch(key, first, second))
        return True

    def _loop(self, node: cst.For | cst.While, out: list[Event]) -> None:
        if isinstance(node, cst.For):
            out.extend(self.expression(node.iter))
            key: object = ("loop",)
            value: bool | None = None
        else:
            out.extend(self.expression(node.test))
            key, value = self._arms(node.test)
            if value is False:
                return
        body = strip_trailing_end(self.block(statements_of(node.body), 0, _nothing), "continue")
        loop: Trace = (("loop", body),) if body else ()
        out.extend(loop if value is True or isinstance(node, cst.For) else branch(key, loop, ()))
        if node.orelse is not None:
            out.extend(self.block(statements_of(node.orelse.body), 0, _nothing))

    def _try(self, node: cst.Try | cst.TryStar, out: list[Event]) -> None:
        out.extend(self.block(statements_of(node.body), 0, _nothing))
        handlers = tuple(self.block(statements_of(h.body), 0, _nothing) for h in node.handlers)
        if any(handlers):
            out.append(("except", handlers))
        if node.orelse is not None:
            out.extend(self.block(statements_of(node.orelse.body), 0, _nothing))
        if node.finalbody is not None:
            out.extend(self.block(statements_of(node.finalbody.body), 0, _nothing))

    def choose(self, formula: Formula | None, events: Trace) -> Trace:
        """``events`` when they run on every rank (None), else under ``formula``."""
        if formula is None or not events:
            return events
        if self._true_atoms is None:
            return branch(("rank", formula), events, ())
        value = evaluate(formula, self._true_atoms)
        if isinstance(value, bool):
            return events if value else ()
        return branch(("if", value), events, ())

    def expression(self, node: cst.CSTNode) -> Trace:
        """Collective events of an expression (or small statement), in evaluation order."""
        if not self._source.eventful(node) or isinstance(node, _SCOPES):
            return ()
        if isinstance(node, cst.IfExp):
            key, value = self._arms(node.test)
            test = self.expression(node.test)
            body, orelse = self.expression(node.body), self.expression(node.orelse)
            if value is not None:
                return (*test, *(body if value else orelse))
            return (*test, *branch(key, body, orelse))
        if isinstance(node, cst.BooleanOperation):
            left, right = self.expression(node.left), self.expression(node.right)
            if not right:
                return left
            key, value = self._arms(node.left)
            runs_when = isinstance(node.operator, cst.And)
            if value is not None:
                return (*left, *(right if value is runs_when else ()))
            arms = (right, ()) if runs_when else ((), right)
            return (*left, *branch(key, *arms))
        events: list[Event] = list(self._source.reference_events(node))
        for child in children_of(node):
            events.extend(self.expression(child))
        if isinstance(node, _COMPREHENSIONS):
            return (("loop", tuple(events)),) if events else ()
        if isinstance(node, cst.Call):
            called, formula = self._source.call_events(node)
            events.extend(self.choose(formula, called))
        return tuple(events)
