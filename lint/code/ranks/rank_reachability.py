"""Rank reachability: is this statement reached on some ranks only?

A node is *rank-guarded* when a rank condition decides whether it runs: an ``if`` /
``elif`` / ``else`` / ``while`` / conditional expression / ``cond and call()`` on a rank
predicate, an earlier ``return``/``continue``/``break`` under one that leaves before it,
a ``@rank_zero_only`` body, or ``rank_zero_only(fn)(...)``. A ``raise`` is an error
path, not an early exit: the rank that raises ends the run. ``guards_of``
answers that structurally. ``divergent_guard`` also asks whether the other ranks issue
the same collectives anyway (the same call in both arms, the paired "main process
first" barriers, a ``group=`` holding only the guarded ranks), so that correct code
stays quiet. ``collectives_reached`` follows calls inside the module, once per function.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import cached_property
from itertools import combinations
from typing import Literal

import libcst as cst

from ddplint.code.collectives.catalogue import Collective, classify_call
from ddplint.code.collectives.collective_traces import (
    ERROR_ENDINGS,
    Trace,
    Tracer,
    ending_of,
    has_callback,
    orelse_statements,
    statements_of,
)
from ddplint.code.ranks.parallel_grid import ParallelGrid, group_argument
from ddplint.code.ranks.rank_conditions import (
    GLOBAL_ZERO,
    LOCAL_ZERO,
    Atom,
    Formula,
    Not,
    RankConditions,
    admitted_ranks,
    atoms_of,
    int_set,
    members_of,
    settle,
)
from ddplint.code.ranks.rank_predicates import RankPredicates
from ddplint.code.syntax.call_args import (
    false_self_conditions,
    runs_only_if,
    switched_off_parameters,
)
from ddplint.code.syntax.call_graph import LocalFunctions
from ddplint.code.syntax.conditions import guarding_conditions
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import ImportTable, dotted_name

#: Beyond this many rank atoms in one function, traces are not enumerated (2**n).
MAX_ATOMS = 8
_EXIT_CALLS = frozenset({"sys.exit", "os._exit", "exit", "quit"})
_LOOPS = (cst.For, cst.While)
_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
_DECORATOR_ATOMS: dict[str, Formula] = {
    "rank_zero_only": GLOBAL_ZERO,
    "on_main_process": GLOBAL_ZERO,
    "on_local_main_process": LOCAL_ZERO,
    "on_last_process": Atom("last_process"),
}

Unit = cst.FunctionDef | cst.Module
GuardKind = Literal["branch", "else", "and", "or", "early_exit", "decorator", "wrapper"]


@dataclass(frozen=True)
class RankGuard:
    """What makes a node run on some ranks only.

    ``kind``: ``branch`` (body of an ``if``/``while`` on a rank condition), ``else`` (its
    ``elif``/``else``), ``and`` / ``or`` (right side of a short-circuit whose left side
    is a rank condition), ``early_exit`` (a rank-guarded ``return``/``continue``/
    ``break`` that leaves before the node), ``decorator`` (a ``@rank_zero_only``
    body) or ``wrapper`` (``rank_zero_only(fn)(...)``). ``node`` is where a message should
    point (the condition, the exit statement, the decorator); ``holder`` is the
    statement or expression that holds the guard; ``condition`` the rank condition."""

    kind: GuardKind
    node: cst.CSTNode
    holder: cst.CSTNode
    condition: cst.BaseExpression | None = None


@dataclass(frozen=True)
class ReachedCollective:
    """A collective a function reaches, and the calls in between (innermost last)."""

    collective: Collective
    chain: tuple[cst.FunctionDef, ...] = ()


class RankReachability:
    """Answers rank-reachability questions for one module."""

    def __init__(
        self,
        index: ModuleIndex,
        names: ImportTable,
        collectives: dict[cst.Call, Collective],
        predicates: RankPredicates,
        code_of: Callable[[cst.CSTNode], str],
        line_of: Callable[[cst.CSTNode], int],
        decided: Callable[[cst.BaseExpression], bool | None] = lambda _: None,
    ) -> None:
        self._index = index
        #: Whether literal values decide a test on every run (then it guards nothing).
        self._decided = decided
        self._names = names
        self._collectives = collectives
        self._predicates = predicates
        self.conditions = RankConditions(predicates, code_of)
        self.grid = ParallelGrid(predicates, self.conditions.text)
        self._line_of = line_of
        self.local = LocalFunctions(index)
        self._reached: dict[cst.FunctionDef, tuple[ReachedCollective, ...]] = {}
        self._leaving: dict[tuple[cst.CSTNode, bool], cst.CSTNode | None] = {}
        self._traces: dict[cst.CSTNode, tuple[tuple[str, ...], dict[frozenset[str], Trace]]] = {}

    # -- structure: which guards hold a node ---------------------------------------

    def guard_of(self, node: cst.CSTNode) -> RankGuard | None:
        """The innermost rank guard of ``node`` inside its function, or None."""
        return next(self._guards(node), None)

    def guards_of(self, node: cst.CSTNode) -> list[RankGuard]:
        """Every rank guard of ``node`` inside its function, innermost first."""
        return list(self._guards(node))

    def _guards(self, node: cst.CSTNode) -> Iterator[RankGuard]:
        if isinstance(node, cst.Call):
            wrapped = self._predicates.rank_only_wrapped(node)
            if wrapped is not None and isinstance(node.func, cst.Call):
                yield RankGuard("wrapper", node.func, node)
        child = node
        for ancestor in self._index.ancestors(node):
            if isinstance(ancestor, cst.FunctionDef):
                decorator = self._predicates.rank_only_decorator(ancestor)
                if decorator is not None:
                    yield RankGuard("decorator", decorator, ancestor)
                return
            if isinstance(ancestor, (cst.Lambda, cst.ClassDef)):
                return
            guard = self._guard_at(ancestor, child)
            if guard is not None:
                yield guard
            if isinstance(ancestor, (cst.IndentedBlock, cst.SimpleStatementSuite, cst.Module)):
                yield from self._earlier_exits(ancestor, child)
            if isinstance(ancestor, _LOOPS) and child is ancestor.body:
                leaving = self._leaving_exit(ancestor.body, breaks_only=True)
                if leaving is not None:
                    yield self._exit_guard(leaving)
            child = ancestor

    def _guard_at(self, ancestor: cst.CSTNode, child: cst.CSTNode) -> RankGuard | None:
        """The guard ``ancestor`` puts on its part ``child``, if it tests a rank."""
        if isinstance(ancestor, (cst.If, cst.While)) and child is not ancestor.test:
            if (
                self.conditions.formula(ancestor.test) is None
                or self._decided(ancestor.test) is not None
            ):
                return None
            arm: GuardKind = "branch" if child is ancestor.body else "else"
            return RankGuard(arm, ancestor.test, ancestor, ancestor.test)
        if isinstance(ancestor, cst.IfExp) and child is not ancestor.test:
            if (
                self.conditions.formula(ancestor.test) is None
                or self._decided(ancestor.test) is not None
            ):
                return None
            arm = "branch" if child is ancestor.body else "else"
            return RankGuard(arm, ancestor.test, ancestor, ancestor.test)
        if isinstance(ancestor, cst.BooleanOperation) and child is ancestor.right:
            if (
                self.conditions.formula(ancestor.left) is None
                or self._decided(ancestor.left) is not None
            ):
                return None
            side: GuardKind = "and" if isinstance(ancestor.operator, cst.And) else "or"
            return RankGuard(side, ancestor.left, ancestor, ancestor.left)
        return None

    def _earlier_exits(
        self, block: cst.BaseSuite | cst.Module, child: cst.CSTNode
    ) -> Iterator[RankGuard]:
        """Rank-guarded exits in the statements of ``block`` before ``child``."""
        for statement in block.body:
            if statement is child:
                return
            leaving = self._leaving_exit(statement, breaks_only=False)
            if leaving is not None:
                yield self._exit_guard(leaving)

    def _leaving_exit(self, root: cst.CSTNode, *, breaks_only: bool) -> cst.CSTNode | None:
        """The first rank-guarded exit statement in ``root`` that leaves ``root``:
        ``return`` always, ``continue``/``break`` when no loop inside ``root`` catches
        them (``raise``/``sys.exit()`` are error paths, not counted). With
        ``breaks_only`` (a loop's own body), the exits that end the loop early:
        ``break``/``return``."""
        key = (root, breaks_only)
        if key in self._leaving:
            return self._leaving[key]
        found: cst.CSTNode | None = None
        if isinstance(root, _SCOPES):
            return None  # a `def` does not run its body where it stands
        for node in (root, *self._index.walk_within(root)):
            ending = ending_of(node, self)
            if ending is None or ending in ERROR_ENDINGS or (breaks_only and ending == "continue"):
                continue
            if ending in ("continue", "break") and self._loop_between(node, root):
                continue
            if self._rank_guard_between(node, root) is not None:
                found = node
                break
        self._leaving[key] = found
        return found

    def _loop_between(self, node: cst.CSTNode, root: cst.CSTNode) -> bool:
        """Whether a loop inside ``root`` (or ``root`` itself) catches a
        ``continue``/``break`` at ``node``."""
        for ancestor in self._index.ancestors(node):
            if isinstance(ancestor, _LOOPS):
                return True
            if ancestor is root:
                return False
        return False

    def _rank_guard_between(self, node: cst.CSTNode, root: cst.CSTNode) -> RankGuard | None:
        """The innermost rank guard on ``node`` inside ``root`` (``root`` included)."""
        if node is root:
            return None
        child = node
        for ancestor in self._index.ancestors(node):
            guard = self._guard_at(ancestor, child)
            if guard is not None:
                return guard
            if ancestor is root:
                return None
            child = ancestor
        return None

    def _exit_guard(self, exit_statement: cst.CSTNode) -> RankGuard:
        guard = self._rank_guard_between(exit_statement, self._index.module)
        condition = guard.condition if guard is not None else None
        return RankGuard("early_exit", exit_statement, exit_statement, condition)

    def describe(self, guard: RankGuard) -> str:
        """Where the guarded node runs, for messages: "only on ranks where `rank == 0`
        (line 12)"."""
        line = self._line_of(guard.node)
        condition = self._short(guard.condition) if guard.condition is not None else ""
        if guard.kind in ("branch", "and"):
            return f"only on ranks where `{condition}` (line {line})"
        if guard.kind in ("else", "or"):
            return f"only on ranks where `{condition}` is false (line {line})"
        if guard.kind == "early_exit":
            ending = ending_of(guard.node, self) or "leave"
            under = f" under `{condition}`" if condition else ""
            return f"only on ranks that do not `{ending}` at line {line}{under}"
        if guard.kind == "decorator" and isinstance(guard.holder, cst.FunctionDef):
            decorator = self._short(guard.node)
            return f"only where `{decorator}` runs `{guard.holder.name.value}` (line {line})"
        wrapper = guard.node.func if isinstance(guard.node, cst.Call) else guard.node
        return f"only on the ranks `{self._short(wrapper)}` lets through (line {line})"

    def _short(self, node: cst.CSTNode) -> str:
        text = self.conditions.text(node)
        return text if len(text) <= 60 else text[:57] + "..."

    # -- calls inside the module ---------------------------------------------------

    def collectives_reached(self, function: cst.FunctionDef) -> tuple[ReachedCollective, ...]:
        """Collectives ``function`` issues, directly or through calls to functions of
        this module (transitively; each function entered once), in call order."""
        known = self._reached.get(function)
        if known is not None:
            return known
        found: list[ReachedCollective] = []
        seen: set[cst.Call] = set()
        entered = {function}
        calls = iter(self._calls_by_function.get(function, ()))
        stack: list[tuple[Iterator[cst.Call], tuple[cst.FunctionDef, ...]]] = [(calls, ())]
        while stack:
            calls, chain = stack[-1]
            call = next(calls, None)
            if call is None:
                stack.pop()
                continue
            own = self.own_collective(call)
            if own is not None:
                if own.node not in seen:
                    seen.add(own.node)
                    found.append(ReachedCollective(own, chain))
                continue
            callee = self.callee_of(call)
            if callee is not None and callee not in entered:
                entered.add(callee)
                inner = iter(self._calls_by_function.get(callee, ()))
                stack.append((inner, (*chain, callee)))
        result = tuple(found)
        self._reached[function] = result
        return result

    @cached_property
    def _calls_by_function(self) -> dict[cst.CSTNode, list[cst.Call]]:
        """The calls each ``def`` makes itself (not those of nested defs, lambdas or
        classes), in source order."""
        found: dict[cst.CSTNode, list[cst.Call]] = {}
        for call in self._index.nodes(cst.Call):
            owner = self._index.enclosing(call, *_SCOPES)
            if isinstance(owner, cst.FunctionDef):
                found.setdefault(owner, []).append(call)
        return found

    @cached_property
    def _may_issue(self) -> bool:
        """Whether anything in the module is a collective (else every answer is empty)."""
        return bool(self._collectives) or any(
            self._predicates.rank_only_wrapped(call) is not None
            for call in self._index.nodes(cst.Call)
        )

    def reached_by_call(self, call: cst.Call) -> tuple[ReachedCollective, ...]:
        """What running ``call`` issues: the collective it is, or what the function of
        this module it calls reaches (``rank_zero_only(fn)(...)`` runs ``fn``)."""
        if not self._may_issue:
            return ()
        own = self.own_collective(call)
        if own is not None:
            return (ReachedCollective(own),)
        callee = self.callee_of(call)
        if callee is None:
            return ()
        switched_off = switched_off_parameters(call, callee)
        same_object = (dotted_name(call.func) or "").startswith("self.")
        false_here = false_self_conditions(self._index, call) if same_object else set()
        return tuple(
            ReachedCollective(r.collective, (callee, *r.chain))
            for r in self.collectives_reached(callee)
            if not self._off_on_this_path(r, callee, switched_off | false_here, false_here)
        )

    def _off_on_this_path(
        self,
        reached: ReachedCollective,
        callee: cst.FunctionDef,
        off: set[str],
        false_here: set[str],
    ) -> bool:
        """The collective runs only under a parameter this call switches off, or under a
        ``self.`` attribute false where the call is made (through methods of the same
        class: ``_update()`` in the ``else`` of ``if self.pipe:``, its all-reduce under
        ``if self.pipe:`` in ``_sync()``)."""
        if not reached.chain:
            return runs_only_if(self._index, reached.collective.node, callee, off)
        owner = self._index.enclosing_class(callee)
        if not false_here or owner is None:
            return False
        if any(self._index.enclosing_class(f) is not owner for f in reached.chain):
            return False
        return runs_only_if(self._index, reached.collective.node, reached.chain[-1], false_here)

    def own_collective(self, call: cst.Call) -> Collective | None:
        """The collective ``call`` itself is (``rank_zero_only(trainer.save_checkpoint)(p)``
        included), not one it reaches through a function of the module."""
        collective = self._collectives.get(call)
        if collective is not None:
            return collective
        wrapped = self._predicates.rank_only_wrapped(call)
        if wrapped is None:
            return None
        direct = classify_call(cst.Call(func=wrapped, args=call.args), self._names)
        return replace(direct, node=call) if direct is not None else None

    def callee_of(self, call: cst.Call) -> cst.FunctionDef | None:
        """The function of this module that ``call`` runs (through ``rank_zero_only``)."""
        wrapped = self._predicates.rank_only_wrapped(call)
        target = wrapped if wrapped is not None else call.func
        return self.local.resolve(target, self._index.enclosing_function(call))

    # -- balance: do the other ranks issue the same collectives anyway? ------------

    def divergent_guard(self, node: cst.CSTNode) -> RankGuard | None:
        """The guard that makes ``node`` (a collective, or a call that reaches one) run
        on some ranks only while the others issue a different sequence of collectives,
        or None when no guard holds it or every rank stays in step: the same collective
        in the other arm, paired guards that give every rank the same calls
        (``if not is_main: barrier()`` ... ``if is_main: barrier()``), or a ``group=``
        made of the guarded ranks only."""
        for guard in self._guards(node):
            if self._group_holds_guarded_ranks(node, guard) or self._joins_world_first(node, guard):
                return None
            if guard.kind in ("decorator", "wrapper"):
                return guard
            if self._settled_on_the_path(node, guard) or self._uniform_within_group(node, guard):
                continue
            if self._arms_match(guard):
                continue
            if self._changes_trace(node, guard):
                return guard
        return None

    def _settled_on_the_path(self, node: cst.CSTNode, guard: RankGuard) -> bool:
        """The other conditions ``node`` runs under decide the guard alike on every rank:
        ``if (rank == 0 and kind == "full") or kind == "sharded":`` holds everywhere for
        a call nested in ``if kind == "sharded":`` (the enclosing tests, conjoined). So
        for an early exit: ``if not fsdp and not is_rank0: return`` decides nothing by
        rank for a collective under ``if fsdp:`` further on."""
        if guard.condition is None:
            return False
        formula = self.conditions.formula(guard.condition)
        if formula is None:
            return False
        known: dict[str, bool] = {}
        for enclosing in guarding_conditions(self._index, node):
            if enclosing.owner is not guard.holder:
                known.update(self.conditions.known_values(enclosing.test, not enclosing.negated))
        if not known:
            return False
        settled = settle(formula, known)
        return isinstance(settled, bool) or not atoms_of(settled)

    def _uniform_within_group(self, node: cst.CSTNode, guard: RankGuard) -> bool:
        """The collective runs on a group whose members all decide the guard alike: it
        tests coordinates along other dimensions of the parallel grid (the pipeline
        stage, for a data-parallel group's all-reduce)."""
        if guard.condition is None or not isinstance(node, cst.Call):
            return False
        group = group_argument(node)
        return group is not None and self.grid.uniform_within(guard.condition, group)

    def _joins_world_first(self, node: cst.CSTNode, guard: RankGuard) -> bool:
        """The guarded block itself creates the process group before ``node``
        (``if rank >= 0: init_process_group(...); barrier()``): the processes that skip
        it are not in the world, so every member issues the collective."""
        holder = guard.holder
        if not isinstance(holder, cst.If) or not self._index.is_inside(node, holder.body):
            return False
        position = self._index.order[node]
        return any(
            isinstance(call, cst.Call)
            and self._index.order[call] < position
            and (self._names.qualified_name(call.func) or "").endswith("init_process_group")
            for call in self._index.walk_within(holder.body)
        )

    def _arms_match(self, guard: RankGuard) -> bool:
        """Both arms of the guard's ``if`` (or expression) issue the same collectives."""
        holder = guard.holder
        symbolic = Tracer(self, None)
        if isinstance(holder, cst.If):
            first = symbolic.block(statements_of(holder.body), 0, lambda: ())
            second = symbolic.block(orelse_statements(holder), 0, lambda: ())
        elif isinstance(holder, cst.IfExp):
            first, second = symbolic.expression(holder.body), symbolic.expression(holder.orelse)
        else:
            return False
        return first == second or has_callback(first) or has_callback(second)

    def _changes_trace(self, node: cst.CSTNode, guard: RankGuard) -> bool:
        """Whether flipping the guard's rank atoms changes the function's trace."""
        if guard.condition is None:
            return True
        formula = self.conditions.formula(guard.condition)
        if formula is None:
            return True
        unit = self._index.enclosing_function(node) or self._index.module
        atoms, traces = self._unit_traces(unit)
        if not traces:
            return True
        for atom in atoms_of(formula):
            if atom not in atoms:
                return True
            others = [a for a in atoms if a != atom]
            for size in range(len(others) + 1):
                for chosen in combinations(others, size):
                    base = frozenset(chosen)
                    if traces[base] != traces[base | {atom}]:
                        return True
        return False

    def _unit_traces(self, unit: Unit) -> tuple[tuple[str, ...], dict[frozenset[str], Trace]]:
        """Every atom of the function, and its trace for each choice of atom values
        (empty when there are too many atoms to enumerate)."""
        cached = self._traces.get(unit)
        if cached is not None:
            return cached
        atoms = tuple(sorted(self._unit_atoms(unit)))
        traces: dict[frozenset[str], Trace] = {}
        if len(atoms) <= MAX_ATOMS:
            body = statements_of(unit if isinstance(unit, cst.Module) else unit.body)
            for size in range(len(atoms) + 1):
                for chosen in combinations(atoms, size):
                    traces[frozenset(chosen)] = Tracer(self, frozenset(chosen)).unit(body)
        self._traces[unit] = (atoms, traces)
        return atoms, traces

    def _unit_atoms(self, unit: Unit) -> set[str]:
        found: set[str] = set()
        for node in self._index.walk_within(unit):
            test: cst.BaseExpression | None = None
            if isinstance(node, (cst.If, cst.While, cst.IfExp)):
                test = node.test
            elif isinstance(node, cst.BooleanOperation):
                test = node.left
            elif isinstance(node, cst.Call) and self.eventful(node):
                formula = self._call_formula(node)
                if formula is not None:
                    found |= atoms_of(formula)
            if test is not None:
                formula = self.conditions.formula(test)
                if formula is not None:
                    found |= atoms_of(formula)
        return found

    def _group_holds_guarded_ranks(self, node: cst.CSTNode, guard: RankGuard) -> bool:
        """``group=`` built from exactly the ranks the guard lets through (a subset will
        do: ranks outside a group skip its collectives), or a membership guard
        (``rank in ranks``) on a group whose ranks are not known here."""
        if guard.kind not in ("branch", "and") or guard.condition is None:
            return False
        if not isinstance(node, cst.Call):
            return False
        group = group_argument(node)
        if group is None:
            return False
        formula = self.conditions.formula(guard.condition)
        if formula is None or isinstance(formula, Not):
            return False
        ranks_arg = self._group_ranks_argument(group)
        if ranks_arg is None:
            # ``if rank in ranks: all_reduce(group=pg)`` with ``pg`` made elsewhere: the
            # guard may well be the group's own membership; unknown stays quiet.
            return members_of(formula) is not None
        admitted = admitted_ranks(formula)
        literal = int_set(ranks_arg)
        if admitted is not None and literal is not None and literal <= admitted:
            return True
        return members_of(formula) == self.conditions.text(ranks_arg)

    def _group_ranks_argument(self, group: cst.BaseExpression) -> cst.BaseExpression | None:
        """The ``ranks`` argument of the ``new_group`` call that made ``group``."""
        value: cst.BaseExpression | None = group
        if not isinstance(group, cst.Call):
            target = self.conditions.text(group)
            values = [
                assign.value
                for assign in self._index.nodes(cst.Assign)
                if any(self.conditions.text(t.target) == target for t in assign.targets)
            ]
            value = values[0] if len(values) == 1 else None
        if not isinstance(value, cst.Call):
            return None
        made = self._collectives.get(value)
        if made is None or made.op != "new_group":
            return None
        for position, argument in enumerate(value.args):
            if (argument.keyword is None and position == 0) or (
                argument.keyword is not None and argument.keyword.value == "ranks"
            ):
                return argument.value
        return None

    # -- what the tracer asks ------------------------------------------------------

    def condition(self, expr: cst.BaseExpression) -> Formula | None:
        return self.conditions.formula(expr)

    def text(self, node: cst.CSTNode) -> str:
        return self.conditions.text(node)

    @cached_property
    def _eventful(self) -> set[cst.CSTNode]:
        """Every node that holds a call issuing a collective (directly or through calls)."""
        found: set[cst.CSTNode] = set()
        holders: list[cst.CSTNode] = [
            c for c in self._index.nodes(cst.Call) if self.reached_by_call(c)
        ]
        holders.extend(self._callbacks)
        for node in holders:
            found.add(node)
            for ancestor in self._index.ancestors(node):
                if ancestor in found:
                    break
                found.add(ancestor)
        return found

    @cached_property
    def _callbacks(self) -> dict[cst.CSTNode, cst.FunctionDef]:
        """References to functions of this module that issue collectives, other than
        calls: ``study.optimize(_objective)`` runs ``_objective`` out of sight."""
        found: dict[cst.CSTNode, cst.FunctionDef] = {}
        if not self._may_issue:
            return found
        issuing = {
            f.name.value for f in self._index.nodes(cst.FunctionDef) if self.collectives_reached(f)
        }
        if not issuing:
            return found
        references: list[cst.Name | cst.Attribute] = [
            *self._index.nodes(cst.Name),
            *self._index.nodes(cst.Attribute),
        ]
        for node in references:
            name = node.attr.value if isinstance(node, cst.Attribute) else node.value
            if name not in issuing:
                continue
            parent = self._index.parent.get(node)
            if isinstance(parent, (cst.FunctionDef, cst.Attribute)) or (
                isinstance(parent, cst.Call) and parent.func is node
            ):
                continue
            function = self.local.resolve(node, self._index.enclosing_function(node))
            if function is not None and self.collectives_reached(function):
                found[node] = function
        return found

    def eventful(self, node: cst.CSTNode) -> bool:
        return node in self._eventful

    def reference_events(self, node: cst.CSTNode) -> Trace:
        function = self._callbacks.get(node)
        return (("callback", function.name.value),) if function is not None else ()

    def call_events(self, call: cst.Call) -> tuple[Trace, Formula | None]:
        events = tuple(self._event(r.collective) for r in self.reached_by_call(call))
        return events, self._call_formula(call)

    def _event(self, collective: Collective) -> tuple[object, ...]:
        """A collective in a trace: its api; for a group creation also its arguments,
        since every rank must create the same groups."""
        if collective.creates_group:
            arguments = tuple(self.conditions.text(a) for a in collective.node.args)
            return ("collective", collective.api, arguments)
        return ("collective", collective.api)

    def _call_formula(self, call: cst.Call) -> Formula | None:
        """Which ranks run what ``call`` reaches: rank 0 for a ``@rank_zero_only``
        function or ``rank_zero_only(fn)(...)``, None for every rank."""
        if self._predicates.rank_only_wrapped(call) is not None and isinstance(call.func, cst.Call):
            return _DECORATOR_ATOMS.get(_last_name(call.func.func), GLOBAL_ZERO)
        callee = self.local.callee(call)
        if callee is None:
            return None
        decorator = self._predicates.rank_only_decorator(callee)
        if decorator is None:
            return None
        target = decorator.decorator
        if isinstance(target, cst.Call):
            target = target.func
        return _DECORATOR_ATOMS.get(_last_name(target), Atom(self.conditions.text(target)))

    def exit_call(self, call: cst.Call) -> bool:
        name = self._names.qualified_name(call.func)
        if name is None and isinstance(call.func, cst.Name):
            name = call.func.value
        return name in _EXIT_CALLS


def _last_name(expr: cst.BaseExpression) -> str:
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    if isinstance(expr, cst.Name):
        return expr.value
    return ""
