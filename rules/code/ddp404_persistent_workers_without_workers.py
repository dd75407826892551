"""DDP404: ``DataLoader(persistent_workers=True)`` with no worker processes."""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst

from ddplint.code.context import CodeContext
from ddplint.code.edits.edits import replace_node
from ddplint.code.steps.data_loaders import DATALOADER_POSITIONS, is_data_loader
from ddplint.code.syntax.call_args import argument, has_star_arguments, keyword_argument
from ddplint.code.syntax.constants import constant_value
from ddplint.finding import Applicability, Finding, Fix, Severity
from ddplint.rule import CodeRule

_PERSISTENT_TRUE = re.compile(rb"persistent_workers\s*=\s*(?:True\b|[A-Z_][A-Z0-9_]*\b)")


class PersistentWorkersWithoutWorkers(CodeRule):
    """
    ## What it does
    Flags `DataLoader(..., persistent_workers=True)` (or `=` a constant bound to `True`)
    whose `num_workers` is `0`: written as `0`, bound once to `0` in the same scope, or
    left out (the default is `0`). A call that passes `**kwargs` and no `num_workers` is
    not flagged: the workers may come from there.

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
    The fix sets `persistent_workers=False`. It is safe: with no worker processes there
    is nothing to keep alive, and the call no longer raises.

    ## References
    - PyTorch docs: `torch.utils.data.DataLoader` (`persistent_workers`).
    - docs/hazards.md#ddp601: the same error in YAML configs.
    """

    code = "DDP404"
    name = "dataloader-persistent-no-workers"
    summary = "DataLoader(persistent_workers=True) with num_workers=0"
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE
    needles = ("persistent_workers",)
    required = ("DataLoader",)

    @classmethod
    def prefilter(cls, raw: bytes) -> bool:
        """``persistent_workers=True`` or ``=`` a constant's name (``KEEP_WORKERS``)."""
        return super().prefilter(raw) and _PERSISTENT_TRUE.search(raw) is not None

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        for call in ctx.index.nodes(cst.Call):
            if not is_data_loader(ctx.names, call):
                continue
            persistent = keyword_argument(call, "persistent_workers")
            if persistent is None or constant_value(ctx.index, persistent.value) is not True:
                continue
            workers = argument(call, "num_workers", DATALOADER_POSITIONS["num_workers"])
            if workers is None:
                if has_star_arguments(call):
                    continue
                how = "no `num_workers` (the default is 0)"
            elif constant_value(ctx.index, workers.value) == 0:
                how = f"`num_workers={ctx.node_text(workers.value)}`"
            else:
                continue
            message = (
                f"`persistent_workers=True` with {how}: DataLoader raises ValueError "
                "(persistent_workers option needs num_workers > 0) when it is built"
            )
            fix = Fix(
                Applicability.SAFE,
                (replace_node(ctx, persistent.value, "False"),),
                "Set `persistent_workers=False`",
            )
            summary = f"`persistent_workers=True` with {how}: DataLoader raises"
            yield ctx.finding(self, persistent, message, fix, summary=summary)
