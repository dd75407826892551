"""Which submodules a module class holds and which it freezes, on LibCST (DDP502).
Whether a forward uses every one of them is asked on the analysis core
(``ddplint.analysis.whole_forwards``)."""

from __future__ import annotations

import libcst as cst

from ddplint.analysis.whole_forwards import MODULE_MOVES, PARAMETER_FREE
from ddplint.code.syntax.constants import literal_value, single_assignment
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import dotted_name


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
