"""DDP303: a process-group timeout given as a number instead of a ``timedelta``."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ddplint.code.collectives.timeouts import TimeoutParameter, timeout_argument
from ddplint.code.context import CodeContext
from ddplint.code.edits.edits import replace_node
from ddplint.code.edits.imports import import_edit
from ddplint.code.syntax.constants import constant_value
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

    ## References
    - PyTorch docs: `torch.distributed.init_process_group` (`timeout (timedelta)`).
    """

    code = "DDP303"
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
        for call in ctx.index.nodes(cst.Call):
            found = timeout_argument(ctx.names, call)
            if found is None:
                continue
            parameter, arg = found
            if arg is None:
                continue
            kind = self._number_kind(ctx, arg.value)
            if kind is None or (kind is float and parameter.accepts_float):
                continue
            summary = f"`{parameter.api}(timeout=...)` is a number, not a `timedelta`"
            yield ctx.finding(
                self, arg, _message(ctx, parameter, arg), _fix(ctx, arg), summary=summary
            )

    @staticmethod
    def _number_kind(ctx: CodeContext, value: cst.BaseExpression) -> type | None:
        if (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Name)
            and value.func.value in _CONVERTERS
            and value.func.value not in ctx.names.bindings
        ):
            return _CONVERTERS[value.func.value]
        constant = constant_value(ctx.index, value)
        if isinstance(constant, bool):
            return None
        if isinstance(constant, (int, float)):
            return type(constant)
        return None


def _message(ctx: CodeContext, parameter: TimeoutParameter, arg: cst.Arg) -> str:
    text = ctx.node_text(arg.value)
    return (
        f"`{parameter.api}(timeout={text})` needs a `datetime.timedelta`, not a number: "
        "it raises TypeError when this line runs; use `timedelta(seconds=...)`"
    )


def _fix(ctx: CodeContext, arg: cst.Arg) -> Fix | None:
    found = import_edit(ctx, "datetime", "timedelta")
    if found is None:
        return None
    timedelta, import_line = found
    wrapped = replace_node(ctx, arg.value, f"{timedelta}(seconds={ctx.node_text(arg.value)})")
    edits = (wrapped,) if import_line is None else (import_line, wrapped)
    return Fix(Applicability.SAFE, edits, "Wrap the number in `timedelta(seconds=...)`")
