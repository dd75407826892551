"""Whether a module class of this file uses every parameter it holds in every forward
(the question behind ``find_unused_parameters``), and which class a model expression
builds, on CPython's ``ast``.

A class is whole when its ``forward`` runs on one path (no branch, loop, ``with``,
early exit or graph cut, also in the same-class methods it calls) and touches every
``self.x`` that holds parameters, each a ``torch.nn`` layer that uses its own
parameters whole or a class of this module that is whole in turn. Anything not in
sight (a submodule from a factory, an argument, an imported class) makes the answer no.
"""

from __future__ import annotations

import ast

from ddplint.analysis.constants import ScopedConstants
from ddplint.analysis.literal_values import UNKNOWN, literal
from ddplint.analysis.module_nodes import ModuleNodes
from ddplint.analysis.names import Names, dotted_name
from ddplint.analysis.straight_bindings import last_straight_binding

#: Layers without parameters: skipping them leaves nothing unused.
PARAMETER_FREE = frozenset(
    {
        "Dropout",
        "Dropout1d",
        "Dropout2d",
        "Dropout3d",
        "AlphaDropout",
        "Identity",
        "ReLU",
        "ReLU6",
        "GELU",
        "SiLU",
        "Mish",
        "Tanh",
        "Sigmoid",
        "Softmax",
        "LogSoftmax",
        "LeakyReLU",
        "ELU",
        "Flatten",
        "Unflatten",
        "Upsample",
        "MaxPool1d",
        "MaxPool2d",
        "MaxPool3d",
        "AvgPool1d",
        "AvgPool2d",
        "AvgPool3d",
        "AdaptiveAvgPool1d",
        "AdaptiveAvgPool2d",
        "AdaptiveMaxPool1d",
        "AdaptiveMaxPool2d",
        "CrossEntropyLoss",
        "MSELoss",
        "L1Loss",
        "BCELoss",
        "BCEWithLogitsLoss",
        "NLLLoss",
        "CTCLoss",
    }
)
#: Methods that return the same module on another device or dtype.
MODULE_MOVES = frozenset({"cuda", "to", "cpu", "half", "float", "bfloat16", "double", "train"})
#: torch.nn layers whose own forward may leave some of their parameters unused, and
#: containers whose use depends on how the forward walks them.
_NOT_WHOLLY_USED = frozenset(
    {"AdaptiveLogSoftmaxWithLoss", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"}
)
#: Calls in a forward that cut parameters out of the autograd graph.
_GRAPH_CUTS = frozenset({"detach", "detach_", "no_grad", "inference_mode", "requires_grad_"})
#: Calls that add submodules or parameters by name at run time.
_DYNAMIC_REGISTRATIONS = frozenset(
    {"self.register_parameter", "self.register_module", "self.add_module", "setattr"}
)
_MAX_CLASS_DEPTH = 3
#: Nodes after which a forward no longer runs on one path.
_PATH_SPLITS = (
    ast.Raise,
    ast.If,
    ast.IfExp,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.Try,
    *((ast.TryStar,) if hasattr(ast, "TryStar") else ()),
    ast.With,
    ast.AsyncWith,
    ast.Match,
    ast.BoolOp,
    ast.ListComp,
    ast.GeneratorExp,
    ast.DictComp,
    ast.SetComp,
    ast.Lambda,
    ast.Yield,
    ast.YieldFrom,
    ast.Await,
)
_PLAIN_ANNOTATIONS = frozenset({"int", "float", "bool", "str"})
_PLAIN_BUILTINS = frozenset({"int", "float", "bool", "str", "tuple", "list", "dict", "len"})
_Function = ast.FunctionDef | ast.AsyncFunctionDef


def class_methods(cls: ast.ClassDef) -> dict[str, _Function]:
    """The methods ``cls`` defines, by name."""
    return {s.name: s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}


def self_attribute(expression: ast.AST) -> str | None:
    """``x`` for ``self.x``."""
    dotted = dotted_name(expression) or ""
    if dotted.startswith("self.") and dotted.count(".") == 1:
        return dotted[5:]
    return None


def _is_literal(expression: ast.AST) -> bool:
    return literal(expression) is not UNKNOWN


class WholeForwards:
    """The classes of one module whose forward uses all of their parameters."""

    def __init__(self, nodes: ModuleNodes, names: Names, constants: ScopedConstants) -> None:
        self._nodes = nodes
        self._names = names
        self._constants = constants
        self._classes = {c.name: c for c in nodes.of_type(ast.ClassDef)}
        self._answers: dict[str, bool] = {}

    def built_class(self, model: ast.expr, site: ast.Call, hops: int = 0) -> str | None:
        """``Net`` for ``Net(...)``, ``Net(...).cuda()``, ``Net(...).to(device)``, or a
        name bound once to one of those, or whose last binding before the call ``site``
        (among the plain statements of its function) is: a re-bound name is its new
        value."""
        while (
            isinstance(model, ast.Call)
            and isinstance(model.func, ast.Attribute)
            and model.func.attr in MODULE_MOVES
        ):
            model = model.func.value
        if isinstance(model, ast.Call):
            return dotted_name(model.func)
        if hops >= 3:
            return None
        bound: ast.expr | None = None
        if isinstance(model, ast.Name):
            owner = self._constants.owner_of(self._nodes.scope_of_call(site))
            single = self._constants.single_assignment(owner, model.id)
            bound = single[0] if single else self._last_straight_binding(site, model.id)
        elif self_attribute(model) is not None:
            bound = self._last_straight_binding(site, f"self.{self_attribute(model)}")
        return self.built_class(bound, site, hops + 1) if bound is not None else None

    def _last_straight_binding(self, site: ast.Call, name: str) -> ast.expr | None:
        """``last_straight_binding`` in the function around ``site``; for ``self.x``, a
        call of another method of ``self`` after the binding may bind it anew."""
        scope: ast.AST | None = self._nodes.scope_of_call(site)
        while scope is not None and not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scope = self._nodes.scope_of.get(scope)
        if scope is None:
            return None
        if not name.startswith("self."):
            return last_straight_binding(scope, site, name)
        return last_straight_binding(
            scope, site, name, lambda statement: _calls_a_method(statement, name)
        )

    def uses_everything(self, class_name: str, depth: int = 0) -> bool:
        """Whether ``class_name`` (a class of this module) uses every parameter it
        holds on the one path of its forward."""
        if class_name in self._answers:
            return self._answers[class_name]
        self._answers[class_name] = False  # a cycle is no proof
        cls = self._classes.get(class_name)
        answer = cls is not None and depth <= _MAX_CLASS_DEPTH and self._is_whole(cls, depth)
        self._answers[class_name] = answer
        return answer

    def _is_whole(self, cls: ast.ClassDef, depth: int) -> bool:
        if len(cls.bases) != 1 or cls.keywords or cls.decorator_list:
            return False
        if self._names.resolve(cls.bases[0]) != "torch.nn.Module":
            return False
        methods = class_methods(cls)
        forward = methods.get("forward")
        if forward is None:
            return False
        holders = self._parameter_holders(cls, methods, depth)
        if not holders:
            return False
        used = self._straight_line_uses(forward, methods, set())
        return used is not None and holders <= used

    def _parameter_holders(
        self, cls: ast.ClassDef, methods: dict[str, _Function], depth: int
    ) -> set[str] | None:
        """The ``self.x`` of ``cls`` that hold parameters needing gradients; None when
        one is not known."""
        frozen = frozen_submodules(methods.get("__init__"))
        holders: set[str] = set()
        for method in methods.values():
            for node in ast.walk(method):
                if isinstance(node, ast.Call) and dotted_name(node.func) in _DYNAMIC_REGISTRATIONS:
                    return None
                targets: list[ast.expr] = []
                value: ast.expr | None = None
                if isinstance(node, ast.Assign):
                    targets, value = node.targets, node.value
                elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
                    targets, value = [node.target], node.value
                for target in targets:
                    if isinstance(target, (ast.Tuple, ast.List)):
                        return None
                    attribute = self_attribute(target)
                    if attribute is None:
                        continue
                    if method.name != "__init__":
                        return None
                    kind = self._holds(value, method, depth)
                    if kind is None:
                        return None
                    if kind and attribute not in frozen:
                        holders.add(attribute)
        return holders

    def _holds(self, value: ast.expr | None, method: _Function, depth: int) -> bool | None:
        """True when ``value`` holds parameters used whole, False when it holds none,
        None when that cannot be told."""
        if value is None:
            return False
        if isinstance(value, ast.Call):
            return self._call_holds(value, method, depth)
        if isinstance(value, ast.Name):
            return self._plain_parameter(value.id, method)
        return False if self._is_plain_expression(value, method) else None

    def _call_holds(self, value: ast.Call, method: _Function, depth: int) -> bool | None:
        qualified = self._names.resolve(value.func) or ""
        if qualified == "torch.nn.Parameter":
            return True
        if qualified == "torch.nn.Sequential":
            parts = [self._holds(arg, method, depth) for arg in value.args]
            if value.keywords or any(isinstance(a, ast.Starred) for a in value.args):
                return None
            return None if None in parts else any(parts)
        if qualified.startswith("torch.nn.") and qualified.count(".") == 2:
            layer = qualified.rsplit(".", 1)[-1]
            if layer in _NOT_WHOLLY_USED or not layer[:1].isupper():
                return None
            return layer not in PARAMETER_FREE
        local = dotted_name(value.func) or ""
        if local in self._classes:
            return True if self.uses_everything(local, depth + 1) else None
        if qualified.startswith("torch.nn."):
            return None
        if qualified.startswith(("torch.", "math.")) or qualified in _PLAIN_BUILTINS:
            return False
        return None

    @staticmethod
    def _plain_parameter(name: str, method: _Function) -> bool | None:
        """False for a parameter of ``method`` with a plain annotation or a literal
        default; None otherwise (it may be a module)."""
        arguments = method.args
        positional = [*arguments.posonlyargs, *arguments.args]
        defaults: dict[str, ast.expr | None] = dict.fromkeys(a.arg for a in positional)
        for parameter, default in zip(positional[::-1], arguments.defaults[::-1], strict=False):
            defaults[parameter.arg] = default
        for parameter, kw_default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
            defaults[parameter.arg] = kw_default
        for parameter in (*positional, *arguments.kwonlyargs):
            if parameter.arg != name:
                continue
            annotation = dotted_name(parameter.annotation) if parameter.annotation else None
            given = defaults.get(name)
            if annotation in _PLAIN_ANNOTATIONS or (given is not None and _is_literal(given)):
                return False
        return None

    def _is_plain_expression(self, value: ast.expr, method: _Function) -> bool:
        """Literals, arithmetic and comparisons of plain parameters."""
        if _is_literal(value):
            return True
        if isinstance(value, ast.BinOp):
            return self._is_plain_expression(value.left, method) and self._is_plain_expression(
                value.right, method
            )
        if isinstance(value, ast.UnaryOp):
            return self._is_plain_expression(value.operand, method)
        if isinstance(value, ast.Name):
            return self._plain_parameter(value.id, method) is False
        return False

    def _straight_line_uses(
        self, function: _Function, methods: dict[str, _Function], seen: set[str]
    ) -> set[str] | None:
        """``self.x`` a function (and the same-class methods it calls) touches on its
        one path; None when it branches, loops, exits early or cuts the graph."""
        if function.name in seen:
            return None
        seen.add(function.name)
        used: set[str] = set()
        last = len(function.body) - 1
        for position, statement in enumerate(function.body):
            for node in ast.walk(statement):
                if isinstance(node, _PATH_SPLITS):
                    return None
                if isinstance(node, ast.Return) and position != last:
                    return None
                if isinstance(node, ast.Call):
                    if _called_method(node) in _GRAPH_CUTS:
                        return None
                    helper = self_attribute(node.func)
                    if helper is not None and helper in methods:
                        inner = self._straight_line_uses(methods[helper], methods, seen)
                        if inner is None:
                            return None
                        used |= inner
                attribute = self_attribute(node) if isinstance(node, ast.Attribute) else None
                if attribute is not None:
                    used.add(attribute)
        return used


def _calls_a_method(statement: ast.stmt, attribute: str) -> bool:
    """Whether ``statement`` calls a method of ``self`` other than one of ``attribute``
    (``self.setup()``, not ``self.model.cuda()``)."""
    return any(
        isinstance(node, ast.Call)
        and (dotted_name(node.func) or "").startswith("self.")
        and not (dotted_name(node.func) or "").startswith(f"{attribute}.")
        for node in ast.walk(statement)
    )


def frozen_submodules(init: _Function | None) -> frozenset[str]:
    """``x`` for ``self.x.requires_grad_(False)`` or ``for p in self.x.parameters():
    p.requires_grad = False`` in ``__init__``: DDP leaves out parameters that need no
    gradient when it is built."""
    if init is None:
        return frozenset()
    frozen: set[str] = set()
    for node in ast.walk(init):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "requires_grad_"
            and node.args
            and literal(node.args[0]) is False
        ):
            owner = self_attribute(node.func.value)
        elif isinstance(node, ast.For) and _freezes_loop_variable(node):
            iterated = node.iter
            is_parameters = (
                isinstance(iterated, ast.Call)
                and isinstance(iterated.func, ast.Attribute)
                and iterated.func.attr == "parameters"
            )
            owner = self_attribute(iterated.func.value) if is_parameters else None  # type: ignore[attr-defined]
        else:
            continue
        if owner is not None:
            frozen.add(owner)
    return frozenset(frozen)


def _freezes_loop_variable(loop: ast.For) -> bool:
    """Whether the loop body sets ``<loop variable>.requires_grad = False``."""
    variable = dotted_name(loop.target)
    return any(
        isinstance(node, ast.Assign)
        and literal(node.value) is False
        and any(dotted_name(t) == f"{variable}.requires_grad" for t in node.targets)
        for statement in loop.body
        for node in ast.walk(statement)
    )


def _called_method(call: ast.Call) -> str:
    """``detach`` for ``x.detach()``; ``no_grad`` for ``torch.no_grad()``."""
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return dotted_name(call.func) or ""
