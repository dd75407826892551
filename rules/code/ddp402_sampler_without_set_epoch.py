"""DDP402: a shuffling ``DistributedSampler`` in a hand-written epoch loop without
``set_epoch``."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from ddplint.analysis.api import DATALOADER_POSITIONS
from ddplint.code.context import CodeContext
from ddplint.code.edits.statement_edits import insert_statement_before
from ddplint.code.steps.data_loaders import (
    bound_name,
    is_data_loader,
    is_distributed_sampler,
)
from ddplint.code.steps.loader_flow import LoaderLoop, loader_loop
from ddplint.code.steps.loop_facts import iterated_name
from ddplint.code.syntax.call_args import argument
from ddplint.code.syntax.constants import UNKNOWN, constant_value
from ddplint.code.values.fallback_defaults import fallback_default
from ddplint.finding import Applicability, Finding, Fix, Severity
from ddplint.rule import CodeRule

#: Position of ``shuffle`` among DistributedSampler's positional parameters.
SHUFFLE_POSITION = 3


class SamplerWithoutSetEpoch(CodeRule):
    """
    ## What it does
    Flags a `DistributedSampler` that shuffles (`shuffle=True`, the default, or a
    setting such as `shuffle=cfg.shuffle`: the message names it, and the config file
    and line when the module is bound to one that sets it) when a
    `DataLoader` built on it is iterated inside an outer (epoch) loop and the module
    never calls `set_epoch` (any `set_epoch(...)` call in the module counts: samplers
    are often reached through the loader or a helper). The loader is followed through
    the module: returned by a factory, passed to a helper or a class of the module,
    kept on `self` and walked by another method, the epoch loop being around the walk
    or around a call of the function that walks it; there, only a loop that trains
    (reaches `backward()`) counts. Samplers handed to
    Lightning, accelerate or a `Trainer` are not flagged: those call `set_epoch`
    themselves, and no hand-written epoch loop iterates the loader here. A setting
    that is off by default (an argparse option, a parameter or a config field
    declared `False`) or off in the bound config file is not flagged.

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
    When the epoch loop is `for <name> in ...` and the sampler (or the loader) is bound
    before it, the fix inserts `sampler.set_epoch(<name>)` (or
    `loader.sampler.set_epoch(<name>)`) as the first statement of the epoch loop. It is
    safe: it restores the documented use.

    ## References
    - PyTorch docs: `torch.utils.data.distributed.DistributedSampler` ("calling the
      `set_epoch()` method at the beginning of each epoch ... is necessary").
    """

    code = "DDP402"
    name = "sampler-without-set-epoch"
    summary = "shuffling DistributedSampler in an epoch loop without set_epoch"
    severity = Severity.WARNING
    fix_applicability = Applicability.SAFE
    needles = ("DistributedSampler",)
    required = ("DataLoader",)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        if _calls_set_epoch(ctx):
            return
        for call in ctx.index.nodes(cst.Call):
            if not is_distributed_sampler(ctx.names, call):
                continue
            shuffle = _shuffle(ctx, call)
            if shuffle is None:
                continue
            found = _loader_of(ctx, call)
            if found is None:
                continue
            loader_call, loader, sampler = found
            loops = _epoch_loop(ctx, loader_call, loader) if loader is not None else None
            fix = None
            if loops is not None:
                receiver = sampler or f"{loader}.sampler"
                fix = _fix(ctx, loops, receiver, call if sampler else loader_call)
            else:
                # Iterated elsewhere (a helper it is passed to, a method through
                # `self`): only a training loop counts there (an evaluation's order
                # does not matter).
                loops = loader_loop(ctx, loader_call)
                if loops is None or not ctx.training_steps.is_training_loop(loops.data_loop):
                    continue
            line = ctx.range_of(loops.data_loop)[0]
            epoch_line = ctx.range_of(loops.epoch_loop)[0]
            what = f"`{loader}`" if loader is not None else "its loader"
            message = (
                f"`DistributedSampler` {shuffle.says} with the same seed every epoch unless "
                f"`set_epoch(epoch)` is called: the epoch loop (line {epoch_line}) "
                f"iterating {what} (line {line}) silently sees the same order every epoch"
            )
            summary = f"`DistributedSampler` of {what} never gets `set_epoch(epoch)`"
            yield ctx.finding(self, call, message, fix, summary=summary)


def _calls_set_epoch(ctx: CodeContext) -> bool:
    return any(
        isinstance(c.func, cst.Attribute) and c.func.attr.value == "set_epoch"
        for c in ctx.index.nodes(cst.Call)
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


def _shuffle(ctx: CodeContext, call: cst.Call) -> _Shuffle | None:
    """Whether the sampler shuffles; None when it does not (``shuffle=False``), or
    shuffles only by a setting that is off by default or in the bound config."""
    argument_given = argument(call, "shuffle", SHUFFLE_POSITION)
    if argument_given is None:
        return _Shuffle()
    expression = argument_given.value
    value = constant_value(ctx.index, expression)
    if value is not UNKNOWN:
        return _Shuffle() if value is True else None
    text = ctx.node_text(expression)
    configured = ctx.config_reads.value_at(text, ctx.range_of(expression)[0])
    if configured is not None and configured.value is not UNKNOWN:
        return _Shuffle(text, configured.where) if configured.value is True else None
    default = fallback_default(ctx.index, expression)
    if default is not None and default.value is not True:
        return None
    return _Shuffle(text)


def _loader_of(
    ctx: CodeContext, sampler_call: cst.Call
) -> tuple[cst.Call, str | None, str | None] | None:
    """(DataLoader call, its bound name or None (``return DataLoader(...)``), the
    sampler's name or None when inline)."""
    sampler = bound_name(ctx.index, sampler_call)
    scope = ctx.index.enclosing_function(sampler_call) or ctx.module
    for node in ctx.index.walk_within(scope):
        if not isinstance(node, cst.Call) or not is_data_loader(ctx.names, node):
            continue
        arg = argument(node, "sampler", DATALOADER_POSITIONS["sampler"])
        if arg is None:
            continue
        if arg.value is sampler_call or (
            sampler is not None and isinstance(arg.value, cst.Name) and arg.value.value == sampler
        ):
            return node, bound_name(ctx.index, node), sampler
    return None


def _epoch_loop(ctx: CodeContext, loader_call: cst.Call, loader: str) -> LoaderLoop | None:
    """A loop over ``loader`` nested in another loop of the same function."""
    scope = ctx.index.enclosing_function(loader_call) or ctx.module
    for node in ctx.index.walk_within(scope):
        if not isinstance(node, cst.For) or iterated_name(ctx, node) != loader:
            continue
        for ancestor in ctx.index.ancestors(node):
            if ancestor is scope:
                break
            if isinstance(ancestor, (cst.For, cst.While)):
                return LoaderLoop(node, ancestor)
    return None


def _fix(ctx: CodeContext, loops: LoaderLoop, receiver: str, anchor: cst.CSTNode) -> Fix | None:
    epoch_loop = loops.epoch_loop
    if not (
        isinstance(epoch_loop, cst.For)
        and isinstance(epoch_loop.target, cst.Name)
        and not epoch_loop.target.value.startswith("_")
        and isinstance(epoch_loop.body, cst.IndentedBlock)
        and ctx.index.order[anchor] < ctx.index.order[epoch_loop]
    ):
        return None
    call = f"{receiver}.set_epoch({epoch_loop.target.value})"
    edit = insert_statement_before(ctx, epoch_loop.body.body[0], call)
    return Fix(Applicability.SAFE, (edit,), f"Call `{call}` at the start of each epoch")
