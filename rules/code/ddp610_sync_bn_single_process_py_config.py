"""DDP610: an OpenMMLab Python config that builds SyncBN for a one-process mmcv 1.x run."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.constants import ScopedConstants
from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import ast_node_text
from ddplint.config.openmmlab import (
    SYNC_NORM_TYPES,
    failing_norm,
    looks_like_mmcv1,
    message,
    single_process,
)
from ddplint.finding import Finding, Severity
from ddplint.rule import CodeRule

_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _top_level_values(module: ast.Module) -> dict[str, ast.expr]:
    """``name = value`` statements of the module body (a config file is only these);
    the last binding of a name wins, as when the config runs."""
    values: dict[str, ast.expr] = {}
    for statement in module.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
            if isinstance(target, ast.Name):
                values[target.id] = statement.value
    return values


class _ConfigValues:
    """Constant values of a config module's expressions (names bound once followed)."""

    def __init__(self, module: ast.Module, constants: ScopedConstants) -> None:
        self._module = module
        self._constants = constants

    def string(self, expression: ast.expr | None) -> str | None:
        if expression is None:
            return None
        value = self._constants.value(expression, self._module)
        return value if isinstance(value, str) else None

    def integer(self, expression: ast.expr) -> int | None:
        value = self._constants.value(expression, self._module)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def gpu_count(self, expression: ast.expr | None) -> int | None:
        """``[0]`` / ``(0,)`` -> 1; ``range(n)`` / ``range(a, b)`` with constant bounds ->
        their length; else the list length or None."""
        if isinstance(expression, (ast.List, ast.Tuple)):
            return len(expression.elts)
        if (
            isinstance(expression, ast.Call)
            and _calls_builtin(expression, "range")
            and 1 <= len(expression.args) <= 2
            and not expression.keywords
        ):
            bounds = [self.integer(argument) for argument in expression.args]
            numbers = [bound for bound in bounds if bound is not None]
            if len(numbers) != len(bounds):
                return None
            return numbers[-1] - (numbers[0] if len(numbers) == 2 else 0)
        return None

    def norm_type(self, node: ast.AST) -> tuple[ast.expr, str] | None:
        """``dict(type='SyncBN', ...)`` or ``{'type': 'SyncBN'}``: the type's value node
        and the norm it names (a name bound once to the string counts)."""
        if isinstance(node, ast.Call) and _calls_builtin(node, "dict"):
            for keyword in node.keywords:
                if keyword.arg == "type":
                    name = self.string(keyword.value)
                    if name is not None and name in SYNC_NORM_TYPES:
                        return keyword.value, name
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if key is not None and self.string(key) == "type":
                    name = self.string(value)
                    if name is not None and name in SYNC_NORM_TYPES:
                        return value, name
        return None


def _calls_builtin(call: ast.Call, name: str) -> bool:
    return isinstance(call.func, ast.Name) and call.func.id == name


def _config_nodes(module: ast.Module) -> Iterator[ast.AST]:
    """The nodes of the module's code outside functions and lambdas."""
    pending: list[ast.AST] = list(module.body)
    while pending:
        node = pending.pop()
        if isinstance(node, _NESTED):
            continue
        yield node
        pending.extend(ast.iter_child_nodes(node))


class SyncBatchNormSingleProcessPyConfig(CodeRule):
    """
    ## What it does
    Flags `dict(type='SyncBN')` / `dict(type='MMSyncBN')` (a `norm_cfg`) in an mmcv 1.x
    Python config (a module of `name = value` settings with `model` and runner settings
    such as `optimizer_config`, `lr_config`, `workflow`, `gpu_ids`; no mmengine names
    such as `train_dataloader` or `optim_wrapper`) that runs one process:
    `launcher = 'none'`, or one `gpu_ids` entry (`[0]`, `range(1)`). `SyncBN` is flagged
    only when the project's torch floor is below 2.0 or unknown; `MMSyncBN` on any
    torch. A name bound once in the config counts for its value
    (`NORM = "SyncBN"; norm_cfg = dict(type=NORM)`, `gpu_ids = range(NUM_GPUS)`).
    A config whose runner settings all live in `_base_` files is not known and
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
    This rule is built on the analysis core (constant values on Python's `ast`).

    ## References
    - pytorch/pytorch#63662 and PR 89706 (SyncBatchNorm falls back to BatchNorm, torch 2.0).
    - mmengine `Runner.wrap_model` / `revert_sync_batchnorm`.
    - open-mmlab/mmdetection3d#255 ("How to disable SyncBN for single GPU training").
    """

    code = "DDP610"
    reads_libcst = False
    name = "sync-bn-single-process-py-config"
    summary = "SyncBN in an mmcv 1.x Python config that runs one process"
    severity = Severity.ERROR
    needles = ("SyncBN",)
    also_needles = ("launcher", "gpu_ids")

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        module = ctx.ast_module
        if module is None:
            return
        top_level = _top_level_values(module)
        if not looks_like_mmcv1(top_level):
            return
        values = _ConfigValues(module, ctx.analysis.constants)
        why_single = single_process(
            values.string(top_level.get("launcher")), values.gpu_count(top_level.get("gpu_ids"))
        )
        if why_single is None:
            return
        found = [values.norm_type(node) for node in _config_nodes(module)]
        for value, norm in sorted(
            (f for f in found if f is not None), key=lambda f: (f[0].lineno, f[0].col_offset)
        ):
            under = failing_norm(norm, ctx.options.torch_version)
            if under is None:
                continue
            text = f"`type={ast_node_text(ctx, value)}` " + message(norm, why_single, under)
            summary = f"{norm} in a one-process mmcv 1.x run: no process group"
            yield ctx.ast_finding(self, value, text, summary=summary)
