"""What kind of framework object a receiver holds, from its allocation or annotation in
this module (``acc = Accelerator()``, ``fabric: Fabric``, ``engine, *_ =
deepspeed.initialize(...)``, ``trainer = Trainer(...)``), not from its name.

A receiver the module builds from another callable of those frameworks (``engine =
deepspeed.init_inference(...)``, ``accelerator = get_accelerator()`` from DeepSpeed) is
no framework object whatever it is called. A receiver the module never allocates (a
parameter, an attribute set in another module) or builds through a callable of its own
or of another library (a project's ``build_trainer(cfg)``, ``hydra.utils.instantiate``)
is still judged by its name (``catalogue._receiver_kind``): the project model does not
carry object types across modules or through factories.
"""

from __future__ import annotations

import libcst as cst

from ddplint.analysis.api import (
    ACCELERATE_CLASSES,
    DEEPSPEED_INITIALIZE,
    FABRIC_CLASSES,
    LIGHTNING_TRAINERS,
)
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import ImportTable, dotted_name

#: The receiver kind (``catalogue._FRAMEWORK_METHODS``) of each class.
_KIND_OF_CLASS = {
    **dict.fromkeys(ACCELERATE_CLASSES, "accelerator"),
    **dict.fromkeys(FABRIC_CLASSES, "fabric"),
    **dict.fromkeys(LIGHTNING_TRAINERS, "trainer"),
}
#: The frameworks whose objects the catalogue knows: their other callables make none.
_FRAMEWORK_PACKAGES = frozenset(
    {"accelerate", "lightning", "lightning_fabric", "pytorch_lightning", "deepspeed"}
)
#: Allocated by another callable of those frameworks: no framework object.
OTHER = "other"


class Receivers:
    """The framework kind of each receiver (a name or ``self.x``) the module allocates
    or annotates; ``OTHER`` for one it builds from another callable of a framework."""

    def __init__(self, index: ModuleIndex, names: ImportTable) -> None:
        self._names = names
        self.kinds: dict[str, str] = {}
        for assign in index.nodes(cst.Assign):
            for target in assign.targets:
                self._allocated(target.target, assign.value)
        for annotated in index.nodes(cst.AnnAssign):
            self._annotated(annotated.target, annotated.annotation)
            if annotated.value is not None:
                self._allocated(annotated.target, annotated.value)
        for parameter in index.nodes(cst.Param):
            if parameter.annotation is not None:
                self._annotated(parameter.name, parameter.annotation)

    def kind(self, receiver: str) -> str | None:
        """The receiver's kind, ``OTHER``, or None when the module does not say."""
        return self.kinds.get(receiver)

    def _record(self, target: cst.BaseExpression, kind: str) -> None:
        spelled = dotted_name(target)
        if spelled is None:
            return
        # One framework allocation anywhere in the module outweighs other bindings.
        if self.kinds.get(spelled, OTHER) == OTHER:
            self.kinds[spelled] = kind

    def _allocated(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if not isinstance(value, cst.Call):
            return
        made = self._names.qualified_name(value.func)
        if made is None:
            return  # a local function or an object's method: the module does not say
        if made == DEEPSPEED_INITIALIZE and isinstance(target, (cst.Tuple, cst.List)):
            first = target.elements[0].value if target.elements else None
            if first is not None:
                self._record(first, "engine")
            return
        if made in _KIND_OF_CLASS:
            self._record(target, _KIND_OF_CLASS[made])
        elif made.split(".", 1)[0] in _FRAMEWORK_PACKAGES:
            self._record(target, OTHER)

    def _annotated(self, target: cst.BaseExpression, annotation: cst.Annotation) -> None:
        made = self._names.qualified_name(annotation.annotation)
        if made in _KIND_OF_CLASS:
            self._record(target, _KIND_OF_CLASS[made])
