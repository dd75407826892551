"""Whether a call runs on every pass through the code it sits in, or only now and then.

A per-step rule asks this of a call it found on the training-step path. The answer is
"not every pass" (an ``Occasion``) when the call runs only:

- on an error: in an ``except`` handler of its function (an out-of-memory fallback);
- on a sample of the passes: it is control-dependent on the rare way of a periodic
  test, one that takes a counter modulo something (``step % log_every == 0``, ``if
  it % N:`` ... ``else``), tests a loop counter for equality (``i == 0``, ``step ==
  total - 1``: the counter is a ``for`` target over ``range`` / ``enumerate`` or is
  incremented with ``+=``, or a name bound to such a counter moved or scaled, ``i_accum
  = i // accum``, ``count = i_accum + 1``) or for membership in a few listed values
  (``step in [5, 6, 7]``), draws a random number (``random.random() <
  p``), or joins such tests (an ``or`` when every part is one, ``if step % N == 0 or
  step == last:``; an ``and`` when one part is), directly or through a name bound once
  to one (``last_batch = count == total``);
- while exporting or tracing: under ``torch.onnx.is_in_onnx_export()``,
  ``torch.jit.is_scripting()`` or ``torch.jit.is_tracing()``, which an eager training
  step never is;
- in evaluation mode: on the way where a module class's ``self.training`` is false
  (asked only with ``module_method``);
- in a single-process run: on the branch ``single_process`` says only a one-process job
  takes (``if not dist.is_initialized():``, the ``else`` of ``if args.distributed:``
  where the module's other arms of that switch do the distributed work).

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
from ddplint.analysis.dominance import PostDominance
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


class Occasion(str, Enum):
    """Why a call does not run on every pass."""

    ERROR = "only when an error is handled"
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
    ) -> None:
        self._waits = waits
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
        return self.occasional_node(*found)

    def occasional_node(self, graph: Graph, node: Node) -> Occasion | None:
        """Why the statement of graph node ``node`` runs only now and then (not an
        ``except`` handler's: that is ``occasional``'s), or None."""
        post = self._post.get(id(graph))
        if post is None:
            post = self._post[id(graph)] = PostDominance(graph)
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
            if occasion is Occasion.PERIODIC and (dependence.test.index, truth) in stepping:
                continue  # the accumulation boundary: it runs once per optimizer step
            if occasion is not None:
                return occasion
            if self._single_process.one_process_branch(dependence.test) is dependence.edge:
                return Occasion.SINGLE_PROCESS
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
        """The truth on which a periodic or sampled test holds only now and then: a test
        of ``and`` parts when one part is rare when true, of ``or`` parts when every part
        is (``if step % N == 0 or step == last:``); a name bound once to such a test
        (``last = i == len(loader) - 1``, then ``if step % N == 0 or last:``)."""
        if isinstance(test, ast.Name) and test.id not in named:
            bound = self._named_tests(scope).get(test.id)
            return None if bound is None else self._rare_way(bound, scope, named | {test.id})
        if isinstance(test, ast.BoolOp):
            rare = [self._rare_way(v, scope, named) is True for v in test.values]
            return True if (any(rare) if isinstance(test.op, ast.And) else all(rare)) else None
        if _is_modulo(test):
            return False  # ``if step % N:`` is true on most passes
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            operands = [test.left, test.comparators[0]]
            op = test.ops[0]
            if isinstance(op, (ast.Eq, ast.NotEq)) and any(
                _is_modulo(o) or ast.unparse(o) in self._counters for o in operands
            ):
                return isinstance(op, ast.Eq)  # a counter equals one value once in a while
            if (
                isinstance(op, (ast.In, ast.NotIn))
                and ast.unparse(test.left) in self._counters
                and isinstance(test.comparators[0], (ast.List, ast.Tuple, ast.Set))
            ):
                return isinstance(op, ast.In)  # a counter among a few listed values
            if any(self._draws(o) for o in operands) and isinstance(op, (ast.Lt, ast.LtE)):
                return (test.left is operands[0]) == self._draws(test.left)
        return None

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
                    and isinstance(statement.value, (ast.Compare, ast.BoolOp))
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
