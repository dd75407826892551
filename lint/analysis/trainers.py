"""Which expressions hold a Lightning ``Trainer``: by what made them, never by a name.

- a call the object catalogue knows makes one (``Trainer(...)``, ``pl.Trainer(...)``);
- ``self.trainer`` (also ``self._trainer``) in a LightningModule class (its bases
  resolved, NeMo's models included, or derived from such a class of the module), and
  ``module.trainer`` of a callback hook's LightningModule parameter;
- a callback hook's trainer parameter: the first after ``self`` of ``setup``,
  ``teardown`` and the ``on_*`` hooks of a class derived from a Lightning callback (by
  position: Lightning passes ``(trainer, pl_module, ...)``);
- a parameter or a name annotated ``Trainer`` (also ``Optional[...]``, ``X | None``,
  quoted); a name handed to a module function's parameter annotated so (the callee
  declares what it takes: ``save(trainer)`` with ``def save(trainer: L.Trainer)``);
- a name or ``self.x`` field bound to any of these.

The LightningModule a callback hook is handed (the second after ``self``, or a parameter
annotated ``LightningModule``) is ``module_parameters``: its ``trainer`` is one too.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from ddplint.analysis.control_flow import Scope, own_nodes
from ddplint.analysis.divergence import paired_arguments
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.names import annotated_types, dotted_name
from ddplint.analysis.object_kinds import LIGHTNING_MODULE, TRAINER, library_kind

_LIGHTNING_PACKAGES = ("lightning.pytorch", "pytorch_lightning", "lightning")
_CALLBACK_PACKAGES = tuple(f"{package}.callbacks." for package in _LIGHTNING_PACKAGES)
#: Attributes of a LightningModule that hold its trainer.
_MODULE_TRAINER_ATTRIBUTES = frozenset({"trainer", "_trainer"})
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_HOOK_TRAINER, _HOOK_MODULE = 1, 2


def _callback_base(resolved: str | None) -> bool:
    """A Lightning callback class: ``Callback`` or any class of the callbacks package."""
    if resolved is None:
        return False
    return resolved.startswith(_CALLBACK_PACKAGES) or any(
        resolved == f"{package}.Callback" for package in _LIGHTNING_PACKAGES
    )


def _hook(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A callback hook Lightning calls with ``(trainer, pl_module, ...)``."""
    return function.name in ("setup", "teardown") or function.name.startswith("on_")


class LightningTrainers:
    """The expressions of one module that hold a Lightning ``Trainer``."""

    def __init__(self, analysis: ModuleAnalysis) -> None:
        self.analysis = analysis
        self.modules = self._derived(self._lightning_module_base)
        self.callbacks = self._derived(_callback_base)
        self._fields: set[tuple[str, str]] = set()
        self._scopes: dict[Scope, tuple[set[str], set[str]]] = {}
        for _ in range(2):  # a field bound from a name that holds one, and back
            for cls in (*self.modules, *self.callbacks):
                for method in (s for s in cls.body if isinstance(s, _FUNCTIONS)):
                    self._bind_fields(cls.name, method)

    def _lightning_module_base(self, resolved: str | None) -> bool:
        return resolved is not None and library_kind(resolved) == LIGHTNING_MODULE

    def _derived(self, is_base: Callable[[str | None], bool]) -> set[ast.ClassDef]:
        """The module's classes whose bases resolve to such a class, or derive from one
        of the module's classes found so."""
        classes = self.analysis.nodes.of_type(ast.ClassDef)
        resolve = self.analysis.names.resolve
        found = {c for c in classes if any(is_base(resolve(b)) for b in c.bases)}
        names = {c.name for c in found}
        changed = True
        while changed:
            changed = False
            for cls in classes:
                if cls not in found and any(
                    isinstance(b, ast.Name) and b.id in names for b in cls.bases
                ):
                    found.add(cls)
                    names.add(cls.name)
                    changed = True
        return found

    def _bind_fields(self, owner: str, method: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for node in own_nodes(method):
            if isinstance(node, ast.Assign) and self.holds(node.value, method):
                for target in node.targets:
                    spelled = dotted_name(target) or ""
                    if spelled.startswith("self.") and spelled.count(".") == 1:
                        self._fields.add((owner, spelled))

    def _owner(self, scope: Scope) -> ast.ClassDef | None:
        parent = self.analysis.nodes.scope_of.get(scope)
        return parent if isinstance(parent, ast.ClassDef) else None

    def _held_names(self, scope: Scope) -> tuple[set[str], set[str]]:
        """The names of ``scope`` that hold a trainer, and those that hold the module
        a callback hook is handed."""
        known = self._scopes.get(scope)
        if known is not None:
            return known
        trainers: set[str] = set()
        modules: set[str] = set()
        self._scopes[scope] = (trainers, modules)
        if isinstance(scope, _FUNCTIONS):
            positional = [*scope.args.posonlyargs, *scope.args.args]
            owner = self._owner(scope)
            if owner in self.callbacks and _hook(scope) and len(positional) > _HOOK_MODULE:
                trainers.add(positional[_HOOK_TRAINER].arg)
                modules.add(positional[_HOOK_MODULE].arg)
            for argument in (*positional, *scope.args.kwonlyargs):
                if self._annotated(argument.annotation, TRAINER):
                    trainers.add(argument.arg)
                elif self._annotated(argument.annotation, LIGHTNING_MODULE):
                    modules.add(argument.arg)
        for _ in range(2):
            for node in own_nodes(scope):
                if (
                    isinstance(node, ast.Assign)
                    and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name)
                    and self.holds(node.value, scope)
                ):
                    trainers.add(node.targets[0].id)
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                    if self._annotated(node.annotation, TRAINER):
                        trainers.add(node.target.id)
                elif isinstance(node, ast.Call):
                    trainers.update(self._handed_to_trainers(node))
        return trainers, modules

    def _annotated(self, annotation: ast.AST | None, kind: str) -> bool:
        """Whether ``annotation`` names the library ``kind`` (alone, optional, quoted)."""
        resolve = self.analysis.names.resolve
        return any(library_kind(resolve(t) or "") == kind for t in annotated_types(annotation))

    def _handed_to_trainers(self, call: ast.Call) -> Iterator[str]:
        """The names ``call`` hands to a parameter of a module function annotated
        ``Trainer``: the caller's value is the trainer the callee declares it takes."""
        callee = self.analysis.callee_of(call)
        if callee is None:
            return
        positional = [*callee.args.posonlyargs, *callee.args.args]
        if isinstance(call.func, ast.Attribute):  # ``self.f(...)``: ``self`` is bound
            positional = positional[1:]
        declared = {a.arg: a.annotation for a in (*positional, *callee.args.kwonlyargs)}
        handed = [
            *paired_arguments(tuple(a.arg for a in positional), call.args),
            *((k.arg, k.value) for k in call.keywords if k.arg is not None),
        ]
        for parameter, argument in handed:
            if isinstance(argument, ast.Starred):
                return
            if (
                parameter is not None
                and isinstance(argument, ast.Name)
                and self._annotated(declared.get(parameter), TRAINER)
            ):
                yield argument.id

    def module_parameters(self, scope: Scope) -> frozenset[str]:
        """The parameters of ``scope`` that hold a LightningModule it is handed: a
        callback hook's module, a parameter annotated ``LightningModule``."""
        return frozenset(self._held_names(scope)[1])

    def _made_trainer(self, expression: ast.expr) -> bool:
        resolved = self.analysis.names.resolve(expression)
        return resolved is not None and library_kind(resolved) == TRAINER

    def holds(self, expression: ast.expr, scope: Scope) -> bool:
        """Whether ``expression``, read in ``scope``, holds a Lightning trainer."""
        if isinstance(expression, ast.Call):
            return self._made_trainer(expression.func)
        if isinstance(expression, ast.Name):
            return expression.id in self._held_names(scope)[0]
        if not isinstance(expression, ast.Attribute):
            return False
        owner = self._owner(scope)
        spelled = dotted_name(expression)
        if owner is not None and (owner.name, spelled) in self._fields:
            return True
        if expression.attr not in _MODULE_TRAINER_ATTRIBUTES:
            return False
        holder = expression.value
        if isinstance(holder, ast.Name) and holder.id == "self":
            return owner in self.modules
        return isinstance(holder, ast.Name) and holder.id in self._held_names(scope)[1]
