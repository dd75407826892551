"""DDP402: a shuffling ``DistributedSampler`` in a hand-written epoch loop without
``set_epoch``."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from ddplint.analysis.api import DISTRIBUTED_SAMPLER_SHUFFLE_POSITION
from ddplint.analysis.control_flow import Scope
from ddplint.analysis.literal_values import UNKNOWN
from ddplint.analysis.names import passed_argument
from ddplint.analysis.sampler_epochs import (
    UnsetHandedLoader,
    UnsetSampler,
    unset_epochs,
)
from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import ast_node_text, insert_ast_statement_before
from ddplint.config.values import UNKNOWN as UNSET_IN_CONFIG
from ddplint.finding import Applicability, Finding, Fix, Severity
from ddplint.rule import CodeRule
from ddplint.rules.screens import has_a_loop_statement


class SamplerWithoutSetEpoch(CodeRule):
    """
    ## What it does
    Flags a `DistributedSampler` that shuffles (`shuffle=True`, the default, or a
    setting such as `shuffle=cfg.shuffle`: the message names it, and the config file
    and line when the module is bound to one that sets it) when a `DataLoader` built on
    it (`sampler=`, or a `batch_sampler` made from it) is iterated inside an outer
    (epoch) loop and `set_epoch` is not called on it once per epoch.

    The sampler and the loader are followed through the module as objects: bound to
    names, kept on `self` and walked by another method, returned by a factory, passed
    to a helper or to a class of the module, kept in a mapping under a constant key
    (`loaders = {"train": loader}`, read back as `loaders["train"]`), chosen by a
    conditional (`DistributedSampler(ds) if distributed else None`); the sampler's
    class too, held in a place (`RandomSampler if single else DistributedSampler`,
    handed to a helper that calls it). A project subclass of `DistributedSampler` or a
    project factory that returns one (in this module or another) makes a sampler as
    well; its `shuffle` is read by keyword only, and only a walk that trains counts.
    A walk is a `for` over the loader, or an iterator of it stepped with `next` and
    made anew when it runs out (`it = iter(loader)` in the step loop). The epoch loop
    is around the walk, or around a call of the function that walks it (a few callers
    up); where that loop makes the sampler anew each trip (one per task or
    evaluation), only a walk that trains counts, and none where the new sampler's
    `seed` reads what the trip moves (`seed=base + epoch`, a counter the loop steps):
    each trip's sampler then shuffles in another order.
    `set_epoch` counts when it is called on the sampler (or on the loader's `.sampler` /
    `.batch_sampler`) inside the epoch loop or in a function the epoch loop calls; a
    call on something the module does not make (a parameter, `args.sampler`) or in a
    function the module never calls (a hook) counts too, since it may be this sampler
    each epoch. A call made once before the loop, or on another sampler, does not.
    Where the loader is walked from another function, or the module calls `set_epoch`
    on another sampler, only a walk that trains (reaches `backward()`) counts: an
    evaluation's order does not matter. Samplers handed to Lightning, accelerate or a
    `Trainer` are not flagged: those call `set_epoch` themselves, and no hand-written
    epoch loop iterates the loader here. A setting that is off (`False`, a constant
    bound to it), off by default (an argparse option, a parameter or a config field
    declared `False`) or off in the bound config file is not flagged.

    Across modules (a project run): where callers in other modules build a loader on a
    shuffling `DistributedSampler` and hand it to a function of this module
    (`train(model, train_loader, ...)` in `train_utils.py`, the loader made in
    `finetune.py`), a loop of that function (or of a function it hands the loader on
    to) that walks it every epoch and trains, with no `set_epoch` that may reach its
    sampler, is flagged at the epoch loop. A loader the function binds again
    (`loader = accelerator.prepare(loader)`) is not followed.

    ## Why is this bad?
    `DistributedSampler` seeds its shuffle with `seed + epoch`, and `epoch` changes only
    through `set_epoch`. Without it every epoch visits the data in the same order
    (reproduced): training silently loses the benefit of shuffling, and results differ
    from a single-process run with `shuffle=True`.

    ## Example
    ```python
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, sampler=sampler, batch_size=32)
    for epoch in range(epochs):
        for batch in loader:
            ...
    ```

    ## Use instead
    ```python
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for batch in loader:
            ...
    ```

    ## Fix safety
    When the epoch loop is `for <name> in ...` in the function that walks the loader,
    and a name bound once before it holds the sampler (or the loader it walks), the fix
    inserts `sampler.set_epoch(<name>)` (or `loader.sampler.set_epoch(<name>)`) as the
    first statement of the epoch loop. It is safe: it restores the documented use. No
    fix is offered where the loader's sampler may be another one or none (a
    conditional, a name bound twice, a class chosen at run time), or where the walk
    is an iterator made anew (its loop counts steps, not epochs).

    This rule is built on the analysis core (object flow of the sampler and its loader,
    constant values, declared defaults and config values on Python's `ast`).

    ## References
    - PyTorch docs: `torch.utils.data.distributed.DistributedSampler` ("calling the
      `set_epoch()` method at the beginning of each epoch ... is necessary").
    """

    code = "DDP402"
    reads_libcst = False
    name = "sampler-without-set-epoch"
    summary = "shuffling DistributedSampler in an epoch loop without set_epoch"
    severity = Severity.WARNING
    #: Preview again since session 44: 10 TRUE / 3 FALSE over the blind sets (77%, under the
    #: 90% default bar). On by default in session 43 at 9 / 1; set 16's two FALSE are
    #: validation samplers (a walk that trains nothing, in a vendored apex example and test).
    default_enabled = False
    fix_applicability = Applicability.SAFE
    needles = ("DistributedSampler",)
    #: An ``also_needles`` group, not a required word: a project fact (a loader on a
    #: distributed sampler handed in) stands for both words.
    also_needles = ("DataLoader",)
    screened_by = staticmethod(has_a_loop_statement)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        analysis = ctx.analysis
        unset_samplers, unset_handed = unset_epochs(analysis)
        for unset in unset_samplers:
            scope = analysis.nodes.scope_of_call(unset.sampler)
            shuffle = _shuffle(ctx, unset.sampler, scope, library=unset.library)
            if shuffle is None:
                continue
            what = f"`{unset.loader_name}`" if unset.loader_name else "its loader"
            message = (
                f"`DistributedSampler` {shuffle.says} with the same seed every epoch unless "
                f"`set_epoch(epoch)` is called: the epoch loop (line {unset.loop.outer.lineno}) "
                f"iterating {what} (line {unset.loop.walk.lineno}) silently sees the same "
                "order every epoch"
            )
            summary = f"`DistributedSampler` of {what} never gets `set_epoch(epoch)`"
            related = [(unset.loop.outer, "the epoch loop"), (unset.loop.walk, "the walk")]
            yield ctx.ast_finding(
                self,
                unset.sampler,
                message,
                summary=summary,
                related=related,
                fix=_fix(ctx, unset),
            )
        for handed in unset_handed:
            yield self._handed_finding(ctx, handed)

    def _handed_finding(self, ctx: CodeContext, handed: UnsetHandedLoader) -> Finding:
        outer, walk = handed.loop.outer, handed.loop.walk
        name = handed.walked
        where = getattr(handed.function, "name", "the module")
        message = (
            f"`{name}` holds a loader that callers elsewhere in the project build on a "
            f"shuffling `DistributedSampler`, and `{where}` walks it (line {walk.lineno}) "
            "every trip of this epoch loop without `set_epoch(epoch)`: the sampler "
            "shuffles with the same seed every epoch, so every epoch sees the same order; "
            "call `set_epoch(epoch)` on its sampler at the start of each epoch"
        )
        return ctx.ast_finding(
            self,
            outer,
            message,
            summary=f"handed loader `{name}` never gets `set_epoch(epoch)`",
            related=[(walk, "the walk")],
        )


@dataclass(frozen=True)
class _Shuffle:
    """That a sampler shuffles: always (``setting`` None), or when a setting is true
    (its text, and the config file and line that set it when one does)."""

    setting: str | None = None
    configured_at: str | None = None

    @property
    def says(self) -> str:
        if self.setting is None:
            return "shuffles"
        where = f", set true at {self.configured_at}" if self.configured_at else ""
        return f"shuffles when `{self.setting}` is true{where},"


def _shuffle(ctx: CodeContext, call: ast.Call, scope: Scope, library: bool) -> _Shuffle | None:
    """Whether the sampler shuffles; None when it does not (``shuffle=False``), or
    shuffles only by a setting that is off by default or in the bound config. A project
    sampler's (``library`` False) setting is read by keyword only: its signature is
    its own."""
    if library:
        given = passed_argument(call, "shuffle", DISTRIBUTED_SAMPLER_SHUFFLE_POSITION)
    else:
        given = passed_argument(call, "shuffle")
    if given is None:
        return _Shuffle()
    analysis = ctx.analysis
    value = analysis.constants.value(given, scope)
    if value is UNKNOWN:
        value = analysis.literal_values.value(given)
    if value is not UNKNOWN:
        return _Shuffle() if value is True else None
    text = ast_node_text(ctx, given)
    configured = ctx.config_reads.value_at(text, given.lineno)
    if configured is not None and configured.value is not UNSET_IN_CONFIG:
        return _Shuffle(text, configured.where) if configured.value is True else None
    default = analysis.fallback_defaults.of(given, scope)
    if default is not None and default.value is not True:
        return None
    return _Shuffle(text)


def _fix(ctx: CodeContext, unset: UnsetSampler) -> Fix | None:
    epoch_loop = unset.loop.outer
    if not (
        unset.receiver is not None
        and isinstance(epoch_loop, (ast.For, ast.AsyncFor))
        and isinstance(epoch_loop.target, ast.Name)
        and not epoch_loop.target.id.startswith("_")
    ):
        return None
    call = f"{unset.receiver}.set_epoch({epoch_loop.target.id})"
    edit = insert_ast_statement_before(ctx, epoch_loop.body[0], call)
    return Fix(Applicability.SAFE, (edit,), f"Call `{call}` at the start of each epoch")
