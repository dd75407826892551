"""DDP404: ``DataLoader(persistent_workers=True)`` with no worker processes."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.api import DATA_LOADERS, DATALOADER_POSITIONS
from ddplint.analysis.constants import is_zero
from ddplint.analysis.names import has_star_arguments, keyword_argument, passed_argument
from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import ast_node_text, replace_ast_node
from ddplint.finding import Applicability, Finding, Fix, Severity
from ddplint.rule import CodeRule
from ddplint.rules.prefilters import persistent_workers_true


class PersistentWorkersWithoutWorkers(CodeRule):
    """
    ## What it does
    Flags `DataLoader(..., persistent_workers=True)` (or `=` a constant bound to `True`)
    whose `num_workers` is `0`: written as `0`, bound once to `0` in the same scope, or
    left out (the default is `0`). Also when `num_workers` is a value whose declared
    default is `0`: a parameter of the enclosing function (`def build(num_workers=0)`),
    an `argparse` option of the module (`add_argument("--num-workers", default=0)` read
    as `args.num_workers`), a config class field (`num_workers: int = 0`) or an
    attribute set in `__init__` from such a parameter; or a key that the YAML config the
    program is bound to sets to `0` (`cfg.data.num_workers` in a
    `@hydra.main(config_path=..., config_name=...)` function, or on a name bound to
    `OmegaConf.load("path")`; the finding cites the file and line). A call that passes
    `**kwargs` and no `num_workers` is not flagged: the workers may come from there.

    ## Why is this bad?
    `DataLoader` raises `ValueError: persistent_workers option needs num_workers > 0`
    when it is built. Setting `num_workers=0` to rule out worker problems while
    debugging a hang is common, and this turns the debugging run into a crash.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=32, num_workers=0, persistent_workers=True)
    ```

    ## Use instead
    ```python
    loader = DataLoader(
        dataset, batch_size=32, num_workers=num_workers, persistent_workers=num_workers > 0
    )
    ```

    ## Fix safety
    The fix sets `persistent_workers=False` when `num_workers` is 0, and
    `persistent_workers=<num_workers> > 0` when it only defaults to 0. Both are safe:
    with no worker processes there is nothing to keep alive, and the call no longer
    raises; with workers, nothing changes.

    This rule is built on the analysis core (constant values and declared defaults on
    Python's `ast`).

    ## References
    - PyTorch docs: `torch.utils.data.DataLoader` (`persistent_workers`).
    - docs/hazards.md#ddp601: the same error in YAML configs.
    """

    code = "DDP404"
    reads_libcst = False
    name = "dataloader-persistent-no-workers"
    summary = "DataLoader(persistent_workers=True) with num_workers=0"
    severity = Severity.ERROR
    #: Preview since session 42: its one blind finding (set 13) was false (docs/precision.md).
    default_enabled = False
    fix_applicability = Applicability.SAFE
    needles = ("persistent_workers",)
    required = ("DataLoader",)
    narrowed_by = staticmethod(persistent_workers_true)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        analysis = ctx.analysis
        for scope, calls in analysis.nodes.calls_by_scope.items():
            for call in calls:
                if analysis.names.resolve(call.func) not in DATA_LOADERS:
                    continue
                persistent = keyword_argument(call, "persistent_workers")
                if (
                    persistent is None
                    or analysis.constants.value(persistent.value, scope) is not True
                ):
                    continue
                yield from self._without_workers(ctx, call, persistent, scope)

    def _without_workers(
        self, ctx: CodeContext, call: ast.Call, persistent: ast.keyword, scope: ast.AST
    ) -> Iterator[Finding]:
        analysis = ctx.analysis
        workers = passed_argument(call, "num_workers", DATALOADER_POSITIONS["num_workers"])
        if workers is None:
            if has_star_arguments(call):
                return
            how = "no `num_workers` (the default is 0)"
        elif is_zero(analysis.constants.value(workers, scope)) or is_zero(
            analysis.literal_values.value(workers)
        ):
            how = f"`num_workers={ast_node_text(ctx, workers)}`"
        else:
            yield from self._zero_by_default(ctx, persistent, workers, scope)
            return
        message = (
            f"`persistent_workers=True` with {how}: DataLoader raises ValueError "
            "(persistent_workers option needs num_workers > 0) when it is built"
        )
        fix = Fix(
            Applicability.SAFE,
            (replace_ast_node(ctx, persistent.value, "False"),),
            "Set `persistent_workers=False`",
        )
        summary = f"`persistent_workers=True` with {how}: DataLoader raises"
        yield ctx.ast_finding(self, persistent, message, summary=summary, fix=fix)

    def _zero_by_default(
        self, ctx: CodeContext, persistent: ast.keyword, workers: ast.expr, scope: ast.AST
    ) -> Iterator[Finding]:
        """``num_workers`` is a value that falls back to 0: a parameter, option or config
        field whose declared default is 0, or a key the program's YAML config sets to 0."""
        workers_text = ast_node_text(ctx, workers)
        default = ctx.analysis.fallback_defaults.of(workers, scope)
        if default is not None:
            if not is_zero(default.value):
                return
            why = (
                f"and {default.where} 0: a run left at the default (or set to 0 to debug a "
                "hang) makes DataLoader raise"
            )
            summary = "persistent_workers=True; num_workers may be 0"
        else:
            found = ctx.config_reads.value_at(workers_text, workers.lineno)
            if found is None or not is_zero(found.value):
                return
            why = (
                f"which the config sets to 0 (`{found.key}` at `{found.where}`): as "
                "configured, DataLoader raises"
            )
            summary = f"persistent_workers=True; `{found.key}` is 0 at `{found.where}`"
        message = (
            f"`persistent_workers=True` with `num_workers={workers_text}`, {why} ValueError "
            "(persistent_workers option needs num_workers > 0) when it is built"
        )
        condition = f"{workers_text} > 0"
        fix = Fix(
            Applicability.SAFE,
            (replace_ast_node(ctx, persistent.value, condition),),
            f"Set `persistent_workers={condition}`",
        )
        yield ctx.ast_finding(self, persistent, message, summary=summary, fix=fix)
