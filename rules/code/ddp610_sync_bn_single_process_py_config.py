"""DDP610: an OpenMMLab Python config that builds SyncBN for a one-process mmcv 1.x run."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ddplint.code.context import CodeContext
from ddplint.code.syntax.names import dotted_name
from ddplint.config.openmmlab import (
    SYNC_NORM_TYPES,
    failing_norm,
    looks_like_mmcv1,
    message,
    single_process,
)
from ddplint.finding import Finding, Severity
from ddplint.rule import CodeRule


def _top_level_values(module: cst.Module) -> dict[str, cst.BaseExpression]:
    """``name = value`` statements of the module body (a config file is only these)."""
    values: dict[str, cst.BaseExpression] = {}
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                target = small.targets[0].target
                if isinstance(target, cst.Name):
                    values[target.value] = small.value
    return values


def _string(expr: cst.BaseExpression | None) -> str | None:
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _gpu_count(expr: cst.BaseExpression | None) -> int | None:
    """``[0]`` / ``(0,)`` -> 1; ``range(1)`` / ``range(0, 1)`` -> 1; else the list length
    or None."""
    if isinstance(expr, (cst.List, cst.Tuple)):
        return len(expr.elements)
    if isinstance(expr, cst.Call) and dotted_name(expr.func) == "range":
        bounds = [a.value for a in expr.args]
        if all(isinstance(b, cst.Integer) for b in bounds) and 1 <= len(bounds) <= 2:
            numbers = [int(b.value) for b in bounds if isinstance(b, cst.Integer)]
            return numbers[-1] - (numbers[0] if len(numbers) == 2 else 0)
    return None


def _norm_type(node: cst.CSTNode) -> tuple[cst.BaseExpression, str] | None:
    """``dict(type='SyncBN', ...)`` or ``{'type': 'SyncBN'}``: the type's value node."""
    if isinstance(node, cst.Call) and dotted_name(node.func) == "dict":
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "type":
                name = _string(arg.value)
                if name in SYNC_NORM_TYPES:
                    return arg.value, name
    if isinstance(node, cst.Dict):
        for element in node.elements:
            if isinstance(element, cst.DictElement) and _string(element.key) == "type":
                name = _string(element.value)
                if name in SYNC_NORM_TYPES:
                    return element.value, name
    return None


class SyncBatchNormSingleProcessPyConfig(CodeRule):
    """
    ## What it does
    Flags `dict(type='SyncBN')` / `dict(type='MMSyncBN')` (a `norm_cfg`) in an mmcv 1.x
    Python config (a module of `name = value` settings with `model` and runner settings
    such as `optimizer_config`, `lr_config`, `workflow`, `gpu_ids`; no mmengine names
    such as `train_dataloader` or `optim_wrapper`) that runs one process:
    `launcher = 'none'`, or one `gpu_ids` entry (`[0]`, `range(1)`). `SyncBN` is flagged
    only when the project's torch floor is below 2.0 or unknown; `MMSyncBN` on any
    torch. A config whose runner settings all live in `_base_` files is not known and
    not flagged. YAML configs are DDP609.

    ## Why is this bad?
    With an mmcv 1.x runner (`MMDataParallel`), nothing initialises a process group for
    one process, and a SyncBatchNorm in training mode asks for it: the first forward
    fails with `RuntimeError: Default process group has not been initialized`. torch
    2.0+ runs `nn.SyncBatchNorm` as BatchNorm when no group exists, and mmengine's runner
    reverts SyncBN to BatchNorm itself, so newer stacks train.

    ## Example
    ```python
    norm_cfg = dict(type="SyncBN", requires_grad=True)
    model = dict(type="EncoderDecoder", backbone=dict(norm_cfg=norm_cfg))
    optimizer_config = dict()
    gpu_ids = range(1)
    ```

    ## Use instead
    ```python
    norm_cfg = dict(type="BN", requires_grad=True)
    model = dict(type="EncoderDecoder", backbone=dict(norm_cfg=norm_cfg))
    optimizer_config = dict()
    gpu_ids = range(1)
    ```
    or launch with `--launcher pytorch` (`torchrun`), even on one GPU.

    ## Fix safety
    No automatic fix: whether the run should be distributed is the author's call.

    ## References
    - pytorch/pytorch#63662 and PR 89706 (SyncBatchNorm falls back to BatchNorm, torch 2.0).
    - mmengine `Runner.wrap_model` / `revert_sync_batchnorm`.
    - open-mmlab/mmdetection3d#255 ("How to disable SyncBN for single GPU training").
    """

    code = "DDP610"
    name = "sync-bn-single-process-py-config"
    summary = "SyncBN in an mmcv 1.x Python config that runs one process"
    severity = Severity.ERROR
    needles = ("SyncBN",)
    also_needles = ("launcher", "gpu_ids")

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        values = _top_level_values(ctx.module)
        if not looks_like_mmcv1(values):
            return
        why_single = single_process(
            _string(values.get("launcher")), _gpu_count(values.get("gpu_ids"))
        )
        if why_single is None:
            return
        for node in [*ctx.index.nodes(cst.Call), *ctx.index.nodes(cst.Dict)]:
            if ctx.index.enclosing_function(node) is not None:
                continue
            found = _norm_type(node)
            if found is None:
                continue
            value, norm = found
            under = failing_norm(norm, ctx.options.torch_version)
            if under is None:
                continue
            text = f"`type={ctx.node_text(value)}` " + message(norm, why_single, under)
            summary = f"{norm} in a one-process mmcv 1.x run: no process group"
            yield ctx.finding(self, value, text, summary=summary)
