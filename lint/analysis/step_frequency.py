"""Whether a call runs on every pass through the code it sits in, or only now and then.

A per-step rule asks this of a call it found on the training-step path. The answer is
"not every pass" (an ``Occasion``) when the call runs only:

- on an error: in an ``except`` handler of its function (an out-of-memory fallback);
- on a sample of the passes: it is control-dependent on the rare way of a periodic test,
  one that takes a counter modulo something (``step % log_every == 0``, ``if it % N:``
  ... ``else``), tests a loop counter for equality (``i == 0``, ``step == total - 1``:
  the counter is a ``for`` target over ``range`` / ``enumerate`` or is incremented with
  ``+=``, or a name bound to such a counter moved or scaled, ``i_accum = i // accum``,
  ``count = i_accum + 1``) or for membership in a few listed values (``step in [5, 6,
  7]``, ``step in self.log_steps``; any name a part of the same join takes modulo is
  such a counter: ``idx % N == 0 or idx in log_steps``), draws a random number
  (``random.random() < p``), compares the time since a mark with an interval
  (``time.time() - t0 > interval``, ``time.monotonic()``, ``(datetime.now() -
  last).total_seconds()``; a time budget, ``elapsed < budget``, holds on most passes),
  or joins such tests (an ``or`` when every part is one, ``if step % N == 0 or step ==
  last:``; an ``and`` when one part is; ``not`` turns the rare way over, so ``if not
  should_val: return`` makes what follows rare), directly or through a name bound once
  to one (``last_batch = count == total``), a parameter every call of the module that
  runs the function hands such a test or a constant (``evaluate(..., should_val=step % k
  == 0)``: the function's own early exit makes the rest periodic), a field the module
  sets only to such tests (``self.log_now = step % k == 0``), or a call of the module's
  function whose every ``return`` gives one (``if self.should_evaluate():``) or a
  constant (``return True`` on the rare way of such a test, ``return False`` elsewhere);
- once, or on a schedule the code moves on (``disarming_tests``): the way of a test
  runs code that sets the flag the test reads so that it fails (``if not self.ready:
  self.prepare()`` with ``self.ready = True`` at the end of ``prepare``; ``if not
  hasattr(self, "x"): self.x = ...``), or moves on the threshold or mark it compares
  (``if step >= next_eval: ...; next_eval += every``);
- while exporting or tracing: under ``torch.onnx.is_in_onnx_export()``,
  ``torch.jit.is_scripting()`` or ``torch.jit.is_tracing()``, which an eager training
  step never is;
- in evaluation mode: on the way where a module class's ``self.training`` is false
  (asked only with ``module_method``);
- in a single-process run: on the branch ``single_process`` says only a one-process job
  takes (``if not dist.is_initialized():``, the ``else`` of ``if args.distributed:``
  where the module's other arms of that switch do the distributed work, the ``__main__``
  block of a module whose own program starts no group), or in a local function only
  such code calls (``SingleProcessPaths.alone_scope``).

A periodic test on whose rare way the optimizer steps (``if (i + 1) % accumulate ==
0: optimizer.step()``, ``if i % accumulate: continue``) is the step boundary of gradient
accumulation, not a sample: what runs there runs once per optimizer step, every
training step.

Decided on the function's control-flow graph (control dependence on post-dominators);
``if`` tests only (an ``and`` / conditional expression guard is the rule's own).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from enum import Enum

from ddplint.analysis.control_flow import EdgeKind, Graph, Node, NodeKind
from ddplint.analysis.disarming_tests import DisarmingTests
from ddplint.analysis.dominance import Dependence, PostDominance
from ddplint.analysis.effects import own_calls
from ddplint.analysis.fallback_defaults import FallbackDefaults
from ddplint.analysis.host_waits import HostWaits, walk_own
from ddplint.analysis.names import dotted_name
from ddplint.analysis.project import NO_PROJECT, ProjectFacts
from ddplint.analysis.single_process import SingleProcessPaths, strip_not

#: Library predicates that hold only while a model is exported or traced.
EXPORT_PREDICATES = frozenset(
    {
        "torch.onnx.is_in_onnx_export",
        "torch.jit.is_scripting",
        "torch.jit.is_tracing",
        "torch._C._get_tracing_state",
    }
)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: Declared defaults that leave an option off.
_OFF_VALUES = (False, None, 0, "")
#: Library calls whose result is a random draw.
RANDOM_DRAWS = frozenset(
    {"random.random", "random.uniform", "numpy.random.rand", "numpy.random.random", "torch.rand"}
)
#: Library calls that read a clock.
CLOCKS = frozenset(
    {
        "time.time",
        "time.monotonic",
        "time.perf_counter",
        "time.process_time",
        "datetime.datetime.now",
        "datetime.datetime.utcnow",
        "datetime.now",
        "datetime.utcnow",
        "timeit.default_timer",
    }
)
Function = ast.FunctionDef | ast.AsyncFunctionDef
Loop = ast.For | ast.AsyncFor | ast.While


class Occasion(str, Enum):
    """Why a call does not run on every pass."""

    ERROR = "only when an error is handled"
    ONCE = "only once (the code a flag guards turns the flag off)"
    PERIODIC = "only on some passes (a periodic or sampled test)"
    EXPORT = "only while the model is exported or traced"
    SINGLE_PROCESS = "only in a single-process run"
    OPT_IN = "only when an option that is off by default is turned on"
    EVALUATION = "only while the module is in evaluation mode"


class StepFrequency:
    """The frequency question for the calls of one module."""

    def __init__(
        self,
        waits: HostWaits,
        project: ProjectFacts = NO_PROJECT,
        defaults: FallbackDefaults | None = None,
        module_method: Callable[[ast.AST], bool] | None = None,
        single_process: SingleProcessPaths | None = None,
        callee_of: Callable[[ast.Call], Function | None] | None = None,
    ) -> None:
        self._waits = waits
        self._callee_of = callee_of
        self._calls_of: dict[ast.AST, list[ast.Call]] | None = None
        self._parameter_ways: dict[tuple[int, str], bool | None] = {}
        self._returned_ways: dict[int, bool | None] = {}
        self._clocks_by_scope: dict[int, set[str]] = {}
        self._disarming = DisarmingTests(waits.nodes, callee_of)
        self._decided: dict[int, dict[tuple[int, EdgeKind], list[ast.stmt]]] = {}
        self._defaults = defaults
        self._module_method = module_method
        self._names = waits.names
        self._project = project
        self._post: dict[int, PostDominance] = {}
        self._stepping: dict[int, set[tuple[int, bool]]] = {}
        self._tests_by_scope: dict[int, dict[str, ast.expr]] = {}
        self._in_handlers: set[ast.Call] = {
            call
            for handler in waits.nodes.of_type(ast.ExceptHandler)
            for statement in handler.body
            for call in _own_calls(statement)
        }
        self._counters = self._loop_counters()
        self._single_process = single_process or SingleProcessPaths(
            waits.nodes, self._names, waits.graphs, project
        )

    def occasional(self, call: ast.Call) -> Occasion | None:
        """Why ``call`` runs only now and then, or None when it runs every pass."""
        if call in self._in_handlers:
            return Occasion.ERROR
        found = self._waits.node_of(call, module_code=True)
        if found is None:
            return None
        if self._single_process.alone_scope(found[0].scope):
            return Occasion.SINGLE_PROCESS  # a local function only one-process code calls
        return self.occasional_node(*found)

    def occasional_node(self, graph: Graph, node: Node) -> Occasion | None:
        """Why the statement of graph node ``node`` runs only now and then (not an
        ``except`` handler's: that is ``occasional``'s), or None."""
        post = self._post_dominance(graph)
        stepping = self._stepping_ways(graph, post)
        for dependence in post.all_dependences(node):
            test = dependence.test.statement
            if not isinstance(test, ast.If) or dependence.edge not in (
                EdgeKind.TRUE,
                EdgeKind.FALSE,
            ):
                continue
            truth = dependence.edge is EdgeKind.TRUE
            occasion = self._test_occasion(test.test, truth, graph.scope)
            if occasion is None:
                occasion = self._disarmed(graph, post, dependence, test.test, truth)
            if occasion is Occasion.PERIODIC and (dependence.test.index, truth) in stepping:
                continue  # the accumulation boundary: it runs once per optimizer step
            if occasion is not None:
                return occasion
            if self._single_process.one_process_branch(dependence.test) is dependence.edge:
                return Occasion.SINGLE_PROCESS
        return None

    def once_per_run(self, call: ast.Call, loop: Loop) -> bool:
        """``call`` runs at most once each time ``loop`` runs, not every pass: on a way
        that leaves the loop before its next pass (``if step >= total: evaluate();
        return``), on each way that runs it (a ``finally`` runs on the loop's own way
        too), or under a flag of the loop's function that the guarded code turns off
        and nothing in the loop turns on again (``first = True`` before the loop, ``if
        first: ...; first = False`` in it)."""
        found = self._waits.node_of(call, module_code=True)
        if found is None:
            return False
        graph, node = found
        copies = graph.nodes_of(node.statement) if node.statement is not None else [node]
        if all(graph.leaves_loop(copy, loop) for copy in copies or [node]):
            return True
        post = self._post_dominance(graph)
        inside = {id(n) for statement in loop.body for n in walk_own(statement)}
        for dependence in post.all_dependences(node):
            test = dependence.test.statement
            if (
                isinstance(test, ast.If)
                and id(test) in inside
                and dependence.edge in (EdgeKind.TRUE, EdgeKind.FALSE)
                and self._disarming.once_in_loop(
                    test.test,
                    dependence.edge is EdgeKind.TRUE,
                    self._guarded(graph, post, dependence),
                    loop,
                )
            ):
                return True
        return False

    def _post_dominance(self, graph: Graph) -> PostDominance:
        post = self._post.get(id(graph))
        if post is None:
            post = self._post[id(graph)] = PostDominance(graph)
        return post

    def _guarded(self, graph: Graph, post: PostDominance, dependence: Dependence) -> list[ast.stmt]:
        """The statements the way of ``dependence`` decides directly."""
        decided = self._decided.get(id(graph))
        if decided is None:
            decided = self._decided[id(graph)] = {}
            for node in graph.nodes:
                if isinstance(node.statement, ast.stmt) and node.kind is NodeKind.STATEMENT:
                    for found in post.dependences(node):
                        key = (found.test.index, found.edge)
                        decided.setdefault(key, []).append(node.statement)
        return decided.get((dependence.test.index, dependence.edge), [])

    def _disarmed(
        self, graph: Graph, post: PostDominance, dependence: Dependence, test: ast.expr, truth: bool
    ) -> Occasion | None:
        """The way of ``test`` runs code that turns the test off: once (a flag it sets)
        or now and then (a threshold or mark it moves on): ``disarming_tests``."""
        guarded = self._guarded(graph, post, dependence)
        if self._disarming.once(test, truth, guarded, graph.scope):
            return Occasion.ONCE
        if self._disarming.rearmed(test, truth, guarded):
            return Occasion.PERIODIC
        return None

    def occasional_within(
        self, call: ast.Call, statement: ast.AST, scope: ast.AST
    ) -> Occasion | None:
        """Why ``call`` runs only now and then by a test of its own ``statement``: a
        conditional expression (``f() if step % N == 0 else None``) or the left side of
        ``and`` / ``or`` (``step % N == 0 and f()``)."""
        for test, truth in _expression_tests(statement, call):
            occasion = self._test_occasion(test, truth, scope)
            if occasion is not None:
                return occasion
        return None

    def _stepping_ways(self, graph: Graph, post: PostDominance) -> set[tuple[int, bool]]:
        """The (test, truth) ways of the graph on which an optimizer step runs
        (``if (i + 1) % accumulate == 0: optimizer.step()``): what runs on such a way
        runs once per optimizer step, which is every training step."""
        found = self._stepping.get(id(graph))
        if found is None:
            found = self._stepping[id(graph)] = set()
            for node in graph.nodes:
                if node.statement is None or node.kind is not NodeKind.STATEMENT:
                    continue
                if any(_is_parameter_step(c) for c in own_calls(node.statement)):
                    found.update(
                        (d.test.index, d.edge is EdgeKind.TRUE)
                        for d in post.all_dependences(node)
                        if d.edge in (EdgeKind.TRUE, EdgeKind.FALSE)
                    )
        return found

    def _test_occasion(self, test: ast.expr, truth: bool, scope: ast.AST) -> Occasion | None:
        """Whether taking ``test`` the ``truth`` way happens only now and then (an ``and``
        taken its true way: when one of its parts does)."""
        positive, polarity = strip_not(test)
        taken_and = isinstance(positive, ast.BoolOp) and isinstance(positive.op, ast.And)
        if polarity == truth and isinstance(positive, ast.BoolOp) and taken_and:
            for value in positive.values:
                occasion = self._test_occasion(value, True, scope)
                if occasion is not None:
                    return occasion
        if polarity == truth and self._exporting(positive):
            return Occasion.EXPORT
        if self._rare_way(positive, scope) == (polarity == truth):
            return Occasion.PERIODIC
        if polarity == truth and self._opt_in(positive, scope):
            return Occasion.OPT_IN
        if polarity != truth and self._training_flag(positive, scope):
            return Occasion.EVALUATION
        return None

    def _training_flag(self, test: ast.expr, scope: ast.AST) -> bool:
        """``self.training`` in a method of a module class (asked only with
        ``module_method``): torch's train/eval switch of the module."""
        return (
            self._module_method is not None
            and isinstance(test, ast.Attribute)
            and test.attr == "training"
            and isinstance(test.value, ast.Name)
            and isinstance(scope, _FUNCTIONS)
            and bool(scope.args.args)
            and test.value.id == scope.args.args[0].arg
            and self._module_method(scope)
        )

    # -- options off by default -------------------------------------------------------

    def _opt_in(self, test: ast.expr, scope: ast.AST) -> bool:
        """``test`` holds only when the user turns on an option that is off by default
        (asked only with ``defaults``): a parameter, command-line option or config
        field whose declared default is false (``debug=False``, ``action="store_true"``),
        or an ``and`` with such a part. What decides is the declared default, never the
        option's name."""
        if self._defaults is None:
            return False
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            return any(self._opt_in(value, scope) for value in test.values)
        if not isinstance(test, (ast.Name, ast.Attribute)):
            return False
        default = self._defaults.of(test, scope)
        if default is not None:
            return default.value in _OFF_VALUES
        return self._starts_off(test, scope)

    def _starts_off(self, test: ast.Name | ast.Attribute, scope: ast.AST) -> bool:
        """A switch the object starts off and a method turns on: ``self.x`` that
        ``__init__`` binds to ``False`` (``self.profiling = False``)."""
        nodes = self._waits.nodes
        if not isinstance(test, ast.Attribute):
            return False  # a global set at run time (``FLAG = "--flag" in sys.argv``) is not
        if not (isinstance(test.value, ast.Name) and isinstance(scope, _FUNCTIONS)):
            return False
        if not scope.args.args or test.value.id != scope.args.args[0].arg:
            return False
        owner = nodes.scope_of.get(scope)
        init = next(
            (
                s
                for s in getattr(owner, "body", [])
                if isinstance(s, _FUNCTIONS) and s.name == "__init__"
            ),
            None,
        )
        return init is not None and _first_literal(init.body, f"self.{test.attr}")

    # -- export and tracing -----------------------------------------------------------

    def _exporting(self, test: ast.expr) -> bool:
        parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) else []
        if parts:
            return all(self._exporting(part) for part in parts)
        return isinstance(test, ast.Call) and self._names.resolve(test.func) in EXPORT_PREDICATES

    # -- periodic and sampled tests ---------------------------------------------------

    def _rare_way(
        self, test: ast.expr, scope: ast.AST, named: frozenset[str] = frozenset()
    ) -> bool | None:
        """The truth on which a periodic or sampled test holds only now and then: ``not``
        turns it over; a test of ``and`` parts is rare when true if one part is, rare
        when false if every part is; of ``or`` parts the other way round (``if step % N
        == 0 or step == last:``); a name bound once to such a test (``last = i ==
        len(loader) - 1``, then ``if step % N == 0 or last:``), a parameter every call
        of the function hands such a test (``evaluate(should_val=step % k == 0)``), a
        field set only to such tests (``self.log_now = step % k == 0``)."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self._rare_way(test.operand, scope, named)
            return None if inner is None else not inner
        if isinstance(test, ast.Name) and test.id not in named:
            bound = self._named_tests(scope).get(test.id)
            if bound is not None:
                return self._rare_way(bound, scope, named | {test.id})
            return self._parameter_way(scope, test.id)
        if isinstance(test, ast.Attribute) and (spelled := dotted_name(test)) not in named:
            return self._field_way(spelled, named | {spelled or ""})
        if isinstance(test, ast.Call) and self._callee_of is not None:
            callee = self._callee_of(test)  # ``if self.should_evaluate():``
            return self._returned_way(callee) if callee is not None else None
        if isinstance(test, ast.IfExp):  # ``step % k == 0 if k else False``
            arms = [
                not arm.value
                if isinstance(arm, ast.Constant)
                else self._rare_way(arm, scope, named)
                for arm in (test.body, test.orelse)
            ]
            return arms[0] if arms[0] == arms[1] else None
        if isinstance(test, ast.BoolOp):
            sampled = _sampled_counters(test)  # ``i % N == 0 or i in log_steps``
            ways = [self._part_way(v, scope, named, sampled) for v in test.values]
            rare_true = isinstance(test.op, ast.And)  # the way on which one rare part does
            if any(way is rare_true for way in ways):
                return rare_true
            if all(way is (not rare_true) for way in ways):
                return not rare_true
            return None
        if _is_modulo(test):
            return False  # ``if step % N:`` is true on most passes
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            operands = [test.left, test.comparators[0]]
            op = test.ops[0]
            if isinstance(op, (ast.Eq, ast.NotEq)) and any(
                _is_modulo(o) or self._counts(o) for o in operands
            ):
                return isinstance(op, ast.Eq)  # a counter equals one value once in a while
            listed = _listed_way(test, self._counters)
            if listed is not None:
                return listed  # a counter among a few listed values
            if any(self._draws(o) for o in operands) and isinstance(op, (ast.Lt, ast.LtE)):
                return (test.left is operands[0]) == self._draws(test.left)
            if isinstance(op, (ast.Gt, ast.GtE, ast.Lt, ast.LtE)):
                greater = operands[0] if isinstance(op, (ast.Gt, ast.GtE)) else operands[1]
                if self._elapsed(greater, scope):
                    return True  # the time since a mark passes an interval now and then
                if self._elapsed(operands[0] if greater is operands[1] else operands[1], scope):
                    return False  # within a time budget: most passes
        return None

    def _part_way(
        self, part: ast.expr, scope: ast.AST, named: frozenset[str], sampled: set[str]
    ) -> bool | None:
        """The rare way of one part of a join, whose ``sampled`` counters are counters."""
        listed = _listed_way(part, sampled)
        return listed if listed is not None else self._rare_way(part, scope, named)

    def _counts(self, operand: ast.expr) -> bool:
        """A loop counter, or a counter moved or scaled (``i + 1``, ``step // accum``)."""
        return ast.unparse(operand) in self._counters or _moves_counter(operand, self._counters)

    def _elapsed(self, expression: ast.expr, scope: ast.AST) -> bool:
        """The time since a mark: ``time.time() - t0`` (or ``now - t0`` with ``now``
        bound to a clock), ``(datetime.now() - last).total_seconds()``, such a
        difference divided (``elapsed / 60``)."""
        if isinstance(expression, ast.Call) and isinstance(expression.func, ast.Attribute):
            return expression.func.attr == "total_seconds" and self._elapsed(
                expression.func.value, scope
            )
        if not isinstance(expression, ast.BinOp):
            return False
        if isinstance(expression.op, (ast.Div, ast.FloorDiv)):
            return self._elapsed(expression.left, scope)
        return isinstance(expression.op, ast.Sub) and self._clock(expression.left, scope)

    def _clock(self, expression: ast.expr, scope: ast.AST) -> bool:
        """A clock's reading, or a name of ``scope`` bound only to one."""
        if isinstance(expression, ast.Call):
            return self._names.resolve(expression.func) in CLOCKS
        if isinstance(expression, ast.Name):
            bound = self._clock_names(scope)
            return expression.id in bound
        return False

    def _clock_names(self, scope: ast.AST) -> set[str]:
        found = self._clocks_by_scope.get(id(scope))
        if found is None:
            values: dict[str, list[ast.expr]] = {}
            for node in walk_own(scope):
                if isinstance(node, ast.Assign) and len(node.targets) == 1:
                    target = node.targets[0]
                    if isinstance(target, ast.Name):
                        values.setdefault(target.id, []).append(node.value)
            found = self._clocks_by_scope[id(scope)] = {
                name
                for name, bound in values.items()
                if all(
                    isinstance(v, ast.Call) and self._names.resolve(v.func) in CLOCKS for v in bound
                )
            }
        return found

    # -- flags handed in or kept ----------------------------------------------------------

    def _parameter_way(self, scope: ast.AST, name: str) -> bool | None:
        """The rare way of parameter ``name`` of function ``scope`` when each call of the
        module that runs it on every pass hands it a test rare that way, or a constant
        that never takes it (``evaluate(..., should_val=step % k == 0)``); None when a
        call hands anything else, hands arguments unpacked, or none is known."""
        if self._callee_of is None or not isinstance(scope, _FUNCTIONS):
            return None
        if any(
            isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store)
            for node in walk_own(scope)
        ):
            return None  # re-bound in the function (``if flag is None: flag = self.flag``)
        key = (id(scope), name)
        if key in self._parameter_ways:
            return self._parameter_ways[key]
        self._parameter_ways[key] = None  # a call in the function itself: unknown
        ways: set[bool | None] = set()
        callers = self._callers().get(scope, [])
        for call in callers:
            if self.occasional(call) is not None:
                continue  # a call now and then runs the function now and then anyway
            ways.add(self._handed_way(call, scope, name))
        found = ways.pop() if len(ways) == 1 else None
        self._parameter_ways[key] = found
        return found

    def _returned_way(self, function: Function) -> bool | None:
        """The rare way of what ``function`` returns when every ``return`` of it gives
        a test rare that way or a constant that never takes it (``def should_eval(self):
        return self.step % self.every == 0``)."""
        key = id(function)
        if key in self._returned_ways:
            return self._returned_ways[key]
        self._returned_ways[key] = None  # a recursive call: unknown
        ways = {
            self._returned_constant_way(function, r, r.value.value)
            if isinstance(r.value, ast.Constant)
            else self._rare_way(r.value, function)
            for r in walk_own(function)
            if isinstance(r, ast.Return) and r.value is not None
        }
        found = self._returned_ways[key] = ways.pop() if len(ways) == 1 else None
        return found

    def _returned_constant_way(
        self, function: Function, returned: ast.Return, value: object
    ) -> bool:
        """The rare way of a constant ``function`` returns: the constant's own truth when
        the ``return`` runs only now and then in it (``if step % N == 0: return True``),
        else the way the constant never takes."""
        graph = self._waits.graphs.graph(function)
        rare = any(
            self.occasional_node(graph, node) in (Occasion.PERIODIC, Occasion.ONCE)
            for node in graph.nodes_of(returned)
        )
        return bool(value) if rare else not value

    def _handed_way(self, call: ast.Call, function: Function, name: str) -> bool | None:
        """The rare way of what ``call`` hands ``function``'s parameter ``name``."""
        handed = _argument_for(call, function, name)
        if handed is None:
            return None
        if isinstance(handed, ast.Constant):
            return not handed.value  # never true: "rare" when true; always: when false
        caller = self._waits.nodes.scope_of_call(call)
        return self._rare_way(handed, caller)

    def _callers(self) -> dict[ast.AST, list[ast.Call]]:
        """The module's calls of its own functions, by the function called."""
        if self._calls_of is None:
            self._calls_of = {}
            for calls in self._waits.nodes.calls_by_scope.values():
                for call in calls:
                    callee = self._callee_of(call) if self._callee_of is not None else None
                    if callee is not None:
                        self._calls_of.setdefault(callee, []).append(call)
        return self._calls_of

    def _field_way(self, spelled: str | None, named: frozenset[str]) -> bool | None:
        """The rare way of a field (``self.log_now``) every method of the module sets
        to a test rare that way, or to a false constant (it stays off: never taken)."""
        if spelled is None or not spelled.startswith("self.") or spelled.count(".") != 1:
            return None
        ways: set[bool | None] = set()
        for function, value in self._disarming.stores(spelled):
            if value is None or function is None:
                return None  # an augmented or unpacked store: not a test
            if isinstance(value, ast.Constant):
                if value.value:
                    return None  # set on, it stays on for the passes after
                continue  # off: it takes neither way now and then
            ways.add(self._rare_way(value, function, named))
        return ways.pop() if len(ways) == 1 else None

    def _draws(self, expression: ast.expr) -> bool:
        return (
            isinstance(expression, ast.Call)
            and self._names.resolve(expression.func) in RANDOM_DRAWS
        )

    def _named_tests(self, scope: ast.AST) -> dict[str, ast.expr]:
        """The names ``scope`` binds once and nowhere else, to a comparison or a join of
        tests (``last_batch = i == len(loader) - 1``)."""
        found = self._tests_by_scope.get(id(scope))
        if found is None:
            bindings: dict[str, list[ast.AST]] = {}
            for node in walk_own(scope):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    bindings.setdefault(node.id, []).append(node)
                elif isinstance(node, ast.arg):
                    bindings.setdefault(node.arg, []).append(node)
            found = self._tests_by_scope[id(scope)] = {}
            for statement in walk_own(scope):
                if (
                    isinstance(statement, ast.Assign)
                    and len(statement.targets) == 1
                    and isinstance(statement.targets[0], ast.Name)
                    and len(bindings.get(statement.targets[0].id, ())) == 1
                    and isinstance(statement.value, (ast.Compare, ast.BoolOp, ast.IfExp))
                ):
                    found[statement.targets[0].id] = statement.value
        return found

    def _loop_counters(self) -> set[str]:
        """The module's counters: ``for`` targets over ``range`` (the index of
        ``enumerate``), and names or fields incremented with ``+=``."""
        found: set[str] = set()
        for loop in self._waits.nodes.of_type(ast.For):
            source = loop.iter
            if not isinstance(source, ast.Call):
                continue
            resolved = self._names.resolve(source.func)
            if resolved == "range" and isinstance(loop.target, ast.Name):
                found.add(loop.target.id)
            elif (
                resolved == "enumerate" and isinstance(loop.target, ast.Tuple) and loop.target.elts
            ):
                found.add(ast.unparse(loop.target.elts[0]))
        for step in self._waits.nodes.of_type(ast.AugAssign):
            if isinstance(step.op, ast.Add) and isinstance(step.value, ast.Constant):
                found.add(ast.unparse(step.target))
        return self._derived_counters(found)

    def _derived_counters(self, counters: set[str]) -> set[str]:
        """``counters`` and the names bound to a counter moved or scaled by something
        else (``i_accum = i // accum``, ``count = i_accum + 1``, ``step = epoch * n +
        i``): such a name takes one value per pass as its counter does."""
        derived = [
            (statement.targets[0].id, statement.value)
            for statement in self._waits.nodes.of_type(ast.Assign)
            if len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name)
        ]
        found = set(counters)
        grown = True
        while grown:
            grown = False
            for name, value in derived:
                if name not in found and _moves_counter(value, found):
                    found.add(name)
                    grown = True
        return found


def _argument_for(call: ast.Call, function: Function, name: str) -> ast.expr | None:
    """What ``call`` hands ``function``'s parameter ``name``: its keyword, its position
    (after ``self`` for ``obj.method(...)``), else the declared default; None when the
    call unpacks arguments or the parameter has none of these."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        return None
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    names = [a.arg for a in positional]
    if name in names:
        index = names.index(name) - (1 if isinstance(call.func, ast.Attribute) else 0)
        if 0 <= index < len(call.args):
            return call.args[index]
        defaults = arguments.defaults
        offset = names.index(name) - (len(positional) - len(defaults))
        return defaults[offset] if offset >= 0 else None
    keyword_names = [a.arg for a in arguments.kwonlyargs]
    if name in keyword_names:
        return arguments.kw_defaults[keyword_names.index(name)]
    return None


def _first_literal(statements: list[ast.stmt], spelled: str) -> bool:
    """The first plain assignment to ``spelled`` among ``statements`` binds ``False``
    (``None`` is a placeholder for an object made later, not a switch)."""
    for statement in statements:
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and dotted_name(statement.targets[0]) == spelled
        ):
            value = statement.value
            return isinstance(value, ast.Constant) and value.value is False
    return False


def _expression_tests(root: ast.AST, target: ast.AST) -> list[tuple[ast.expr, bool]]:
    """The tests of conditional expressions and ``and`` / ``or`` inside ``root`` that
    decide whether ``target`` is evaluated, each with the answer that evaluates it."""
    pending: list[tuple[ast.AST, list[tuple[ast.expr, bool]]]] = [(root, [])]
    while pending:
        node, tests = pending.pop()
        if node is target:
            return tests
        if isinstance(node, ast.IfExp):
            pending += [(node.test, tests), (node.body, [*tests, (node.test, True)])]
            pending.append((node.orelse, [*tests, (node.test, False)]))
        elif isinstance(node, ast.BoolOp):
            truth = isinstance(node.op, ast.And)
            for index, value in enumerate(node.values):
                pending.append((value, [*tests, *((v, truth) for v in node.values[:index])]))
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            pending.extend((child, tests) for child in ast.iter_child_nodes(node))
    return []


def _is_parameter_step(call: ast.Call) -> bool:
    """``optimizer.step()``, ``scaler.step(optimizer)``, ``engine.step()``: the update
    of a training step (the method of every torch optimizer, scaler and engine)."""
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "step"
        and len(call.args) <= 1
        and not call.keywords
        and all(isinstance(a, (ast.Name, ast.Attribute)) for a in call.args)
    )


def _moves_counter(value: ast.expr, counters: set[str]) -> bool:
    """``i + 1``, ``i // accum``, ``epoch * n + i``: arithmetic that keeps one of
    ``counters`` as a term (a sum, a difference, a floor division of it)."""
    if not isinstance(value, ast.BinOp):
        return False
    if isinstance(value.op, ast.FloorDiv):
        terms = [value.left]
    elif isinstance(value.op, (ast.Add, ast.Sub)):
        terms = [value.left, value.right]
    else:
        return False
    return any(ast.unparse(term) in counters or _moves_counter(term, counters) for term in terms)


def _sampled_counters(test: ast.BoolOp) -> set[str]:
    """What the parts of ``test`` take modulo something and compare for equality
    (``step`` of ``step % N == 0``): the test samples it as a counter."""
    return {
        ast.unparse(operand.left)
        for part in test.values
        if isinstance(part, ast.Compare)
        and len(part.ops) == 1
        and isinstance(part.ops[0], (ast.Eq, ast.NotEq))
        for operand in (part.left, part.comparators[0])
        if _is_modulo(operand) and isinstance(operand, ast.BinOp)
    }


def _listed_way(test: ast.expr, counters: set[str]) -> bool | None:
    """The rare way of a counter's membership in a collection of values (``step in
    [5, 6, 7]``, ``step in self.log_steps``): true; None for another test, or a
    collection a call builds (``step in range(warmup)`` holds on a stretch of passes)."""
    if not (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.In, ast.NotIn))
        and ast.unparse(test.left) in counters
    ):
        return None
    collection = test.comparators[0]
    if not isinstance(collection, (ast.List, ast.Tuple, ast.Set, ast.Name, ast.Attribute)):
        return None
    return isinstance(test.ops[0], ast.In)


def _is_modulo(expression: ast.expr) -> bool:
    """``counter % N``, not string formatting (``"%d" % n``)."""
    return (
        isinstance(expression, ast.BinOp)
        and isinstance(expression.op, ast.Mod)
        and not isinstance(expression.left, (ast.Constant, ast.JoinedStr))
    )


def _own_calls(root: ast.AST) -> list[ast.Call]:
    """The calls ``root`` makes itself (nested functions and lambdas left out)."""
    return [node for node in walk_own(root) if isinstance(node, ast.Call)]
