"""Optimizer steps taken on some ranks only: a question to the analysis core.

``steps_on_some_ranks(analysis)``: each optimizer, scheduler or gradient-scaler step
(``opt.step()``, ``scaler.step(opt)``, a DeepSpeed engine's ``step()``) that is
control-dependent on a test whose answer may differ between ranks (the rank, this
rank's model output, a value set under such a test), reported at the test, with the
step as its related place. What steps is decided by what the receiver *is*: made by a
call into an optimizer library (``torch.optim.AdamW(...)``,
``get_linear_schedule_with_warmup(...)``, ``GradScaler()``, ``deepspeed.initialize``),
handed through ``accelerator.prepare``, annotated as one, or a LightningModule's own
``self.optimizers()`` / ``self.lr_schedulers()``; never by its variable name.

Correct by construction, not reported: a test every rank answers alike (a step counter,
the world size, a flag made to agree by a collective: the divergence analysis), a test
whose every branch takes the same step (pairing), a step whose optimizer's listed
parameters are broadcast to every rank right after the branches meet (the stepped
value is shared: agreement after a collective), and a test whose branches already
issue different collectives (the ranks part there: ``where_ranks_part``'s finding, one
per root cause).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from ddplint.analysis.control_flow import Node, NodeKind, Scope
from ddplint.analysis.divergence import Source, Taint, distributed_function
from ddplint.analysis.effects import own_calls
from ddplint.analysis.functions import FunctionFacts, ModuleAnalysis, ways_on
from ddplint.analysis.names import Names, call_argument, dotted_name
from ddplint.analysis.pairing import arms_agree
from ddplint.analysis.questions import expression_guard
from ddplint.analysis.rank_guards import rank_only_decorator

#: Modules whose classes and factories make optimizers, schedulers or gradient scalers.
STEPPER_MODULES = (
    "torch.optim",
    "torch.cuda.amp.GradScaler",
    "torch.amp.GradScaler",
    "torch.GradScaler",
    "torch.cuda.amp.grad_scaler.GradScaler",
    "torch.amp.grad_scaler.GradScaler",
    "transformers.optimization",
    "transformers.AdamW",
    "transformers.Adafactor",
    "transformers.get_scheduler",
    "transformers.get_linear_schedule_with_warmup",
    "transformers.get_cosine_schedule_with_warmup",
    "transformers.get_constant_schedule_with_warmup",
    "transformers.get_polynomial_decay_schedule_with_warmup",
    "transformers.get_cosine_with_hard_restarts_schedule_with_warmup",
    "diffusers.optimization",
    "timm.optim",
    "timm.scheduler",
    "bitsandbytes.optim",
    "apex.optimizers",
    "deepspeed.ops.adam",
    "deepspeed.ops.lamb",
    "deepspeed.runtime.lr_schedules",
)
#: Returns (engine, optimizer, loader, scheduler): the engine and both others step.
_DEEPSPEED_INITIALIZE = "deepspeed.initialize"
_DEEPSPEED_STEPPING = (0, 1, 3)
#: A LightningModule's own accessors of its optimizers and schedulers.
_LIGHTNING_ACCESSORS = frozenset({"optimizers", "lr_schedulers"})
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _from_library(resolved: str | None) -> bool:
    return resolved is not None and any(
        resolved == module or resolved.startswith(module + ".") for module in STEPPER_MODULES
    )


class Steppers:
    """The names of a module that hold something with an optimizer step, by what made
    them: plain names per function, ``self.x`` fields module-wide."""

    def __init__(self, analysis: ModuleAnalysis) -> None:
        self.names: Names = analysis.names
        self._lightning = {c.name for c in analysis.objects.lightning_classes}
        #: id of a node -> (id of its function, the class that function is a method of).
        self._where: dict[int, tuple[int, str | None]] = _enclosing_functions(analysis.module)
        self._fields: set[str] = set()
        self._locals: dict[int, set[str]] = {}
        #: An optimizer field or name -> the parameters its construction lists.
        self._parameters: dict[str, set[str]] = {}
        for _ in range(2):  # a name handed on (``accelerator.prepare``) after it is made
            for assignment in analysis.nodes.of_type(ast.Assign):
                self._allocation(assignment.targets, assignment.value)
            for annotated in analysis.nodes.of_type(ast.AnnAssign):
                if _from_library(self.names.resolve(annotated.annotation)):
                    self._add(annotated.target)
                elif annotated.value is not None:
                    self._allocation([annotated.target], annotated.value)
        for argument in analysis.nodes.of_type(ast.arg):
            if argument.annotation is not None and _from_library(
                self.names.resolve(argument.annotation)
            ):
                self._add(argument, argument.arg)

    def _add(self, target: ast.AST, spelled: str | None = None) -> None:
        spelled = spelled or dotted_name(target)
        if spelled is None:
            return
        if "." in spelled:
            self._fields.add(spelled)
        else:
            self._locals.setdefault(self._where.get(id(target), (0, None))[0], set()).add(spelled)

    def _allocation(self, targets: list[ast.expr], value: ast.expr) -> None:
        if not isinstance(value, ast.Call):
            return
        resolved = self.names.resolve(value.func)
        if _from_library(resolved):
            listed = _listed_parameters(value)
            for target in targets:
                self._add(target)
                if (spelled := dotted_name(target)) is not None and listed:
                    self._parameters.setdefault(spelled, set()).update(listed)
            return
        handed = self._handed_through(value, resolved)
        for target in targets if handed else ():
            if isinstance(target, (ast.Tuple, ast.List)):
                for position, part in enumerate(target.elts):
                    if position in handed:
                        self._add(part)

    def _handed_through(self, call: ast.Call, resolved: str | None) -> set[int]:
        """The positions of a call's result that hold a stepper: DeepSpeed's engine,
        optimizer and scheduler; what ``prepare`` hands back in the order given."""
        if resolved == _DEEPSPEED_INITIALIZE:
            return set(_DEEPSPEED_STEPPING)
        if isinstance(call.func, ast.Attribute) and call.func.attr == "prepare":
            return {position for position, argument in enumerate(call.args) if self.holds(argument)}
        return set()

    def holds(self, expression: ast.expr) -> bool:
        """Whether ``expression`` is an optimizer, scheduler, scaler or engine."""
        function, owner = self._where.get(id(expression), (0, None))
        if isinstance(expression, ast.Call) and isinstance(expression.func, ast.Attribute):
            accessor = expression.func
            return (
                accessor.attr in _LIGHTNING_ACCESSORS
                and isinstance(accessor.value, ast.Name)
                and accessor.value.id == "self"
                and owner in self._lightning
            )
        spelled = dotted_name(expression)
        if spelled is None:
            return False
        if "." in spelled:
            return spelled in self._fields
        return spelled in self._locals.get(function, set())

    def parameters_of(self, call: ast.Call) -> set[str]:
        """The parameters (``self.log_lambda``) the optimizer a step ``call`` steps was
        built on, where its construction lists them (``SGD([self.log_lambda])``)."""
        stepped = self.stepped(call)
        spelled = dotted_name(stepped) if stepped is not None else None
        return self._parameters.get(spelled, set()) if spelled is not None else set()

    def stepped(self, call: ast.Call) -> ast.expr | None:
        """What ``call`` steps, if it is a step: ``opt.step()``, ``scaler.step(opt)``."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr == "step"):
            return None
        return func.value if self.holds(func.value) else None


def _listed_parameters(construction: ast.Call) -> set[str]:
    """The names and fields a library optimizer's construction lists as its parameters
    (its first argument, a list or tuple display of them); empty otherwise."""
    given = call_argument(construction, 0, "params")
    if not isinstance(given, (ast.List, ast.Tuple)):
        return set()
    listed = {dotted_name(element) for element in given.elts}
    return set() if None in listed else {name for name in listed if name is not None}


def _enclosing_functions(module: ast.Module) -> dict[int, tuple[int, str | None]]:
    """Each node's function (its id; 0 for module code) and the class it is a method
    of (a function nested in a method keeps the method's class)."""
    found: dict[int, tuple[int, str | None]] = {}
    pending: list[tuple[ast.AST, int, str | None, str | None]] = [(module, 0, None, None)]
    while pending:
        node, function, owner, in_class = pending.pop()
        found[id(node)] = (function, owner)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, _FUNCTIONS):
                found[id(child)] = (function, owner)
                inner_owner = in_class if in_class is not None else owner
                for part in ast.iter_child_nodes(child):
                    pending.append((part, id(child), inner_owner, None))
            elif isinstance(child, ast.ClassDef):
                pending.append((child, function, owner, child.name))
            else:
                pending.append((child, function, owner, in_class))
    return found


@dataclass(frozen=True)
class StepParting:
    """``step`` (or the local call that reaches one, named ``through``) runs on some
    ranks only: ``cause`` decides it (a test, or a decorator that runs the function on
    one rank) on a value that differs between ranks for ``taint``'s reason."""

    function: Scope
    cause: ast.AST
    test: ast.AST
    taint: Taint
    step: ast.Call
    through: str | None = None

    @property
    def on_data(self) -> bool:
        """Whether the test reads this rank's data rather than the rank."""
        return self.taint.source not in (Source.RANK, Source.DECIDED)


def steps_on_some_ranks(analysis: ModuleAnalysis) -> list[StepParting]:
    """Every optimizer step of the module that runs on some ranks only."""
    if _parameter_server(analysis):
        return []
    steppers = Steppers(analysis)
    stepping = _stepping_functions(analysis, steppers)
    found: list[StepParting] = []
    for scope in _scopes_with_steps(analysis, steppers, stepping):
        function = analysis.function(scope)
        decorated = rank_only_decorator(analysis, scope)
        steps = list(_steps(function, steppers, stepping))
        if decorated is not None and steps:
            _, call, through = steps[0]
            cause = decorated.cause
            found.append(StepParting(scope, cause, cause, decorated.taint, call, through))
            continue
        by_node: dict[int, set[str]] = {}
        for node, call, through in steps:
            by_node.setdefault(node.index, set()).add(_identity(call, through))
        found.extend(_guarded(scope, function, steps, by_node, steppers))
        found.extend(_expression_guarded(scope, function, steps))
    return sorted(found, key=lambda p: (getattr(p.cause, "lineno", 0), p.step.lineno))


def _guarded(
    scope: Scope,
    function: FunctionFacts,
    steps: list[tuple[Node, ast.Call, str | None]],
    by_node: dict[int, set[str]],
    steppers: Steppers,
) -> Iterator[StepParting]:
    reported: set[int] = set()
    for node, call, through in steps:
        for dependence in function.dominance.all_dependences(node):
            test = dependence.test
            if test.index in reported or test.statement is None:
                continue
            taint = function.divergence.test_taint(test)
            if taint is None or len(list(ways_on(test))) < 2:
                continue  # every rank alike; or one way ends the job loudly (``assert``)
            if arms_agree(function, test) is False:
                continue  # the ranks part in collectives there: that question's finding
            if _paired(function, test, _identity(call, through), by_node):
                continue
            if _shared_after(function, test, steppers.parameters_of(call)):
                continue  # what the arm stepped is broadcast to every rank right after
            reported.add(test.index)
            yield StepParting(scope, test.statement, test.statement, taint, call, through)
            break  # the innermost divergent test is the root cause


#: How many statements after a test's join are searched for the broadcast that shares
#: what its arm stepped.
_SHARED_WITHIN = 3


def _shared_after(function: FunctionFacts, test: Node, stepped: set[str]) -> bool:
    """Whether what the test's arm steps is shared right after the arms meet: a
    ``broadcast`` every rank reaches, within ``_SHARED_WITHIN`` statements of the join,
    of a parameter the stepped optimizer was built on (``stepped``; rank 0 alone
    updates a Lagrange multiplier, then broadcasts it): every rank holds the stepped
    value after it."""
    node = function.dominance.immediate(test)
    for _ in range(_SHARED_WITHIN):
        if node is None or node.statement is None:
            return False
        for call in own_calls(node.statement):
            if distributed_function(function.divergence.names.resolve(call.func)) != "broadcast":
                continue
            buffer = call_argument(call, 0, "tensor")
            if buffer is not None and dotted_name(buffer) in stepped:
                return True
        node = function.dominance.immediate(node)
    return False


def _expression_guarded(
    scope: Scope, function: FunctionFacts, steps: list[tuple[Node, ast.Call, str | None]]
) -> Iterator[StepParting]:
    """``opt.step() if rank == 0 else None``, ``is_main and opt.step()``."""
    for node, call, through in steps:
        if node.statement is None:
            continue
        guard = expression_guard(node.statement, call)
        if guard is None:
            continue
        taint = function.divergence.taint(guard, node)
        if taint is not None:
            yield StepParting(scope, node.statement, guard, taint, call, through)


def _identity(call: ast.Call, through: str | None) -> str:
    """What a step steps, for pairing: the receiver, or the local function called."""
    if through is not None or not isinstance(call.func, ast.Attribute):
        return ast.unparse(call.func)
    return ast.unparse(call.func.value)


def _paired(
    function: FunctionFacts, test: Node, identity: str, by_node: dict[int, set[str]]
) -> bool:
    """Whether every branch of ``test`` that goes on takes the same step before the
    branches meet (``if main: opt.step(); log() else: opt.step()``); a branch that ends
    the job loudly (``raise``, a failing ``assert``) leaves no rank waiting."""
    join = function.dominance.immediate(test)
    for start, _ in ways_on(test):
        steps, goes_on = _steps_until(by_node, start, test, join)
        if goes_on and identity not in steps:
            return False
    return True


def _steps_until(
    by_node: dict[int, set[str]], start: Node, test: Node, join: Node | None
) -> tuple[set[str], bool]:
    """The identities of the steps a branch takes before the join (not around the loop
    again: a loop step ends the walk), and whether it goes on at all (reaches the join,
    the loop or the function's end) rather than ending the job loudly."""
    found: set[str] = set()
    goes_on = False
    seen = {test.index}
    pending = [start]
    while pending:
        node = pending.pop()
        if join is not None and node.index == join.index:
            goes_on = True
            continue
        if node.index in seen:
            continue
        seen.add(node.index)
        found.update(by_node.get(node.index, ()))
        if node.kind in (NodeKind.STEP, NodeKind.EXIT, NodeKind.RAISE):
            goes_on = True
            continue
        pending.extend(s for s, _ in ways_on(node))
    return found, goes_on


def _steps(
    function: FunctionFacts, steppers: Steppers, stepping: dict[str, str]
) -> Iterator[tuple[Node, ast.Call, str | None]]:
    """Each node's steps: its own, and its calls of local functions that step (with
    the step they reach)."""
    for node in function.graph.nodes:
        if node.statement is None or node.kind not in (NodeKind.STATEMENT, NodeKind.TEST):
            continue
        for call in own_calls(node.statement):
            if steppers.stepped(call) is not None:
                yield node, call, None
            elif (callee := dotted_name(call.func)) in stepping:
                yield node, call, stepping[callee]


def _scopes_with_steps(
    analysis: ModuleAnalysis, steppers: Steppers, stepping: dict[str, str]
) -> Iterator[Scope]:
    """The functions (and module code) whose own calls step or call one that does."""
    for scope, calls in analysis.nodes.calls_by_scope.items():
        if not isinstance(scope, (*_FUNCTIONS, ast.Module)):
            continue
        if any(
            steppers.stepped(call) is not None or dotted_name(call.func) in stepping
            for call in calls
        ):
            yield scope


def _stepping_functions(analysis: ModuleAnalysis, steppers: Steppers) -> dict[str, str]:
    """How calls name the module's functions that step (``f``, ``self.f``), two calls
    deep, with the step each reaches."""

    def step_of(call: ast.Call) -> str | None:
        stepped = steppers.stepped(call)
        return f"{ast.unparse(stepped)}.step()" if stepped is not None else None

    return analysis.functions_reaching(step_of)


def _parameter_server(analysis: ModuleAnalysis) -> bool:
    """A ``torch.distributed.rpc`` program with no data-parallel replicas (a parameter
    server, trainers and workers with roles): ranks step different things by design."""
    rpc = "torch.distributed.rpc"
    uses_rpc = any(
        bound == rpc or bound.startswith(rpc + ".") for bound in analysis.names.imports.values()
    )
    return uses_rpc and not analysis.objects.ddp_models
