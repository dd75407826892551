"""Which submodules a module class holds, which it freezes, and whether its forward
uses every one of them on every path (the question behind ``find_unused_parameters``)."""

from __future__ import annotations

import libcst as cst

from ddplint.code.syntax.constants import UNKNOWN, literal_value, single_assignment
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import ImportTable, dotted_name

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
_MAX_CLASS_DEPTH = 3


def class_methods(cls: cst.ClassDef) -> list[cst.FunctionDef]:
    """The methods ``cls`` defines in its own body."""
    if not isinstance(cls.body, cst.IndentedBlock):
        return []
    return [s for s in cls.body.body if isinstance(s, cst.FunctionDef)]


def built_class(index: ModuleIndex, expr: cst.BaseExpression, hops: int = 0) -> str | None:
    """``Net`` for ``Net(...)``, ``Net(...).cuda()``, ``Net(...).to(device)``, or a name
    bound once to one of those."""
    while (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value in MODULE_MOVES
    ):
        expr = expr.func.value
    if isinstance(expr, cst.Call):
        return dotted_name(expr.func)
    if isinstance(expr, cst.Name) and hops < 3:
        bound = single_assignment(index, expr, expr.value) or _last_straight_binding(
            index, expr, expr.value
        )
        if bound is not None:
            return built_class(index, bound, hops + 1)
    return None


def _last_straight_binding(
    index: ModuleIndex, site: cst.CSTNode, name: str
) -> cst.BaseExpression | None:
    """The value of the last ``name = value`` before ``site`` among the plain statements
    of its function (``model = Net(); model = DDP(model)``); None when a compound
    statement before it binds ``name`` too."""
    scope: cst.CSTNode | None = index.enclosing_function(site)
    body = scope.body if isinstance(scope, cst.FunctionDef) else None
    if not isinstance(body, cst.IndentedBlock):
        return None
    found: cst.BaseExpression | None = None
    for statement in body.body:
        if index.is_inside(site, statement):
            return found
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if (
                    isinstance(small, cst.Assign)
                    and len(small.targets) == 1
                    and dotted_name(small.targets[0].target) == name
                ):
                    found = small.value
        elif any(
            isinstance(node, cst.Name) and node.value == name
            for node in index.walk_within(statement)
        ):
            return None
    return None


def _self_attribute(expr: cst.BaseExpression) -> str | None:
    """``x`` for ``self.x``."""
    dotted = dotted_name(expr) or ""
    if dotted.startswith("self.") and dotted.count(".") == 1:
        return dotted[5:]
    return None


def frozen_submodules(index: ModuleIndex, cls: cst.ClassDef) -> frozenset[str]:
    """``x`` for ``self.x.requires_grad_(False)`` or ``for p in self.x.parameters():
    p.requires_grad = False`` in the ``__init__`` of ``cls``: DDP leaves out parameters
    that need no gradient when it is built (frozen later, DDP still waits for them)."""
    frozen: set[str] = set()
    init = next((m for m in class_methods(cls) if m.name.value == "__init__"), None)
    if init is None:
        return frozenset()
    for node in index.walk_within(init):
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "requires_grad_"
            and node.args
            and literal_value(node.args[0].value) is False
        ):
            owner = _self_attribute(node.func.value)
            if owner is not None:
                frozen.add(owner)
        elif isinstance(node, cst.For) and _freezes_loop_variable(index, node):
            iterated = node.iter
            if (
                isinstance(iterated, cst.Call)
                and isinstance(iterated.func, cst.Attribute)
                and iterated.func.attr.value == "parameters"
            ):
                owner = _self_attribute(iterated.func.value)
                if owner is not None:
                    frozen.add(owner)
    return frozenset(frozen)


def _freezes_loop_variable(index: ModuleIndex, loop: cst.For) -> bool:
    """Whether the loop body sets ``<loop variable>.requires_grad = False``."""
    variable = dotted_name(loop.target)
    for node in index.walk_within(loop.body):
        if isinstance(node, cst.Assign) and literal_value(node.value) is False:
            for target in node.targets:
                if dotted_name(target.target) == f"{variable}.requires_grad":
                    return True
    return False


def parameterised_submodules(index: ModuleIndex, cls: cst.ClassDef) -> frozenset[str]:
    """``x`` for every ``self.x = SomeLayer(...)`` in the class whose layer may hold
    parameters that get gradients (frozen submodules left out)."""
    found = set()
    for node in index.walk_within(cls, into_functions=True):
        if not isinstance(node, cst.Assign) or not isinstance(node.value, cst.Call):
            continue
        layer = (dotted_name(node.value.func) or "").rsplit(".", 1)[-1]
        if not layer[:1].isupper() or layer in PARAMETER_FREE:
            continue
        for target in node.targets:
            attribute = _self_attribute(target.target)
            if attribute is not None:
                found.add(attribute)
    return frozenset(found) - frozen_submodules(index, cls)


class WholeForwards:
    """Whether a module class of this file uses all of its parameters in every forward:
    a straight-line ``forward`` (no branch, loop, early exit or graph cut) that touches
    every ``self.x`` holding parameters, each built from a ``torch.nn`` layer that uses
    its own parameters whole or from a class of this module that does the same."""

    def __init__(self, index: ModuleIndex, names: ImportTable) -> None:
        self._index = index
        self._names = names
        self._classes = {c.name.value: c for c in index.nodes(cst.ClassDef)}
        self._answers: dict[str, bool] = {}

    def uses_everything(self, class_name: str, depth: int = 0) -> bool:
        if class_name in self._answers:
            return self._answers[class_name]
        self._answers[class_name] = False  # a cycle is no proof
        cls = self._classes.get(class_name)
        answer = cls is not None and depth <= _MAX_CLASS_DEPTH and self._class_is_whole(cls, depth)
        self._answers[class_name] = answer
        return answer

    def _class_is_whole(self, cls: cst.ClassDef, depth: int) -> bool:
        if len(cls.bases) != 1 or self._names.qualified_name(cls.bases[0].value) != (
            "torch.nn.Module"
        ):
            return False
        methods = {m.name.value: m for m in class_methods(cls)}
        forward = methods.get("forward")
        if forward is None or cls.decorators:
            return False
        holders = self._parameter_holders(cls, methods, depth)
        if holders is None:
            return False
        used = self._straight_line_uses(forward, methods, set())
        return bool(holders) and used is not None and holders <= used

    def _parameter_holders(
        self, cls: cst.ClassDef, methods: dict[str, cst.FunctionDef], depth: int
    ) -> set[str] | None:
        """The ``self.x`` of ``cls`` that hold parameters; None when one is not known."""
        frozen = frozen_submodules(self._index, cls)
        holders: set[str] = set()
        for method in methods.values():
            for node in self._index.walk_within(method):
                targets: list[cst.BaseExpression] = []
                value: cst.BaseExpression | None = None
                if isinstance(node, cst.Assign):
                    targets, value = [t.target for t in node.targets], node.value
                elif isinstance(node, (cst.AnnAssign, cst.AugAssign)):
                    targets, value = [node.target], node.value
                for target in targets:
                    if not isinstance(target, cst.Attribute):
                        if isinstance(target, (cst.Tuple, cst.List)):
                            return None
                        continue
                    attribute = _self_attribute(target)
                    if attribute is None:
                        continue
                    if method.name.value != "__init__":
                        return None
                    kind = self._holds(value, method, depth)
                    if kind is None:
                        return None
                    if kind and attribute not in frozen:
                        holders.add(attribute)
            for node in self._index.walk_within(method):
                if isinstance(node, cst.Call) and dotted_name(node.func) in (
                    "self.register_parameter",
                    "self.register_module",
                    "self.add_module",
                    "setattr",
                ):
                    return None
        return holders

    def _holds(
        self, value: cst.BaseExpression | None, method: cst.FunctionDef, depth: int
    ) -> bool | None:
        """True when ``value`` holds parameters whole, False when it holds none, None
        when that cannot be told."""
        if value is None:
            return False
        if isinstance(value, cst.Call):
            qualified = self._names.qualified_name(value.func) or ""
            if qualified == "torch.nn.Parameter":
                return True
            if qualified == "torch.nn.Sequential":
                parts = [self._holds(arg.value, method, depth) for arg in value.args]
                if any(arg.star for arg in value.args) or None in parts:
                    return None
                return any(parts)
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
        if isinstance(value, cst.Name):
            return self._plain_parameter(value.value, method)
        return False if self._is_plain_expression(value, method) else None

    def _plain_parameter(self, name: str, method: cst.FunctionDef) -> bool | None:
        """False for ``None``/``True``/``False`` or a parameter of ``method`` with a plain
        annotation or a literal default; None otherwise (it may be a module)."""
        if name in ("None", "True", "False"):
            return False
        for param in (*method.params.params, *method.params.kwonly_params):
            if param.name.value != name:
                continue
            annotation = dotted_name(param.annotation.annotation) if param.annotation else None
            if annotation in _PLAIN_ANNOTATIONS:
                return False
            if param.default is not None and self._literal(param.default):
                return False
        return None

    def _is_plain_expression(self, value: cst.BaseExpression, method: cst.FunctionDef) -> bool:
        """Literals, arithmetic and comparisons of plain parameters."""
        if self._literal(value):
            return True
        if isinstance(value, cst.BinaryOperation):
            return self._is_plain_expression(value.left, method) and self._is_plain_expression(
                value.right, method
            )
        if isinstance(value, cst.UnaryOperation):
            return self._is_plain_expression(value.expression, method)
        if isinstance(value, cst.Name):
            return self._plain_parameter(value.value, method) is False
        return False

    @staticmethod
    def _literal(value: cst.BaseExpression) -> bool:
        return literal_value(value) is not UNKNOWN

    def _straight_line_uses(
        self,
        function: cst.FunctionDef,
        methods: dict[str, cst.FunctionDef],
        seen: set[str],
    ) -> set[str] | None:
        """``self.x`` a function (and the same-class methods it calls) touches on its
        one path; None when it branches, loops, exits early or cuts the graph."""
        if function.name.value in seen:
            return None
        seen.add(function.name.value)
        body = function.body
        if not isinstance(body, cst.IndentedBlock):
            return None
        used: set[str] = set()
        last = len(body.body) - 1
        for position, statement in enumerate(body.body):
            for node in (statement, *self._index.walk_within(statement)):
                if isinstance(node, _BRANCHING):
                    return None
                if isinstance(node, cst.Raise) or (
                    isinstance(node, cst.Return) and position != last
                ):
                    return None
                if isinstance(node, cst.Call):
                    if _called_method(node) in _GRAPH_CUTS:
                        return None
                    helper = _self_attribute(node.func)
                    if helper in methods:
                        inner = self._straight_line_uses(methods[helper], methods, seen)
                        if inner is None:
                            return None
                        used |= inner
                if isinstance(node, cst.Attribute):
                    attribute = _self_attribute(node)
                    if attribute is not None:
                        used.add(attribute)
        return used


def _called_method(call: cst.Call) -> str:
    """``detach`` for ``x.detach()`` and ``self.body(x).detach()``; ``no_grad`` for
    ``torch.no_grad()``."""
    if isinstance(call.func, cst.Attribute):
        return call.func.attr.value
    return dotted_name(call.func) or ""


_BRANCHING = (
    cst.If,
    cst.IfExp,
    cst.For,
    cst.While,
    cst.Try,
    cst.TryStar,
    cst.With,
    cst.Match,
    cst.BooleanOperation,
    cst.ListComp,
    cst.GeneratorExp,
    cst.DictComp,
    cst.SetComp,
    cst.Lambda,
    cst.Yield,
    cst.Await,
)
_PLAIN_ANNOTATIONS = frozenset({"int", "float", "bool", "str"})
_PLAIN_BUILTINS = frozenset({"int", "float", "bool", "str", "tuple", "list", "dict", "len"})
