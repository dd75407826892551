"""DDP406: ``persistent_workers=True`` written as a constant while ``num_workers`` is a
setting that may be 0."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ddplint.analysis.api import DATALOADER_POSITIONS
from ddplint.code.context import CodeContext
from ddplint.code.edits.edits import replace_node
from ddplint.code.steps.data_loaders import (
    is_data_loader,
    spread_keywords,
)
from ddplint.code.syntax.call_args import argument, keyword_argument
from ddplint.code.syntax.constants import UNKNOWN, constant_value
from ddplint.code.syntax.names import dotted_name
from ddplint.code.values.fallback_defaults import fallback_default
from ddplint.finding import Applicability, Finding, Fix, Severity
from ddplint.rule import CodeRule
from ddplint.rules.prefilters import persistent_workers_true

#: Calls whose result is at least 1 whatever the machine (``None`` aside).
_AT_LEAST_ONE = frozenset({"os.cpu_count", "multiprocessing.cpu_count"})


class PersistentWorkersFixedTrue(CodeRule):
    """
    ## What it does
    Flags a `DataLoader` given `persistent_workers=True` as a constant while its
    `num_workers` is a setting (an argument, an option, a config value) that nothing
    keeps above 0, directly or through a `**kwargs` dict built in the same function
    (`common = dict(num_workers=args.workers, persistent_workers=True)`).

    Not flagged: `num_workers` a positive constant, a value decided where it is set (a
    module constant bound once, a key of a dict literal in the file that nothing writes
    or merges over: `config = {"num_workers": 8}`), a call that cannot give 0
    (`os.cpu_count()`, `max(1, ...)`), a loader built under a test of that same value
    (`if args.workers > 0:`), and a setting whose declared default or configured value
    is 0 (DDP404 reports those: the run fails as configured).

    ## Why is this bad?
    `DataLoader` raises `ValueError: persistent_workers option needs num_workers > 0`
    when it is built. The setting is the first thing a user turns to 0 to rule out
    worker processes while debugging a hang or a crash, and the debugging run then dies
    before its first step, on every rank.

    ## Example
    ```python
    loader = DataLoader(dataset, num_workers=args.workers, persistent_workers=True)
    ```

    ## Use instead
    ```python
    loader = DataLoader(
        dataset, num_workers=args.workers, persistent_workers=args.workers > 0
    )
    ```

    ## Fix safety
    The fix writes `persistent_workers=<num_workers> > 0`: with workers nothing changes,
    with none the call no longer raises. It is safe when `num_workers` is a name, an
    attribute or a subscript; unsafe when it calls something (the call then runs twice).

    ## References
    - PyTorch docs: `torch.utils.data.DataLoader` (`persistent_workers`).
    - DDP404 (the value is 0 as written or configured), DDP601 (the same in YAML).
    """

    code = "DDP406"
    name = "persistent-workers-fixed-true"
    summary = "persistent_workers=True while num_workers is a setting that may be 0"
    severity = Severity.WARNING
    default_enabled = False
    fix_applicability = Applicability.SAFE
    needles = ("persistent_workers",)
    required = ("DataLoader",)
    narrowed_by = staticmethod(persistent_workers_true)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        for call in ctx.index.nodes(cst.Call):
            if not is_data_loader(ctx.names, call):
                continue
            spread = spread_keywords(call, ctx.rank_predicates.assigned_value)
            persistent_arg = keyword_argument(call, "persistent_workers")
            persistent = (
                persistent_arg.value if persistent_arg else spread.get("persistent_workers")
            )
            if persistent is None or constant_value(ctx.index, persistent) is not True:
                continue
            workers_arg = argument(call, "num_workers", DATALOADER_POSITIONS["num_workers"])
            workers = workers_arg.value if workers_arg else spread.get("num_workers")
            if workers is None or not self._may_be_zero(ctx, call, workers):
                continue
            text = ctx.node_text(workers)
            condition = f"{text} > 0"
            plain = isinstance(workers, (cst.Name, cst.Attribute, cst.Subscript)) and not any(
                isinstance(node, cst.Call) for node in ctx.index.walk_within(workers)
            )
            fix = Fix(
                Applicability.SAFE if plain else Applicability.UNSAFE,
                (replace_node(ctx, persistent, condition),),
                f"Set `persistent_workers={condition}`",
            )
            message = (
                f"`persistent_workers=True` while `num_workers={text}` is a setting nothing "
                "keeps above 0: set to 0 (as when debugging a hang), DataLoader raises "
                "ValueError (persistent_workers option needs num_workers > 0) on every rank"
            )
            summary = f"persistent_workers=True; num_workers={text} may be 0"
            yield ctx.finding(self, persistent, message, fix, summary=summary)

    @staticmethod
    def _may_be_zero(ctx: CodeContext, call: cst.Call, workers: cst.BaseExpression) -> bool:
        """Whether ``workers`` is a setting that can be 0 and that DDP404 leaves alone."""
        if constant_value(ctx.index, workers) is not UNKNOWN or _at_least_one(ctx, workers):
            return False
        if ctx.decided_values.value(workers) is not UNKNOWN:
            return False  # a literal wherever it runs (``config["num_workers"]``); 0: DDP404
        default = fallback_default(ctx.index, workers)
        if default is not None and default.value == 0 and not isinstance(default.value, bool):
            return False  # DDP404: zero by default
        text = ctx.node_text(workers)
        found = ctx.config_reads.value_at(text, ctx.range_of(workers)[0])
        if found is not None and found.value == 0 and not isinstance(found.value, bool):
            return False  # DDP404: zero as configured
        return not any(
            isinstance(ancestor, (cst.If, cst.IfExp)) and _reads(ctx, ancestor.test, text)
            for ancestor in ctx.index.ancestors(call)
        )


def _reads(ctx: CodeContext, test: cst.BaseExpression, spelled: str) -> bool:
    """Whether ``test`` holds the expression ``spelled`` (``args.workers`` in
    ``args.workers > 0``; not in ``args.workers_eval > 0``)."""
    parts = [test, *ctx.index.walk_within(test)]
    return any(ctx.node_text(part) == spelled for part in parts)


def _at_least_one(ctx: CodeContext, workers: cst.BaseExpression) -> bool:
    """A positive constant, a call of ``_AT_LEAST_ONE``, ``max`` of anything with one
    such argument, ``min`` of such arguments only (``min(8, os.cpu_count())``)."""
    if not isinstance(workers, cst.Call):
        value = constant_value(ctx.index, workers)
        return isinstance(value, int) and not isinstance(value, bool) and value >= 1
    name = ctx.names.qualified_name(workers.func) or dotted_name(workers.func)
    if name in _AT_LEAST_ONE:
        return True
    arguments = [a.value for a in workers.args]
    if name == "max":
        return any(_at_least_one(ctx, a) for a in arguments)
    if name == "min":
        return bool(arguments) and all(_at_least_one(ctx, a) for a in arguments)
    return False
