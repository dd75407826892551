"""Which statements issue a collective, and under which condition they synchronise.

Implicit collectives count too: the forward of a model wrapped in
``DistributedDataParallel`` (it broadcasts the buffers) and the backward of a loss in a
module that wraps one (it all-reduces the gradients; not inside ``no_sync()``), and
accelerate's and Fabric's ``backward``.

Effects come from what a call is, not what its receiver is called: ``torch.distributed``
(and ``deepspeed.comm``) functions by their resolved name; framework methods by the
receiver's allocation or annotation (``acc = Accelerator()``, ``self.accelerator =
Accelerator(...)``, ``fabric: Fabric``; ``self`` in a ``LightningModule``). An effect may
be *conditional*: accelerate's ``save_state`` synchronises only under DeepSpeed, FSDP or
Megatron-LM (or with automatic checkpoint naming), so it counts only in a module that
uses one of them, or where it is given no directory (automatic naming names it).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ddplint.analysis.api import (
    ACCELERATE_CLASSES,
    AGREED_ARGUMENTS,
    BACKWARD_FUNCTIONS,
    CHECKPOINT_FUNCTIONS,
    DDP_WRAPPERS,
    DEVICE_MESH_CREATORS,
    FABRIC_CLASSES,
    FSDP_COLLECTIVES,
    PARALLELIZE_FUNCTIONS,
    SHARDING_WRAPPERS,
    STATE_DICT_READS,
    TORCH_COLLECTIVES,
)
from ddplint.analysis.children import child_nodes, walk
from ddplint.analysis.control_flow import Node, NodeKind
from ddplint.analysis.divergence import distributed_function
from ddplint.analysis.literal_values import scalar_literal
from ddplint.analysis.model_buffers import BufferFreeModels
from ddplint.analysis.module_classes import ClassKinds
from ddplint.analysis.module_nodes import ModuleNodes
from ddplint.analysis.names import Names, call_argument, dotted_name, keyword_true
from ddplint.analysis.object_kinds import LIGHTNING_MODULE
from ddplint.analysis.project import NO_PROJECT, ProjectFacts, parameters_at, project_key

#: The implicit collective of a DDP model's forward (its buffers' broadcast).
DDP_FORWARD = "DistributedDataParallel forward"

ACCELERATE_COLLECTIVES = frozenset(
    {
        "wait_for_everyone",
        "gather",
        "gather_for_metrics",
        "reduce",
        "pad_across_processes",
        "backward",
    }
)
#: Methods of a Lightning strategy (``trainer.strategy``, an attribute path of the API).
STRATEGY_COLLECTIVES = frozenset({"barrier", "broadcast", "reduce", "reduce_boolean_decision"})
FABRIC_COLLECTIVES = frozenset({"barrier", "broadcast", "all_reduce", "all_gather", "backward"})
#: accelerate methods that synchronise only under some backends or settings.
ACCELERATE_CONDITIONAL = {
    "save_state": "under DeepSpeed, FSDP or Megatron-LM, or with automatic checkpoint naming"
}
#: Wrappers that take a ``torch.nn`` module (first argument or ``module=``).
MODEL_WRAPPERS = DDP_WRAPPERS | SHARDING_WRAPPERS | PARALLELIZE_FUNCTIONS
#: Wrappers that shard or parallelise the model they are given in place.
IN_PLACE_SHARDING = (SHARDING_WRAPPERS | PARALLELIZE_FUNCTIONS) - {
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
}
#: Methods only a ``torch.nn`` module has among what a training script calls.
MODULE_METHODS = frozenset(
    {"eval", "train", "parameters", "named_parameters", "modules", "named_modules"}
)
#: What a module spells when one of those backends or settings can hold.
CONDITION_MARKERS = (
    "DEEPSPEED",
    "FSDP",
    "MEGATRON_LM",
    "DeepSpeedPlugin",
    "FullyShardedDataParallelPlugin",
    "automatic_checkpoint_naming",
)


@dataclass(frozen=True)
class Collective:
    """A call that every rank of its group must reach; ``condition`` says when it
    synchronises if not always."""

    name: str
    call: ast.Call
    condition: str | None = None
    #: The chain of calls to it in other modules of the project, for the message.
    via: str | None = None
    #: Issued by the framework inside the call (a DDP model's forward or a backward),
    #: not spelled as a collective in the code.
    implicit: bool = False

    @property
    def line(self) -> int:
        return self.call.lineno

    def agreed(self) -> Iterator[tuple[str, str, ast.expr | None]]:
        """(what it is, its keyword, the expression given or None) for each argument of
        this collective that every rank must pass alike (``AGREED_ARGUMENTS``); none
        for a call of a project function that reaches it elsewhere."""
        if self.via is not None:
            return
        for kind, position, keyword in AGREED_ARGUMENTS.get(self.name, ()):
            if position is None:
                given = next((k.value for k in self.call.keywords if k.arg == keyword), None)
            else:
                given = call_argument(self.call, position, keyword)
            yield kind, keyword, given

    @property
    def group(self) -> str | None:
        """The process group it runs on when one is named (membership may follow the
        very rank test around it), None for the default group."""
        for keyword in self.call.keywords:
            if keyword.arg == "group" and not default_group(keyword.value):
                return ast.unparse(keyword.value)
        return None


def default_group(value: ast.expr) -> bool:
    """``None``, ``group.WORLD`` or ``GroupMember.WORLD``: the default process group,
    every rank a member."""
    spelled = dotted_name(value) or ""
    return (isinstance(value, ast.Constant) and value.value is None) or spelled.endswith(
        ("group.WORLD", "GroupMember.WORLD")
    )


class FrameworkObjects:
    """The names in a module that hold an accelerate ``Accelerator``, a Lightning
    ``Fabric`` or a ``DistributedDataParallel`` model (by allocation or annotation), and
    its ``LightningModule`` classes (NeMo's models among them; through bases of the
    module or of the project: ``module_classes``)."""

    def __init__(
        self, nodes: ModuleNodes, names: Names, project: ProjectFacts = NO_PROJECT
    ) -> None:
        self.names = names
        self.nodes = nodes
        self.project = project
        self.local_functions = {f.name for f in nodes.functions()}
        self.accelerators: set[str] = set()
        self.fabrics: set[str] = set()
        #: (scope, name) -> the wrapping call (None when known by annotation only);
        #: the scope is None for attributes (``self.model``), which methods share.
        self.ddp_models: dict[tuple[int | None, str], ast.Call | None] = {}
        self._scope_nodes = nodes.call_scopes
        self.lightning_classes: set[ast.ClassDef] = set()
        assignments: list[ast.Assign | ast.AnnAssign] = [*nodes.of_type(ast.Assign)]
        assignments += nodes.of_type(ast.AnnAssign)
        for assignment in assignments:
            self._allocation(assignment)
        for argument in nodes.of_type(ast.arg):
            if argument.annotation is not None:
                self._annotated(argument.arg, argument.annotation)
        #: The kind of each class of the module (a module, a LightningModule, ...).
        self.class_kinds = ClassKinds(nodes, names, project)
        for cls in nodes.of_type(ast.ClassDef):
            if self.class_kinds.kind(cls) == LIGHTNING_MODULE:
                self.lightning_classes.add(cls)
        spelled = (
            *(n.id for n in nodes.of_type(ast.Name)),
            *(n.attr for n in nodes.of_type(ast.Attribute)),
            *(k.arg for k in nodes.of_type(ast.keyword)),
        )
        self.uses_conditional_backend = any(name in CONDITION_MARKERS for name in spelled)
        self.unsynced: set[int] = self._calls_under_no_sync(nodes)
        #: Which classes of the module hold no buffers (a DDP forward of one syncs none),
        #: and for a parameter handed a DDP model, the wrapping calls that made it.
        self.buffer_free = BufferFreeModels(nodes, names)
        self._handed_wrappings: dict[tuple[int | None, str], set[ast.Call | None]] = {}
        self._models_from_callers(nodes)
        #: Models sharded or tensor-parallel (keyed like ``ddp_models``), and the
        #: ``model = model.module`` statements that unwrap a DDP model.
        self.sharded_models: dict[tuple[int | None, str], ast.Call] = {}
        self._unwrapped: list[tuple[int, str, tuple[int, int]]] = []
        self.torch_modules = self._torch_modules(nodes)
        self._models_from_local_callers(nodes)

    def _torch_modules(self, nodes: ModuleNodes) -> dict[int | None, set[str]]:
        """Names the module treats as ``torch.nn`` modules, by what it does with them:
        wraps them for data or model parallelism, or calls a module's own methods
        (``model.eval()``, ``model.parameters()``); keyed like ``ddp_models`` (the scope,
        None for attributes)."""
        found: dict[int | None, set[str]] = {}

        def add(expression: ast.AST | None, scope: ast.AST) -> None:
            spelled = dotted_name(expression) if expression is not None else None
            if spelled is not None:
                found.setdefault(None if "." in spelled else id(scope), set()).add(spelled)

        for scope, calls in nodes.calls_by_scope.items():
            for call in calls:
                resolved = self.names.resolve(call.func)
                if resolved in MODEL_WRAPPERS:
                    model = call_argument(call, 0, "module")
                    add(model, scope)
                    if resolved in IN_PLACE_SHARDING and model is not None:
                        self._sharded(call, model)
                elif isinstance(call.func, ast.Attribute) and call.func.attr in MODULE_METHODS:
                    add(call.func.value, scope)
        for assignment in nodes.of_type(ast.Assign):
            value = assignment.value
            if isinstance(value, ast.Call) and self.names.resolve(value.func) in MODEL_WRAPPERS:
                for target in assignment.targets:
                    add(target, self._scope_nodes[id(value)])
                    if self.names.resolve(value.func) in SHARDING_WRAPPERS:
                        self._sharded(value, target)
        for function in nodes.functions():
            for inner in walk(function):
                if _unwraps(inner):
                    assert isinstance(inner, ast.Assign)
                    name = dotted_name(inner.targets[0]) or ""
                    self._unwrapped.append((id(function), name, _position(inner)))
        return found

    def _sharded(self, wrapping: ast.Call, model: ast.expr) -> None:
        """A model whose forward gathers shards or reduces partial results (FSDP,
        ``fully_shard``, ``parallelize_module``)."""
        spelled = dotted_name(model)
        if spelled is not None:
            scope = None if "." in spelled else self._scope_id(wrapping)
            self.sharded_models.setdefault((scope, spelled), wrapping)

    def _unwrapped_before(self, call: ast.Call, key: tuple[int | None, str]) -> bool:
        """``model = model.module`` earlier in the function: the plain model since."""
        scope, name = key
        return scope is not None and any(
            (where, unwrapped) == (scope, name) and position < _position(call)
            for where, unwrapped, position in self._unwrapped
        )

    def torch_modules_in(self, scope: ast.AST) -> frozenset[str]:
        """The names a scope may call as a ``torch.nn`` module (its forward)."""
        own = self.torch_modules.get(id(scope), set())
        return frozenset(own | self.torch_modules.get(None, set()))

    def _models_from_callers(self, nodes: ModuleNodes) -> None:
        """Parameters of this module's functions that a caller elsewhere in the project
        hands a DDP model in (the project model follows the model across modules)."""
        for function in nodes.functions():
            owner = nodes.scope_of.get(function)
            key = project_key(function, owner)
            if key is None:
                continue
            for parameter in parameters_at(function, owner, self.project.ddp_parameters(key)):
                self.ddp_models.setdefault((id(function), parameter), None)

    def _models_from_local_callers(self, nodes: ModuleNodes) -> None:
        """Parameters of this module's plain functions that a call in the module hands a
        DDP model (``evaluate(ddp_model, loader)``), through calls in turn."""
        functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        for function in nodes.functions():
            if not isinstance(nodes.scope_of.get(function), ast.ClassDef):
                functions.setdefault(function.name, function)
        calls = [
            call
            for scope_calls in nodes.calls_by_scope.values()
            for call in scope_calls
            if isinstance(call.func, ast.Name) and call.func.id in functions
        ]
        for _ in range(3):  # handed on through up to three calls
            before = len(self.ddp_models)
            for call in calls:
                assert isinstance(call.func, ast.Name)
                callee = functions[call.func.id]
                for parameter in _parameters_given(callee, call, self.ddp_model):
                    self.ddp_models.setdefault((id(callee), parameter), None)
            if len(self.ddp_models) == before:
                break
        for _ in range(3):  # handed on through up to three calls
            before_wrappings = self._handed_wrappings
            self._handed_wrappings = {}
            for call in calls:
                assert isinstance(call.func, ast.Name)
                self._hand_wrappings(functions[call.func.id], call, before_wrappings)
            if self._handed_wrappings == before_wrappings:
                break

    def _hand_wrappings(
        self,
        callee: ast.FunctionDef | ast.AsyncFunctionDef,
        call: ast.Call,
        known: dict[tuple[int | None, str], set[ast.Call | None]],
    ) -> None:
        """Record, for each parameter of ``callee`` that ``call`` hands a DDP model,
        the wrapping calls that made it (None: made elsewhere)."""
        for parameter in _parameters_given(callee, call, self.ddp_model):
            argument = _argument_for(callee, call, parameter)
            spelled = dotted_name(argument) if argument is not None else None
            made: set[ast.Call | None] = {None}
            if spelled is not None:
                key = self._model_key(call, spelled)
                wrapping = self.ddp_models.get(key)
                made = {wrapping} if wrapping is not None else known.get(key, {None})
            self._handed_wrappings.setdefault((id(callee), parameter), set()).update(made)

    def _buffer_free_model(self, key: tuple[int | None, str], wrapping: ast.Call | None) -> bool:
        """Whether the DDP model ``key`` names (made by ``wrapping``, or handed in by
        the module's callers) wraps a model of this module that holds no buffers. (A
        parameter only callers in other modules hand a model is not known.)"""
        made = {wrapping} if wrapping is not None else self._handed_wrappings.get(key) or {None}
        return all(w is not None and self.buffer_free.wraps_buffer_free(w) for w in made)

    def _scope_id(self, call: ast.Call) -> int | None:
        """``id`` of the scope that makes ``call`` (None for a call of no scope here)."""
        scope = self._scope_nodes.get(id(call))
        return None if scope is None else id(scope)

    def owner_class(self, call: ast.Call) -> str | None:
        """The class of the method ``call`` sits in (how ``self.x`` is keyed)."""
        scope = self._scope_nodes.get(id(call))
        return None if scope is None else self.nodes.owner_class(scope)

    def _calls_under_no_sync(self, nodes: ModuleNodes) -> set[int]:
        """Calls inside ``with model.no_sync():`` (or accelerate's ``no_sync(model)``),
        where a backward accumulates gradients without reducing them."""
        found: set[int] = set()
        statements: list[ast.With | ast.AsyncWith] = [*nodes.of_type(ast.With)]
        statements += nodes.of_type(ast.AsyncWith)
        for statement in statements:
            if any(
                isinstance(item.context_expr, ast.Call)
                and isinstance(item.context_expr.func, ast.Attribute)
                and item.context_expr.func.attr == "no_sync"
                for item in statement.items
            ):
                for inner in statement.body:
                    found.update(id(n) for n in walk(inner) if isinstance(n, ast.Call))
        return found

    def _allocation(self, node: ast.Assign | ast.AnnAssign) -> None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        made = node.value.func if isinstance(node.value, ast.Call) else None
        if isinstance(node, ast.AnnAssign):
            for target in targets:
                if (spelled := dotted_name(target)) is not None:
                    self._annotated(spelled, node.annotation)
        if made is None:
            return
        resolved = self.names.resolve(made)
        for target in targets:
            spelled = dotted_name(target)
            if spelled is None:
                continue
            if resolved in ACCELERATE_CLASSES:
                self.accelerators.add(spelled)
            elif resolved in FABRIC_CLASSES:
                self.fabrics.add(spelled)
            elif resolved in DDP_WRAPPERS and isinstance(node.value, ast.Call):
                self.ddp_models[self._model_key(node.value, spelled)] = node.value

    def _annotated(self, name: str, annotation: ast.AST) -> None:
        resolved = self.names.resolve(annotation)
        if resolved in ACCELERATE_CLASSES:
            self.accelerators.add(name)
        elif resolved in FABRIC_CLASSES:
            self.fabrics.add(name)
        elif resolved in DDP_WRAPPERS:
            self.ddp_models.setdefault((None, name), None)

    def agreeing_receivers(self) -> frozenset[str]:
        """Receivers whose gathers and reductions return the same on every rank."""
        return frozenset(self.accelerators | self.fabrics | {"self"})

    def collective(self, call: ast.Call, in_lightning_class: bool) -> Collective | None:
        """The collective ``call`` issues, if any."""
        resolved = self.names.resolve(call.func)
        function = distributed_function(resolved)
        if function in TORCH_COLLECTIVES:
            return Collective(function, call)
        if resolved in DEVICE_MESH_CREATORS:
            return Collective("init_device_mesh", call)
        if resolved in CHECKPOINT_FUNCTIONS:
            return Collective(CHECKPOINT_FUNCTIONS[resolved], call)
        if resolved in FSDP_COLLECTIVES:
            return Collective(FSDP_COLLECTIVES[resolved], call)
        implicit = self._implicit(call, resolved)
        if implicit is not None:
            return implicit
        elsewhere = self._reached_elsewhere(call)
        if elsewhere is not None:
            return elsewhere
        if not isinstance(call.func, ast.Attribute):
            return None
        method = call.func.attr
        receiver = dotted_name(call.func.value)
        if receiver in self.accelerators:
            if method in ACCELERATE_COLLECTIVES:
                return Collective(f"accelerator.{method}", call)
            if method in ACCELERATE_CONDITIONAL and (
                self.uses_conditional_backend or _automatic_naming(call)
            ):
                return Collective(f"accelerator.{method}", call, ACCELERATE_CONDITIONAL[method])
        if receiver in self.fabrics and method in FABRIC_COLLECTIVES:
            return Collective(f"fabric.{method}", call)
        if (receiver or "").endswith("trainer.strategy") and method in STRATEGY_COLLECTIVES:
            return Collective(f"strategy.{method}", call)
        if in_lightning_class:
            return _lightning_collective(call, method, receiver)
        return None

    def _implicit(self, call: ast.Call, resolved: str | None) -> Collective | None:
        """The forward of a DDP model, and a backward in a module that wraps one."""
        model = call.func
        if isinstance(model, ast.Attribute) and model.attr == "forward":
            model = model.value
        key = self._model_key(call, dotted_name(model) or "")
        sharded = self.sharded_models.get(self._model_key(call, key[1], self.sharded_models))
        if sharded is not None and (key[0] is None or _position(sharded) < _position(call)):
            return Collective("sharded forward", call, implicit=True)
        if key in self.ddp_models:
            wrapping = self.ddp_models[key]
            if self._unwrapped_before(call, key):
                return None
            if wrapping is not None and (
                _keyword_false(wrapping, "broadcast_buffers")
                or (key[0] is not None and _position(wrapping) > _position(call))
            ):
                return None  # no buffers broadcast, or a plain model until wrapped below
            if self._buffer_free_model(key, wrapping):
                return None  # a model of this module that holds no buffers: nothing to sync
            return Collective(
                DDP_FORWARD,
                call,
                "when the model has buffers to broadcast",
                implicit=True,
            )
        backward = resolved in BACKWARD_FUNCTIONS or (
            isinstance(call.func, ast.Attribute)
            and call.func.attr == "backward"
            and dotted_name(call.func.value) not in self.accelerators | self.fabrics
        )
        if not backward or not self.ddp_models or id(call) in self.unsynced:
            return None
        scope = self._scope_id(call)
        here = [c for (s, _), c in self.ddp_models.items() if s is not None and s == scope and c]
        if here and all(_position(c) > _position(call) for c in here):
            return None  # this function wraps its model only below: a plain backward here
        lines = sorted(c.lineno for c in self.ddp_models.values() if c is not None)
        where = f" (line {lines[0]})" if lines else ""
        return Collective(
            "backward",
            call,
            f"when the loss comes from the model wrapped in DistributedDataParallel{where}",
            implicit=True,
        )

    def ddp_wrapping(self, expression: ast.expr, call: ast.Call) -> ast.Call | None:
        """The ``DistributedDataParallel(...)`` call that made the model ``expression``
        holds where ``call`` reads it (None: made elsewhere, or not a DDP model)."""
        spelled = dotted_name(expression)
        if spelled is None:
            return None
        return self.ddp_models.get(self._model_key(call, spelled))

    def ddp_model(self, expression: ast.expr, call: ast.Call) -> bool:
        """Whether ``expression``, read by ``call``, holds a model wrapped in
        ``DistributedDataParallel`` there (not unwrapped with ``model = model.module``)."""
        spelled = dotted_name(expression)
        if spelled is None:
            return False
        key = self._model_key(call, spelled)
        return key in self.ddp_models and not self._unwrapped_before(call, key)

    def _reached_elsewhere(self, call: ast.Call) -> Collective | None:
        """A call of another module's project function that reaches a collective (and
        that this call switches on, where the function asks for it)."""
        spelled = dotted_name(call.func)
        if spelled is None or spelled in self.local_functions:
            return None
        reached = self.project.reached(spelled, self.owner_class(call))
        if reached is None:
            return None
        if reached.switch is not None and not _switches_on(call, *reached.switch):
            return None
        return Collective(reached.name, call, via=reached.chain)

    def _model_key(
        self,
        call: ast.Call,
        name: str,
        models: Mapping[tuple[int | None, str], object] | None = None,
    ) -> tuple[int | None, str]:
        """Where a model name is looked up: an attribute in the module (``self.model``
        is the same model in every method), a plain name in the scope of ``call``."""
        if "." in name:
            return None, name
        models = self.ddp_models if models is None else models
        scope = self._scope_nodes.get(id(call))
        while scope is not None:  # a comprehension or lambda reads its function's names
            if (id(scope), name) in models:
                return id(scope), name
            if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
                break
            scope = self.nodes.scope_of.get(scope)
        return self._scope_id(call), name


def _parameters_given(
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    call: ast.Call,
    holds: Callable[[ast.expr, ast.Call], bool],
) -> Iterator[str]:
    """The parameters of ``function`` that ``call`` hands a value ``holds`` accepts."""
    positional = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
    named = {*positional, *(a.arg for a in function.args.kwonlyargs)}
    for position, argument in enumerate(call.args):
        if isinstance(argument, ast.Starred):
            return
        if position < len(positional) and holds(argument, call):
            yield positional[position]
    for keyword in call.keywords:
        if keyword.arg in named and holds(keyword.value, call):
            yield keyword.arg


def _argument_for(
    function: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call, parameter: str
) -> ast.expr | None:
    """The argument ``call`` hands ``function``'s ``parameter``."""
    for keyword in call.keywords:
        if keyword.arg == parameter:
            return keyword.value
    positional = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
    if parameter in positional and positional.index(parameter) < len(call.args):
        return call.args[positional.index(parameter)]
    return None


def _automatic_naming(call: ast.Call) -> bool:
    """``save_state()`` given no directory: it runs only with automatic checkpoint naming
    (accelerate names the folder itself), one of the settings under which it synchronises."""
    return (
        isinstance(call.func, ast.Attribute)
        and call.func.attr == "save_state"
        and call_argument(call, 0, "output_dir") is None
    )


def _switches_on(
    call: ast.Call,
    name: str,
    position: int,
    off: bool = False,
    values: tuple[Any, ...] | None = None,
    member: bool = False,
    default: tuple[Any, ...] = (),
) -> bool:
    """The call passes the parameter ``name`` (at ``position`` when positional) a value
    that is not a literal ``False`` / ``None`` / ``0``; with ``off`` (the collective runs
    unless the parameter is on), the call does not pass it a literal true value. With
    ``values`` (the parameter compared with literals): the literal the call passes, or
    the literal default where it passes none, is (``member``) or is not one of them;
    anything else may be."""
    given = call_argument(call, position, name)
    if values is not None:
        if isinstance(given, ast.Starred) or (
            given is None
            and any(isinstance(k, ast.keyword) and k.arg is None for k in call.keywords)
        ):
            return True
        value = default if given is None else scalar_literal(given)
        return not value or (value[0] in values) is member
    if off:
        return not (isinstance(given, ast.Constant) and bool(given.value))
    if given is None or isinstance(given, ast.Starred):
        return False
    return not (isinstance(given, ast.Constant) and given.value in (False, None, 0))


def _unwraps(node: ast.AST) -> bool:
    """``model = model.module``: the plain model a DDP wrapper holds."""
    return (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "module"
        and dotted_name(node.value.value) == node.targets[0].id
    )


def _position(node: ast.expr | ast.stmt) -> tuple[int, int]:
    return node.lineno, node.col_offset


def _keyword_false(call: ast.Call, name: str) -> bool:
    return any(
        k.arg == name and isinstance(k.value, ast.Constant) and k.value.value is False
        for k in call.keywords
    )


def _lightning_collective(call: ast.Call, method: str, receiver: str | None) -> Collective | None:
    if receiver == "self" and method == "all_gather":
        return Collective("self.all_gather", call)
    # With rank_zero_only=True Lightning reduces nothing, whatever sync_dist says.
    if (
        receiver == "self"
        and method in ("log", "log_dict")
        and keyword_true(call, "sync_dist")
        and not keyword_true(call, "rank_zero_only")
    ):
        return Collective(f"self.{method}(sync_dist=True)", call)
    return None


def own_calls(node: ast.AST) -> Iterator[ast.Call]:
    """The calls a statement makes itself (not those of nested statements, functions,
    lambdas or comprehensions, which have nodes or graphs of their own)."""
    pending: list[ast.AST] = list(header_parts(node))
    while pending:
        current = pending.pop()
        if isinstance(current, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(current, ast.Call):
            yield current
        pending.extend(child for child in child_nodes(current) if not isinstance(child, ast.stmt))


def header_parts(node: ast.AST) -> Iterator[ast.AST]:
    """What a node evaluates itself: a compound statement's header, not its body."""
    if isinstance(node, (ast.If, ast.While)):
        yield node.test
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        yield node.iter
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        yield from (item.context_expr for item in node.items)
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield from node.decorator_list
    elif isinstance(node, (ast.Try, ast.TryStar, ast.ExceptHandler)):
        return
    elif isinstance(node, ast.Match):
        yield node.subject
    else:
        yield node


def sharded_later(
    calls: list[ast.Call], names: Names, project: ProjectFacts = NO_PROJECT
) -> dict[str, int]:
    """Model name -> the last line where one of ``calls`` shards it (``fully_shard(model)``,
    ``FSDP(model)``, or another module's function that shards that argument, by the
    project model): before that line its full state dict gathers nothing."""
    found: dict[str, int] = {}
    for call in calls:
        if names.resolve(call.func) in SHARDING_WRAPPERS:
            positions: frozenset[int] = frozenset({0})
        else:
            spelled = dotted_name(call.func)
            positions = project.sharded_arguments(spelled, None) if spelled else frozenset()
        for position in positions:
            given = call.args[position] if position < len(call.args) else None
            model = dotted_name(given) if given is not None else None
            if model is not None:
                found[model] = max(found.get(model, 0), call.lineno)
    return found


def reads_unsharded_model(collective: Collective, sharded: dict[str, int]) -> bool:
    """Whether a state-dict read may take a plain model (no gather): the module shards
    no model itself (where the model is sharded, if at all, is out of sight), or it
    shards this one only later."""
    if collective.name not in STATE_DICT_READS:
        return False
    if not sharded or not collective.call.args:
        return True
    model = dotted_name(collective.call.args[0])
    return model is not None and sharded.get(model, 0) > collective.line


def node_collectives(
    node: Node, objects: FrameworkObjects, in_lightning_class: bool
) -> list[Collective]:
    """The collectives a graph node issues, in source order."""
    if node.kind not in (NodeKind.STATEMENT, NodeKind.TEST, NodeKind.STEP):
        return []
    if node.statement is None:
        return []
    found = [
        c
        for call in own_calls(node.statement)
        if (c := objects.collective(call, in_lightning_class)) is not None
    ]
    return sorted(found, key=lambda c: (c.call.lineno, c.call.col_offset))
