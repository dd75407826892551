"""Training steps that hand back no loss on some ranks: a question to the analysis core.

``lossless_step_returns(analysis)``: each way out of an automatically optimised
``training_step`` of a module class (a LightningModule, NeMo's ``ModelPT``: by its
bases, ``module_classes``) that returns no loss tied to the parameters -- ``return`` /
``return None``, falling off the end, or a freshly built constant tensor
(``torch.tensor(0.0)``, ``torch.zeros(1).to(device)``, ``{"loss": torch.tensor(0.)}``)
-- where a test whose answer may differ between ranks decides it (a test around it, or
the nearest such test it is control-dependent on, ``rank_guards.guard_of``: ``if
torch.isfinite(loss): return loss`` before ``return None``), or in an exception
handler. The divergence is the function's own with its batch (the first parameter
after ``self``) seeded as this rank's (``Source.BATCH``): a test on the batch, on what
the model computed from it, on the rank or a clock differs between ranks (the one batch
view, ``ModuleAnalysis.batch_view``, asked as a step method); one on the
step counter, the configuration or a value all-reduced first does not.

A ``training_step`` of a module that optimises manually (``automatic_optimization =
False`` on the class or a base of the module, or a step that calls
``self.manual_backward`` / ``self.optimizers()``) is left out: Lightning accepts
``None`` there.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import Enum

from ddplint.analysis.children import walk
from ddplint.analysis.constants import nodes_within
from ddplint.analysis.control_flow import Graph
from ddplint.analysis.divergence import Divergence, Taint
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.names import Names, dotted_name
from ddplint.analysis.rank_guards import guard_of

#: Tensor constructors whose result has no autograd history.
CONSTANT_TENSORS = frozenset(
    {
        "torch.tensor",
        "torch.as_tensor",
        "torch.scalar_tensor",
        "torch.zeros",
        "torch.ones",
        "torch.full",
        "torch.empty",
        "torch.zeros_like",
        "torch.ones_like",
        "torch.full_like",
        "torch.empty_like",
    }
)
#: Methods that keep a tensor constant: moving, casting, asking for grad.
KEEPS_CONSTANT = frozenset(
    {"to", "cuda", "cpu", "float", "half", "bfloat16", "double", "requires_grad_", "detach"}
)
#: A LightningModule's calls that show it optimises manually.
_MANUAL_OPTIMIZATION_CALLS = frozenset({"self.manual_backward", "self.optimizers"})
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_TRIES = (ast.Try, ast.TryStar)


class LossKind(str, Enum):
    NONE = "None"
    CONSTANT = "a constant tensor"


@dataclass(frozen=True)
class Guard:
    """A test a statement runs under; ``negated`` where it runs when the test fails."""

    test: ast.expr
    statement: ast.If | ast.While
    negated: bool


@dataclass(frozen=True)
class LosslessReturn:
    """A way out of a step without a loss tied to the model: ``node`` is the ``return``
    statement, or for falling off the end the last statement passed; its guards
    innermost first, and the handler it runs in."""

    node: ast.stmt
    kind: LossKind
    guards: tuple[Guard, ...]
    handler: ast.ExceptHandler | None
    falls_off: bool


@dataclass(frozen=True)
class LosslessStep:
    """A lossless way out of ``function`` (a ``training_step``) taken on some ranks
    only: under ``guard``, which differs between ranks for ``taint``'s reason, or (with
    no guard) in an exception handler."""

    function: ast.FunctionDef | ast.AsyncFunctionDef
    path: LosslessReturn
    guard: Guard | None
    taint: Taint | None

    @property
    def at(self) -> ast.stmt | ast.expr:
        """Where it is reported: the ``return``; for falling off the end, the test that
        decides it (or the exception the handler catches)."""
        path = self.path
        if not path.falls_off:
            return path.node
        if self.guard is not None:
            return self.guard.test
        if path.handler is not None and path.handler.type is not None:
            return path.handler.type
        return path.node


def lossless_step_returns(analysis: ModuleAnalysis) -> list[LosslessStep]:
    """Every lossless way out of the module's automatically optimised training steps
    that some ranks take and others do not, one per place."""
    classes = analysis.objects.class_kinds
    found: list[LosslessStep] = []
    for function in analysis.nodes.functions():
        owner = analysis.nodes.scope_of.get(function)
        if function.name != "training_step" or not isinstance(owner, ast.ClassDef):
            continue
        if not classes.is_module_class(owner) or manual_optimization(analysis, function, owner):
            continue
        paths = lossless_returns(function, analysis.names)
        if not paths:
            continue  # most steps return their loss on every way: nothing to solve
        divergence = analysis.batch_view(function, step_method=True)
        graph = analysis.graphs.graph(function)
        reported: set[tuple[int, int]] = set()
        for path in paths:
            guard, taint = _deciding_guard(path, graph, divergence)
            if guard is None:
                guard, taint = _dependence_guard(analysis, function, graph, path, divergence)
            if guard is None and path.handler is None:
                continue
            step = LosslessStep(function, path, guard, taint)
            place = (step.at.lineno, step.at.col_offset)
            if place not in reported:
                reported.add(place)
                found.append(step)
    return found


def _deciding_guard(
    path: LosslessReturn, graph: Graph, divergence: Divergence
) -> tuple[Guard | None, Taint | None]:
    """The innermost guard of ``path`` whose answer may differ between ranks."""
    for guard in path.guards:
        for node in graph.nodes_of(guard.statement):
            taint = divergence.test_taint(node)
            if taint is not None:
                return guard, taint
    return None, None


def _dependence_guard(
    analysis: ModuleAnalysis,
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    graph: Graph,
    path: LosslessReturn,
    divergence: Divergence,
) -> tuple[Guard | None, Taint | None]:
    """The test that decides whether the way out is taken where no test around it does:
    the nearest divergent test it is control-dependent on (``rank_guards.guard_of``), such
    as ``if torch.isfinite(loss): return loss`` before a ``return None``."""
    nodes = graph.nodes_of(path.node)
    if not nodes:
        return None, None
    found = guard_of(analysis, function, nodes[0], None, lambda _: True, divergence)
    if found is None or found.runs_when is None:
        return None, None
    if not isinstance(found.cause, (ast.If, ast.While)) or not isinstance(found.test, ast.expr):
        return None, None
    return Guard(found.test, found.cause, not found.runs_when), found.taint


def manual_optimization(
    analysis: ModuleAnalysis,
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    owner: ast.ClassDef,
) -> bool:
    """Whether the module of this ``training_step`` optimises manually."""
    if any(
        isinstance(node, ast.Call) and dotted_name(node.func) in _MANUAL_OPTIMIZATION_CALLS
        for node in nodes_within(function.body)
    ):
        return True
    classes = {cls.name: cls for cls in analysis.nodes.of_type(ast.ClassDef)}
    return _class_sets_manual(owner, classes, frozenset())


def _class_sets_manual(
    cls: ast.ClassDef, classes: dict[str, ast.ClassDef], seen: frozenset[str]
) -> bool:
    """``automatic_optimization = False`` (or a property of that name) in the class or
    a base class of the module."""
    for node in walk(cls):
        if isinstance(node, _FUNCTIONS) and node.name == "automatic_optimization":
            return True
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and _sets_automatic_off(node):
            return True
    for base in cls.bases:
        name = dotted_name(base)
        if (
            name in classes
            and name not in seen
            and name != cls.name
            and _class_sets_manual(classes[name], classes, seen | {cls.name})
        ):
            return True
    return False


def _sets_automatic_off(node: ast.Assign | ast.AnnAssign) -> bool:
    """``self.automatic_optimization = False`` or a class attribute of that name."""
    if not (isinstance(node.value, ast.Constant) and node.value.value is False):
        return False
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return any(
        (dotted_name(t) or "").rsplit(".", 1)[-1] == "automatic_optimization" for t in targets
    )


# -- the ways out -------------------------------------------------------------------


def is_none_return(node: ast.AST) -> bool:
    """``return`` or ``return None``."""
    return isinstance(node, ast.Return) and (
        node.value is None or (isinstance(node.value, ast.Constant) and node.value.value is None)
    )


def is_constant_tensor(expression: ast.expr, names: Names) -> bool:
    """``torch.tensor(0.0)``, ``torch.zeros(1, device=d).float()``, or a dict whose
    ``"loss"`` is one."""
    if isinstance(expression, ast.Dict):
        return any(
            isinstance(key, ast.Constant)
            and key.value == "loss"
            and is_constant_tensor(value, names)
            for key, value in zip(expression.keys, expression.values, strict=True)
        )
    while (
        isinstance(expression, ast.Call)
        and isinstance(expression.func, ast.Attribute)
        and expression.func.attr in KEEPS_CONSTANT
    ):
        expression = expression.func.value
    return isinstance(expression, ast.Call) and names.resolve(expression.func) in CONSTANT_TENSORS


def lossless_returns(
    function: ast.FunctionDef | ast.AsyncFunctionDef, names: Names
) -> list[LosslessReturn]:
    """Every way out of ``function`` that returns None or a constant tensor: its own
    ``return`` statements, then falling off the end (past a final ``if`` without
    ``else`` or whose branch does not return, through ``with`` bodies, ``try`` bodies
    and handlers)."""
    found = []
    for node, guards, handler in _returns(function.body, (), None):
        if is_none_return(node):
            kind = LossKind.NONE
        elif node.value is not None and is_constant_tensor(node.value, names):
            kind = LossKind.CONSTANT
        else:
            continue
        found.append(LosslessReturn(node, kind, guards, handler, False))
    found.extend(_fall_off(function.body, (), None))
    return found


_Placed = tuple[ast.Return, tuple[Guard, ...], ast.ExceptHandler | None]


def _returns(
    statements: Sequence[ast.stmt], guards: tuple[Guard, ...], handler: ast.ExceptHandler | None
) -> Iterator[_Placed]:
    """The ``return`` statements of a block (not of nested functions or classes), in
    order, each with the ``if`` / ``while`` tests it runs under and its handler."""
    for statement in statements:
        if isinstance(statement, ast.Return):
            yield statement, guards, handler
        elif isinstance(statement, ast.If):
            yield from _returns(
                statement.body, (Guard(statement.test, statement, False), *guards), handler
            )
            yield from _returns(
                statement.orelse, (Guard(statement.test, statement, True), *guards), handler
            )
        elif isinstance(statement, ast.While):
            yield from _returns(
                statement.body, (Guard(statement.test, statement, False), *guards), handler
            )
            yield from _returns(statement.orelse, guards, handler)
        elif isinstance(statement, _TRIES):
            yield from _returns(statement.body, guards, handler)
            for caught in statement.handlers:
                yield from _returns(caught.body, guards, caught)
            yield from _returns(statement.orelse, guards, handler)
            yield from _returns(statement.finalbody, guards, handler)
        elif isinstance(statement, (ast.For, ast.AsyncFor)):
            yield from _returns(statement.body, guards, handler)
            yield from _returns(statement.orelse, guards, handler)
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            yield from _returns(statement.body, guards, handler)
        elif isinstance(statement, ast.Match):
            for case in statement.cases:
                yield from _returns(case.body, guards, handler)


def _fall_off(
    statements: Sequence[ast.stmt], guards: tuple[Guard, ...], handler: ast.ExceptHandler | None
) -> list[LosslessReturn]:
    """Paths that reach the end of ``statements`` without returning."""
    if not statements:
        return []
    last = statements[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return []
    if isinstance(last, ast.If):
        taken = _fall_off(last.body, (Guard(last.test, last, False), *guards), handler)
        otherwise = (Guard(last.test, last, True), *guards)
        if not last.orelse:
            return [*taken, LosslessReturn(last, LossKind.NONE, otherwise, handler, True)]
        return [*taken, *_fall_off(last.orelse, otherwise, handler)]
    if isinstance(last, (ast.With, ast.AsyncWith)):
        return _fall_off(last.body, guards, handler)
    if isinstance(last, _TRIES):
        if last.finalbody and not _fall_off(last.finalbody, (), None):
            return []
        found = _fall_off(last.orelse or last.body, guards, handler)
        for caught in last.handlers:
            found.extend(_fall_off(caught.body, guards, caught))
        return found
    return [LosslessReturn(last, LossKind.NONE, guards, handler, True)]
