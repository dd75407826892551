"""Checkpoint saves that every rank must join, run on some ranks only: a question to the
analysis core (DDP203).

``saves_on_some_ranks(analysis, trainer_synchronises)``: each call that writes or gathers
a checkpoint with the other ranks and runs on some ranks only (the innermost rank guard,
``rank_guards.guard_of``: a rank test around it, an early exit on one before it, a
``@rank_zero_only`` function, or ``rank_zero_only(x.save)(...)``). What saves is known by
what the receiver *is*, never by its name:

- the catalogue's checkpoint functions (``torch.distributed.checkpoint.save``, FSDP's full
  state and optimizer dicts; a full state-dict read only once the model is sharded), as
  the effects find them;
- accelerate's ``save_state`` on an ``Accelerator`` (by allocation or annotation), which
  synchronises only under DeepSpeed, FSDP or Megatron-LM, or with automatic checkpoint
  naming: counted only where the module uses one (the effects' condition);
- Lightning's ``trainer.save_checkpoint`` (the trainer by what made it, ``trainers``),
  which ends with a barrier from Lightning 2.1 on (``trainer_synchronises``);
- a DeepSpeed engine's ``save_checkpoint`` (the engine from ``deepspeed.initialize``, the
  steppers of ``steps``) and a ``Fabric``'s ``save``.

One finding per rank-guarded early exit: the first save it makes divergent.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ddplint.analysis.api import CHECKPOINT_FUNCTIONS, RANK_ONLY_DECORATORS
from ddplint.analysis.control_flow import Node, Scope
from ddplint.analysis.divergence import Facet, Source, Taint
from ddplint.analysis.effects import Collective, sharded_later
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.names import dotted_name
from ddplint.analysis.rank_guards import RankGuard, guard_of, own_reads, paired_tests
from ddplint.analysis.steps import Steppers
from ddplint.analysis.trainers import LightningTrainers

#: The methods that save on each kind of framework object.
_SAVE_METHODS = frozenset({"save_checkpoint", "save_state", "save"})
_CHECKPOINT_NAMES = frozenset(CHECKPOINT_FUNCTIONS.values())


@dataclass(frozen=True)
class SaveOnSomeRanks:
    """``call`` saves a checkpoint with the other ranks (``what``: ``trainer``,
    ``accelerator``, ``engine``, ``fabric`` or ``checkpoint``) and runs on some ranks only
    because of ``guard``; ``condition``: when it synchronises, if not always;
    ``wrapped``: the call runs through ``rank_zero_only(method)(...)``; ``via``: the save
    a project function reaches elsewhere, and the chain of calls to it."""

    call: ast.Call
    what: str
    guard: RankGuard
    condition: str | None = None
    wrapped: bool = False
    #: The save another module's function reaches, and through which calls.
    via: str | None = None

    @property
    def after_exit(self) -> bool:
        """Whether the guard is an exit before the call, not a test around it."""
        cause = self.guard.cause
        return isinstance(cause, ast.stmt) and not any(n is self.call for n in ast.walk(cause))


def saves_on_some_ranks(
    analysis: ModuleAnalysis, trainer_synchronises: bool = True
) -> list[SaveOnSomeRanks]:
    """Each synchronising checkpoint save of the module that runs on some ranks only, in
    source order; ``trainer_synchronises``: Lightning's ``save_checkpoint`` has its
    barrier (Lightning 2.1 and later)."""
    spelled = [call for call in analysis.nodes.of_type(ast.Call) if _may_save(analysis, call)]
    if not spelled:
        return []
    kinds = _SaveKinds(analysis, trainer_synchronises)
    found: list[SaveOnSomeRanks] = []
    exits: set[int] = set()
    for call, scope, node in sorted(own_reads(analysis, list(spelled)), key=_position):
        assert isinstance(call, ast.Call)
        save = kinds.save(call, scope, node)
        if save is None:
            continue
        if save.after_exit:
            if id(save.guard.cause) in exits:
                continue
            exits.add(id(save.guard.cause))
        found.append(save)
    return found


def _position(item: tuple[ast.AST, Scope, Node]) -> tuple[int, int]:
    return getattr(item[0], "lineno", 0), getattr(item[0], "col_offset", 0)


def _may_save(analysis: ModuleAnalysis, call: ast.Call) -> bool:
    """A call spelled like a save: a method named as one, or a catalogued function."""
    method = _saved_method(analysis, call)
    if isinstance(method, ast.Attribute) and method.attr in _SAVE_METHODS:
        return True
    if analysis.names.resolve(call.func) in CHECKPOINT_FUNCTIONS:
        return True
    spelled = dotted_name(call.func)  # another module's function that reaches one
    reached = analysis.project.reached(spelled, None) if spelled is not None else None
    return reached is not None and reached.api in _CHECKPOINT_NAMES


def _saved_method(analysis: ModuleAnalysis, call: ast.Call) -> ast.expr:
    """What the call runs: the method a rank-only wrapper is handed
    (``rank_zero_only(trainer.save_checkpoint)(path)``), else the callee."""
    wrapper = _rank_only_wrapper(analysis, call)
    return wrapper.args[0] if wrapper is not None else call.func


def _rank_only_wrapper(analysis: ModuleAnalysis, call: ast.Call) -> ast.Call | None:
    """``rank_zero_only(method)`` when ``call`` calls such a wrapper."""
    inner = call.func
    if not isinstance(inner, ast.Call) or len(inner.args) != 1:
        return None
    resolved = analysis.names.resolve(inner.func) or dotted_name(inner.func) or ""
    return inner if resolved.rsplit(".", 1)[-1] in RANK_ONLY_DECORATORS else None


def _never(_: Node) -> bool:
    return False


def _fsdp_read(analysis: ModuleAnalysis, call: ast.Call) -> bool:
    """A state-dict read through the FSDP class (``FSDP.optim_state_dict(model, optim)``)."""
    resolved = analysis.names.resolve(call.func)
    return resolved is not None and CHECKPOINT_FUNCTIONS.get(resolved, "").startswith("FSDP.")


class _SaveKinds:
    """What each call saves, by what its receiver is."""

    def __init__(self, analysis: ModuleAnalysis, trainer_synchronises: bool) -> None:
        self.analysis = analysis
        self.trainer_synchronises = trainer_synchronises
        self._trainers: LightningTrainers | None = None
        self._steppers: Steppers | None = None

    def save(self, call: ast.Call, scope: Scope, node: Node) -> SaveOnSomeRanks | None:
        wrapper = _rank_only_wrapper(self.analysis, call)
        if wrapper is not None:
            method = wrapper.args[0]
            what = (
                self._framework_save(method, scope) if isinstance(method, ast.Attribute) else None
            )
            if what is None:
                return None
            resolved = self.analysis.names.resolve(wrapper.func) or ast.unparse(wrapper.func)
            taint = Taint(Facet.CONTENTS, Source.RANK, wrapper.lineno, resolved)
            decorator = RankGuard(wrapper, wrapper.func, taint, None, where=(scope, node))
            return SaveOnSomeRanks(call, what, decorator, wrapped=True)
        condition: str | None = None
        via: str | None = None
        collective = self._collective(call, scope)
        if collective is not None and collective.via is not None:
            # Another module's function that reaches a catalogued save; how a framework
            # save elsewhere synchronises (its receiver, its backend) is not carried.
            spelled = dotted_name(call.func) or ""
            reached = self.analysis.project.reached(spelled, self.analysis.nodes.owner_class(scope))
            api = reached.api if reached is not None else collective.name
            if api not in _CHECKPOINT_NAMES:
                return None
            what, via = "checkpoint", f"{api} ({collective.via})"
        elif collective is not None and (
            collective.name in _CHECKPOINT_NAMES or collective.name == "accelerator.save_state"
        ):
            what = "accelerator" if collective.condition else "checkpoint"
            condition = collective.condition
        elif isinstance(call.func, ast.Attribute):
            found = self._framework_save(call.func, scope)
            if found is None or found == "accelerator":
                return None  # an accelerator's save_state counts only where it synchronises
            what = found
        else:
            return None
        # Pairing sees the saves the effects issue: a test whose ways both make one
        # decides nothing; the others (framework saves) no collective sequence shows.
        effect = self.analysis.call_collective(call, scope) is not None
        balanced = paired_tests(self.analysis, scope) if effect else _never
        guard = guard_of(self.analysis, scope, node, call, balanced=balanced)
        if guard is None:
            return None
        return SaveOnSomeRanks(call, what, guard, condition, via=via)

    def _collective(self, call: ast.Call, scope: Scope) -> Collective | None:
        """The effects' collective of ``call``; an FSDP class's own state-dict read
        presumes an FSDP model (it is read through the class that shards it), so only a
        model this module shards later keeps it from counting, not sharding out of sight."""
        found = self.analysis.call_collective(call, scope)
        if found is not None or not _fsdp_read(self.analysis, call):
            return found
        found = self.analysis.objects.collective(call, in_lightning_class=False)
        if found is None or not call.args:
            return found
        model = dotted_name(call.args[0])
        calls = list(self.analysis.nodes.of_type(ast.Call))
        sharded = sharded_later(calls, self.analysis.names, self.analysis.project)
        return None if model is not None and sharded.get(model, 0) > call.lineno else found

    def _framework_save(self, method: ast.Attribute, scope: Scope) -> str | None:
        """The kind of object whose save ``method`` is, if it is one."""
        receiver = method.value
        spelled = dotted_name(receiver)
        objects = self.analysis.objects
        if method.attr == "save_checkpoint":
            if self.trainer_synchronises and self.trainers.holds(receiver, scope):
                return "trainer"
            if self.steppers.holds(receiver):
                return "engine"
        elif method.attr == "save" and spelled in objects.fabrics:
            return "fabric"
        elif method.attr == "save_state" and spelled in objects.accelerators:
            return "accelerator" if objects.uses_conditional_backend else None
        return None

    @property
    def trainers(self) -> LightningTrainers:
        if self._trainers is None:
            self._trainers = LightningTrainers(self.analysis)
        return self._trainers

    @property
    def steppers(self) -> Steppers:
        if self._steppers is None:
            self._steppers = Steppers(self.analysis)
        return self._steppers
