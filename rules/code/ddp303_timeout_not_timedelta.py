"""DDP303: a process-group timeout given as a number instead of a ``timedelta``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.timeouts import TimeoutParameter, timeout_argument
from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import ast_import_edit, ast_node_text, replace_ast_node
from ddplint.finding import Applicability, Finding, Fix, Severity
from ddplint.rule import CodeRule
from ddplint.rules.prefilters import timeout_spelled

_CONVERTERS = {"int": int, "float": float}


class TimeoutNotTimedelta(CodeRule):
    """
    ## What it does
    Flags a number passed as `timeout` to `init_process_group`, `new_group`,
    `new_subgroups`, `barrier`, `monitored_barrier`, Lightning's `DDPStrategy` /
    `FSDPStrategy` / `DeepSpeedStrategy` / `ModelParallelStrategy`, accelerate's
    `InitProcessGroupKwargs` or `deepspeed.init_distributed`: a literal (`1800`,
    `30 * 60`), a name bound once to one, or `int(...)` / `float(...)`.

    A float is not flagged where torch accepts it as seconds (`barrier`) or converts it
    with a warning (`monitored_barrier`). An argument whose type cannot be seen
    (`timeout=args.timeout`) is not flagged.

    ## Why is this bad?
    These APIs want a `datetime.timedelta`. A number fails only when the line runs:
    `TypeError: Expected timeout argument to be of type datetime.timedelta` (checked on
    torch 2.13), often at start-up of a many-node job, or later in a rarely taken path.

    ## Example
    ```python
    dist.init_process_group("nccl", timeout=1800)
    ```

    ## Use instead
    ```python
    from datetime import timedelta

    dist.init_process_group("nccl", timeout=timedelta(seconds=1800))
    ```

    ## Fix safety
    The fix wraps the number in `timedelta(seconds=...)` (seconds are the unit torch
    uses for its own defaults), reusing a `datetime` import or adding
    `from datetime import timedelta`. It is safe: the original call cannot run at all.

    This rule is built on the analysis core (constant values on Python's `ast`).

    ## References
    - PyTorch docs: `torch.distributed.init_process_group` (`timeout (timedelta)`).
    """

    code = "DDP303"
    reads_libcst = False
    name = "timeout-not-timedelta"
    summary = "process-group timeout given as a number, not a timedelta"
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE
    needles = (
        "init_process_group",
        "new_group",
        "new_subgroups",
        "barrier",
        "Strategy",
        "InitProcessGroupKwargs",
        "init_distributed",
    )
    narrowed_by = staticmethod(timeout_spelled)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        analysis = ctx.analysis
        for scope, calls in analysis.nodes.calls_by_scope.items():
            for call in calls:
                found = timeout_argument(analysis.names, call)
                if found is None:
                    continue
                parameter, value = found
                if value is None:
                    continue
                kind = self._number_kind(ctx, value, scope)
                if kind is None or (kind is float and parameter.accepts_float):
                    continue
                summary = f"`{parameter.api}(timeout=...)` is a number, not a `timedelta`"
                yield ctx.ast_finding(
                    self,
                    _argument_node(call, value),
                    _message(ctx, parameter, value),
                    summary=summary,
                    fix=_fix(ctx, value),
                )

    @staticmethod
    def _number_kind(ctx: CodeContext, value: ast.expr, scope: ast.AST) -> type | None:
        analysis = ctx.analysis
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id in _CONVERTERS
            and value.func.id not in analysis.names.imports
        ):
            return _CONVERTERS[value.func.id]
        constant = analysis.constants.value(value, scope)
        if isinstance(constant, bool):
            return None
        if isinstance(constant, (int, float)):
            return type(constant)
        return None


def _argument_node(call: ast.Call, value: ast.expr) -> ast.AST:
    """Where the finding sits: the whole ``timeout=...`` keyword, or the positional
    argument itself."""
    return next((k for k in call.keywords if k.value is value), value)


def _message(ctx: CodeContext, parameter: TimeoutParameter, value: ast.expr) -> str:
    text = ast_node_text(ctx, value)
    return (
        f"`{parameter.api}(timeout={text})` needs a `datetime.timedelta`, not a number: "
        "it raises TypeError when this line runs; use `timedelta(seconds=...)`"
    )


def _fix(ctx: CodeContext, value: ast.expr) -> Fix | None:
    found = ast_import_edit(ctx, "datetime", "timedelta")
    if found is None:
        return None
    timedelta, import_line = found
    wrapped = replace_ast_node(ctx, value, f"{timedelta}(seconds={ast_node_text(ctx, value)})")
    edits = (wrapped,) if import_line is None else (import_line, wrapped)
    return Fix(Applicability.SAFE, edits, "Wrap the number in `timedelta(seconds=...)`")
