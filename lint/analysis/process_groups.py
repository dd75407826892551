"""Process groups on CPython's ``ast``: the backend of the group a collective runs on,
followed from where the group is made (DDP301, DDP302, DDP304).

``ProcessGroups(analysis)`` reads one module:

- ``inits``: each ``init_process_group(...)`` call, with its backend and its
  ``timeout=`` argument (DDP304 reports where it does not reach later groups);
- ``default_backend``: the default group's backend, when every ``init_process_group``
  of the module comes to the same one;
- ``group_backend(call, scope)``: the backend of the group a collective runs on: the
  default group (no ``group=``, ``None``, ``group.WORLD``), or the group a name bound
  once in its scope was made by (``new_group(..., backend=...)``,
  ``new_subgroups(...)``; no backend there is the default group's).

A backend is the value its argument comes to: a literal (``"nccl"``, ``"NCCL"``,
``Backend.NCCL``), a name bound once to one (``constants``), or the declared default of
the parameter, option or config field it is read from (``fallback_defaults``: the
backend where the run is left at its default). Each says where it comes from, for
messages. Anything else is unknown (``"nccl" if cuda else "gloo"``, a group made in
another module), and unknown answers None: nothing is reported on it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cached_property

from ddplint.analysis.api import torch_distributed_function
from ddplint.analysis.constants import Owner
from ddplint.analysis.effects import default_group
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.names import call_argument, is_none, keyword_argument

#: Where ``backend`` sits among the positional parameters of the group makers.
_BACKEND_POSITION = {"init_process_group": 0, "new_group": 2, "new_subgroups": 3}


@dataclass(frozen=True)
class Backend:
    """A group's backend (lower case), and what says so when it is not written at the
    call itself (a declared default, for messages; empty when it is)."""

    name: str
    source: str = ""


@dataclass(frozen=True)
class InitCall:
    """One ``init_process_group`` call: its backend (None when unknown or left out) and
    its ``timeout=`` argument."""

    call: ast.Call
    scope: ast.AST
    backend: Backend | None
    timeout: ast.expr | None
    #: Where the timeout is passed: its ``timeout=`` keyword, or the expression.
    timeout_at: ast.AST | None = None


class ProcessGroups:
    """What one module says about its process groups."""

    def __init__(self, analysis: ModuleAnalysis) -> None:
        self._analysis = analysis

    def scope_of(self, call: ast.Call) -> ast.AST:
        """The scope whose code makes ``call`` (the module for module code)."""
        return self._analysis.nodes.scope_of_call(call)

    def made_by(self, call: ast.Call) -> str | None:
        """``barrier`` for ``dist.barrier(...)``: the ``torch.distributed`` function a
        call is, by its resolved name."""
        return torch_distributed_function(self._analysis.names.resolve(call.func))

    @cached_property
    def inits(self) -> list[InitCall]:
        found = []
        for scope, calls in self._analysis.nodes.calls_by_scope.items():
            for call in calls:
                if self.made_by(call) == "init_process_group":
                    given = call_argument(call, 0, "backend")
                    backend = self.backend(given, scope) if given is not None else None
                    timeout = call_argument(call, 2, "timeout")
                    keyword = keyword_argument(call, "timeout")
                    at = keyword if keyword is not None else timeout
                    found.append(InitCall(call, scope, backend, timeout, at))
        return sorted(found, key=lambda init: (init.call.lineno, init.call.col_offset))

    @cached_property
    def default_backend(self) -> Backend | None:
        """The default group's backend when every ``init_process_group`` of the module
        comes to the same one; None otherwise (or with none)."""
        backends = [init.backend for init in self.inits]
        if not backends or None in backends or len({b.name for b in backends if b}) != 1:
            return None
        # Written at a call, if any is: a declared default only where every call reads one.
        return min((b for b in backends if b), key=lambda backend: bool(backend.source))

    def backend(self, expression: ast.expr, scope: ast.AST) -> Backend | None:
        """The backend ``expression`` (read in ``scope``) comes to, if it is known."""
        analysis = self._analysis
        value = analysis.constants.value(expression, scope)
        if isinstance(value, str) and value.strip():
            return Backend(value.strip().lower())
        qualified = analysis.names.resolve(expression)
        if qualified is not None:
            head, _, member = qualified.rpartition(".")
            if torch_distributed_function(head) == "Backend" and member.isupper():
                return Backend(member.lower())
        default = analysis.fallback_defaults.of(expression, scope)
        if default is not None and isinstance(default.value, str) and default.value.strip():
            return Backend(default.value.strip().lower(), f"{default.where} {default.value!r}")
        return None

    def group_backend(self, call: ast.Call, group: ast.expr | None) -> Backend | None:
        """The backend of the group a collective ``call`` runs on (``group``: its group
        argument, None when left out)."""
        if group is None or default_group(group):
            return self.default_backend
        made = self.group_made(call, group)
        if made is None:
            return None
        maker, scope = made
        given = call_argument(maker, _BACKEND_POSITION[self.made_by(maker) or ""], "backend")
        if given is None or is_none(given):
            return self.default_backend  # no backend of its own: the default group's
        return self.backend(given, scope)

    def group_made(self, call: ast.Call, group: ast.expr) -> tuple[ast.Call, Owner] | None:
        """The ``new_group(...)`` / ``new_subgroups(...)`` call that a name ``group``
        read by ``call`` is bound to once in its scope, and that scope."""
        if not isinstance(group, ast.Name):
            return None
        constants = self._analysis.constants
        found = constants.single_assignment(constants.owner_of(self.scope_of(call)), group.id)
        if found is None:
            return None
        maker, scope = found
        if isinstance(maker, ast.Call) and self.made_by(maker) in ("new_group", "new_subgroups"):
            return maker, scope
        return None
