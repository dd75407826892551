"""Which functions run on every training step: the forward path.

A forward path is ``forward`` / ``*_step`` of a module class: one whose kind
(``values.object_types``) is a module's, through its bases in this module, the project's
classes across modules and the library catalogue (``nn.Module``, ``LightningModule``,
NeMo's ``ModelPT``/``NeuralModule``, Megatron's ``MegatronModule``, transformers'
``PreTrainedModel``); where a base is of unknown kind, an imported base whose name says
it is a module (``ASRModel``) still counts,
plus every function those reach through calls inside the same module (``self.helper()``,
``helper()``). The body of a loop that calls ``backward()`` is a per-step path too:
``ddplint.code.steps.training_steps`` finds those.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

from ddplint.analysis.object_kinds import MODULE_KINDS, library_kind
from ddplint.code.syntax.call_graph import LocalFunctions
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import ImportTable, dotted_name
from ddplint.code.values.object_types import ObjectTypes

FORWARD_METHODS = frozenset(
    {"forward", "training_step", "validation_step", "test_step", "predict_step"}
)
# The fallback for a class of unknown kind: an imported base still names itself
# (``ASRModel``).
_MODULE_LIKE_NAME = re.compile(r"(Module|ModelPT|Model|Layer|Block|Encoder|Decoder)$")


@dataclass(frozen=True)
class PathReason:
    """Why a function is on the forward path: the entry method and the call chain."""

    entry: str
    chain: tuple[str, ...]

    def describe(self) -> str:
        if not self.entry.isidentifier() and "." not in self.entry:
            return self.entry
        if not self.chain:
            return f"`{self.entry}`"
        return f"`{self.chain[-1]}` (called from `{self.entry}`)"


class ForwardPaths:
    """Forward-path functions of one module and per-step training loops."""

    def __init__(self, index: ModuleIndex, names: ImportTable, types: ObjectTypes) -> None:
        self._index = index
        self._names = names
        self._types = types
        self._local = LocalFunctions(index)
        self.classes = self._local.classes
        self.functions: dict[cst.FunctionDef, PathReason] = {}
        self._module_like_cache: dict[str, bool] = {}
        self._compute()

    def is_module_class(self, cls: cst.ClassDef, _seen: frozenset[str] = frozenset()) -> bool:
        """Whether ``cls`` derives from a torch/Lightning/NeMo module class: by its kind
        where its bases say, else by the names of its imported bases."""
        name = cls.name.value
        if name in self._module_like_cache:
            return self._module_like_cache[name]
        kind = self._types.class_kind(cls)
        if kind is not None:
            self._module_like_cache[name] = kind in MODULE_KINDS
            return kind in MODULE_KINDS
        result = False
        for base in cls.bases:
            qualified = self._names.qualified_name(base.value)
            dotted = dotted_name(base.value) or ""
            if qualified is not None and library_kind(qualified) in MODULE_KINDS:
                result = True
            elif dotted in self.classes and dotted not in _seen | {name}:
                result = self.is_module_class(self.classes[dotted], _seen | {name})
            elif qualified is not None and _MODULE_LIKE_NAME.search(qualified.split(".")[-1]):
                result = True
            if result:
                break
        self._module_like_cache[name] = result
        return result

    def methods_of(self, cls: cst.ClassDef) -> dict[str, cst.FunctionDef]:
        """Methods of ``cls`` by name, with those inherited from classes of this module."""
        return self._local.methods(cls)

    def _compute(self) -> None:
        entries: list[tuple[cst.FunctionDef, cst.ClassDef | None, PathReason]] = []
        for owner in self.classes.values():
            if not self.is_module_class(owner):
                continue
            for method_name, method in self.methods_of(owner).items():
                if method_name in FORWARD_METHODS:
                    entry = PathReason(f"{owner.name.value}.{method_name}", ())
                    entries.append((method, owner, entry))
        self.functions = self.reach(entries)

    def reach(
        self,
        entries: list[tuple[cst.FunctionDef, cst.ClassDef | None, PathReason]],
        follow: Callable[[cst.Call, cst.FunctionDef], bool] | None = None,
    ) -> dict[cst.FunctionDef, PathReason]:
        """The entry functions and every function of the module they call
        (``self.helper()``, ``helper()``), each with the chain that reaches it; a call
        for which ``follow(call, callee)`` is false is not followed."""
        module_functions = self._local.module_functions
        reached: dict[cst.FunctionDef, PathReason] = {}
        work = list(entries)
        while work:
            function, cls, reason = work.pop()
            if function in reached:
                continue
            reached[function] = reason
            methods = self.methods_of(cls) if cls is not None else {}
            for node in self._index.walk_within(function):
                if not isinstance(node, cst.Call):
                    continue
                target = dotted_name(node.func)
                if target is None:
                    continue
                callee: cst.FunctionDef | None = None
                callee_cls = None
                if target.startswith("self.") and target.count(".") == 1:
                    callee = methods.get(target[5:])
                    callee_cls = cls
                elif "." not in target:
                    callee = module_functions.get(target)
                if callee is not None and follow is not None and not follow(node, callee):
                    continue
                if callee is not None and callee not in reached:
                    label = target[5:] if target.startswith("self.") else target
                    if callee_cls is not None:
                        label = f"{callee_cls.name.value}.{label}"
                    work.append(
                        (callee, callee_cls, PathReason(reason.entry, (*reason.chain, label)))
                    )
        return reached

    def reason_for(self, node: cst.CSTNode) -> PathReason | None:
        """Why the function holding ``node`` runs every step, or None if it does not (as
        far as we can see). Training-loop bodies are ``TrainingSteps``' answer."""
        function = self._index.enclosing_function(node)
        if function is not None and function in self.functions:
            return self.functions[function]
        return None
