"""What a call reaches through functions of the same module: collectives, backward(),
optimizer steps.

``CallReach.reached(call)`` answers "does running this call issue a collective or run
``backward()``?" (or step an optimizer, when asked): the call itself when it is one,
otherwise the first one reached through the same-module functions it calls
(``self.helper()`` of the same class or a module-local base, a module-level ``helper()``),
with the chain of names followed. Each function is summarised once; recursion is cut.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection
from dataclasses import dataclass
from enum import Enum

import libcst as cst

from ddplint.code.collectives.catalogue import Collective
from ddplint.code.steps.forward_paths import ForwardPaths
from ddplint.code.syntax.call_args import (
    false_self_conditions,
    runs_only_if,
    switched_off_parameters,
)
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import dotted_name

BACKWARD_CALLS = frozenset({"backward", "manual_backward"})


class StepEvent(str, Enum):
    """What a call does that every rank must do alike."""

    COLLECTIVE = "collective"
    BACKWARD = "backward"


#: Events that communicate: a collective, or backward (DDP's gradient all-reduce).
SYNCING = frozenset({StepEvent.COLLECTIVE, StepEvent.BACKWARD})


@dataclass(frozen=True)
class Reached:
    """A collective or backward call (``target``) reached from a call site, through
    ``chain`` (the same-module functions followed, outermost first; empty when the call
    site is the target itself)."""

    kind: StepEvent
    target: cst.Call
    label: str
    chain: tuple[str, ...] = ()
    #: Where a project function of another module reaches it (``Collective.via``).
    via: str = ""

    def describe(self) -> str:
        """``torch.distributed.barrier`` or ``torch.distributed.barrier (through `_sync`)``."""
        via = f" ({self.via})" if self.via else ""
        if not self.chain:
            return f"`{self.label}`{via}"
        return f"`{self.label}`{via} (through `{'` -> `'.join(self.chain)}`)"


def callee_text(func: cst.BaseExpression) -> str:
    """``self.lr_schedulers().step`` for a call chain, ``...`` for what it cannot spell."""
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return f"{callee_text(func.value)}.{func.attr.value}"
    if isinstance(func, cst.Call):
        return f"{callee_text(func.func)}(...)" if func.args else f"{callee_text(func.func)}()"
    return "..."


def is_backward_call(call: cst.Call) -> bool:
    """``loss.backward()``, ``accelerator.backward(loss)``, ``self.manual_backward(loss)``,
    ``scaler.scale(loss).backward()``."""
    return isinstance(call.func, cst.Attribute) and call.func.attr.value in BACKWARD_CALLS


class CallReach:
    """Collectives and backward calls reached by calls of one module."""

    def __init__(
        self,
        index: ModuleIndex,
        forward_paths: ForwardPaths,
        collectives: dict[cst.Call, Collective],
    ) -> None:
        self._index = index
        self._forward_paths = forward_paths
        self._collectives = collectives
        self._module_functions = {
            s.name.value: s for s in index.module.body if isinstance(s, cst.FunctionDef)
        }
        self._summaries: dict[tuple[cst.FunctionDef, frozenset[StepEvent]], Reached | None] = {}
        self._in_progress: set[cst.FunctionDef] = set()

    def direct(self, call: cst.Call, kinds: Collection[StepEvent] = SYNCING) -> Reached | None:
        """The call itself, when it is a collective or a backward of the wanted kinds."""
        collective = self._collectives.get(call)
        if collective is not None and StepEvent.COLLECTIVE in kinds:
            return Reached(StepEvent.COLLECTIVE, call, collective.api, via=collective.via)
        if StepEvent.BACKWARD in kinds and is_backward_call(call):
            return Reached(StepEvent.BACKWARD, call, f"{callee_text(call.func)}()")
        return None

    def callee(self, call: cst.Call) -> cst.FunctionDef | None:
        """The same-module function ``call`` runs: ``self.m()`` or a module-level ``f()``."""
        target = dotted_name(call.func)
        if target is None:
            return None
        if "." not in target:
            return self._module_functions.get(target)
        if target.startswith("self.") and target.count(".") == 1:
            owner = self._owner_class(call)
            if owner is not None:
                return self._forward_paths.methods_of(owner).get(target[5:])
        return None

    def _owner_class(self, node: cst.CSTNode) -> cst.ClassDef | None:
        for ancestor in self._index.ancestors(node):
            if isinstance(ancestor, cst.FunctionDef):
                owner = self._index.enclosing_class(ancestor)
                if owner is not None:
                    return owner
        return None

    def reached(
        self,
        call: cst.Call,
        kinds: Collection[StepEvent] = SYNCING,
        false_here: frozenset[str] = frozenset(),
    ) -> Reached | None:
        """What running ``call`` reaches: itself, or the first event inside its callee.
        ``false_here``: ``self.`` attributes known false on the path to ``call``."""
        found = self.direct(call, kinds)
        if found is not None:
            return found
        function = self.callee(call)
        if function is None:
            return None
        switched_off = switched_off_parameters(call, function)
        if (dotted_name(call.func) or "").startswith("self."):
            # The same object: what is false here is false in its method too.
            switched_off |= false_here | false_self_conditions(self._index, call)
        if switched_off:
            inner = self._first_switched_on(function, kinds, switched_off)
        else:
            inner = self.function_reaches(function, kinds)
        if inner is None:
            return None
        label = dotted_name(call.func) or function.name.value
        return Reached(inner.kind, inner.target, inner.label, (label, *inner.chain), inner.via)

    def _first_switched_on(
        self, function: cst.FunctionDef, kinds: Collection[StepEvent], off: set[str]
    ) -> Reached | None:
        """As ``function_reaches``, leaving out what runs only under a parameter this
        call switches off (``if synchronize: barrier()`` with ``synchronize=False``)."""
        if function in self._in_progress:
            return None
        self._in_progress.add(function)
        try:
            carried = frozenset(name for name in off if name.startswith("self."))
            for node in self._index.walk_within(function.body):
                if isinstance(node, cst.Call) and not runs_only_if(
                    self._index, node, function, off
                ):
                    found = self.reached(node, kinds, carried)
                    if found is not None:
                        return found
        finally:
            self._in_progress.discard(function)
        return None

    def function_reaches(
        self, function: cst.FunctionDef, kinds: Collection[StepEvent] = SYNCING
    ) -> Reached | None:
        """The first event (source order) ``function`` reaches, through calls too."""
        key = (function, frozenset(kinds))
        if key in self._summaries:
            return self._summaries[key]
        if function in self._in_progress:
            return None
        self._in_progress.add(function)
        try:
            found = self.first_in(function.body, kinds)
        finally:
            self._in_progress.discard(function)
        self._summaries[key] = found
        return found

    def first_in(
        self,
        root: cst.CSTNode,
        kinds: Collection[StepEvent] = SYNCING,
        after: cst.CSTNode | None = None,
    ) -> Reached | None:
        """The first event reached by ``root`` or a call under it (nested defs excluded),
        optionally only among calls that come after all of ``after`` in source order."""
        threshold = -1
        if after is not None:
            order = self._index.order
            threshold = max(
                (order[n] for n in self._index.walk_within(after, into_functions=True)),
                default=order[after],
            )
        for node in itertools.chain((root,), self._index.walk_within(root)):
            if isinstance(node, cst.Call) and self._index.order[node] > threshold:
                found = self.reached(node, kinds)
                if found is not None:
                    return found
        return None
