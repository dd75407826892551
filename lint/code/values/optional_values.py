"""Whether a value is ``None`` by configuration (the same on every rank) or by data.

``loss_aux is not None`` reads this rank's batch when the function that made the loss
returns ``None`` for a batch with nothing in it; it reads only the configuration when
that function sets the value to ``None`` and replaces it under conditions on ``self``
attributes and module constants (``if self.mode == LATENT and self.train_aux:``), and
returns it unconditionally. ``none_by_configuration`` answers that for a name bound from
a call of a function of this module (a plain result, or one item of a returned tuple).
"""

from __future__ import annotations

import libcst as cst

from ddplint.code.syntax.call_graph import LocalFunctions
from ddplint.code.syntax.conditions import guarding_conditions
from ddplint.code.syntax.constants import parameters
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import binding_targets, bound_names

_CONFIGURATION_ROOTS = frozenset({"self", "cls"})


class OptionalValues:
    """Answers "is this name's ``None``-ness decided by configuration?" for one module."""

    def __init__(self, index: ModuleIndex) -> None:
        self._index = index
        self._local = LocalFunctions(index)

    def none_by_configuration(self, name: str, bindings: list[cst.CSTNode]) -> bool:
        """Every binding of ``name`` (``Assign`` statements in ``bindings``) takes it from
        a call of a function of this module that makes the value (or the tuple item)
        ``None`` by configuration only."""
        if not bindings:
            return False
        return all(self._binding_by_configuration(name, b) for b in bindings)

    def _binding_by_configuration(self, name: str, binding: cst.CSTNode) -> bool:
        if not (isinstance(binding, cst.Assign) and len(binding.targets) == 1):
            return False
        value = binding.value
        if not isinstance(value, cst.Call):
            return False
        callee = self._local.callee(value)
        if callee is None:
            return False
        target = binding.targets[0].target
        if isinstance(target, cst.Name):
            return self._returns_by_configuration(callee, None)
        if isinstance(target, (cst.Tuple, cst.List)):
            names = [e.value for e in target.elements]
            if any(isinstance(e, cst.StarredElement) for e in target.elements):
                return False
            for position, element in enumerate(names):
                if isinstance(element, cst.Name) and element.value == name:
                    return self._returns_by_configuration(callee, position)
        return False

    def _returns_by_configuration(self, function: cst.FunctionDef, position: int | None) -> bool:
        """Every ``return`` of ``function`` runs under configuration only and gives (at
        ``position`` of its tuple) a name whose bindings are all under configuration."""
        returns = [n for n in self._index.walk_within(function.body) if isinstance(n, cst.Return)]
        if not returns:
            return False
        for statement in returns:
            value = statement.value
            if position is not None:
                if not isinstance(value, cst.Tuple) or len(value.elements) <= position:
                    return False
                value = value.elements[position].value
            if not isinstance(value, cst.Name) or not self._under_configuration(statement):
                return False
            if not self._bound_under_configuration(function, value.value):
                return False
        return True

    def _bound_under_configuration(self, function: cst.FunctionDef, name: str) -> bool:
        """The local ``name`` is bound only by plain statements under configuration."""
        bound = False
        for node in self._index.walk_within(function.body):
            if not any(name in bound_names(t) for t in binding_targets(node)):
                continue
            if isinstance(node, (cst.For, cst.NamedExpr, cst.WithItem)):
                return False
            if not self._under_configuration(node):
                return False
            bound = True
        return bound

    def _under_configuration(self, node: cst.CSTNode) -> bool:
        """Every condition ``node`` runs under reads only ``self`` / ``cls`` attributes,
        module-level names and literals."""
        function = self._index.enclosing_function(node)
        local = _local_names(self._index, function) if function is not None else set()
        for guard in guarding_conditions(self._index, node):
            for read in self._index.walk_within(guard.test):
                if not isinstance(read, cst.Name):
                    continue
                parent = self._index.parent.get(read)
                if isinstance(parent, cst.Attribute) and parent.attr is read:
                    continue
                if read.value in local and read.value not in _CONFIGURATION_ROOTS:
                    return False
            if isinstance(guard.test, cst.Name) and guard.test.value in local:
                return False
        return True


def _local_names(index: ModuleIndex, function: cst.FunctionDef) -> set[str]:
    """The parameters of ``function`` and the names it binds."""
    found = {p.name.value for p in parameters(function)}
    for node in index.walk_within(function.body):
        for target in binding_targets(node):
            found.update(bound_names(target))
    return found
