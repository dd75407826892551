"""DDP302: ``monitored_barrier`` on an NCCL group."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ddplint.code.collectives.catalogue import torch_distributed_call
from ddplint.code.context import CodeContext
from ddplint.code.ranks.process_groups import ProcessGroups
from ddplint.code.syntax.call_args import argument
from ddplint.finding import Finding, Severity
from ddplint.rule import CodeRule


class MonitoredBarrierOnNccl(CodeRule):
    """
    ## What it does
    Flags `torch.distributed.monitored_barrier(...)` on a group that is NCCL: the
    default group when this module calls `init_process_group("nccl")` (or
    `backend=Backend.NCCL`), or a group bound to `new_group(backend="nccl")` in the same
    scope. Backends that are computed (`"nccl" if cuda else "gloo"`) or set in another
    module are not guessed.

    ## Why is this bad?
    `monitored_barrier` is implemented for gloo only. On an NCCL group it raises
    `ValueError: monitored_barrier is only implemented for GLOO backend` on every rank,
    usually in the very code path meant to diagnose a hang.

    ## Example
    ```python
    dist.init_process_group("nccl")
    dist.monitored_barrier(timeout=timedelta(minutes=2))
    ```

    ## Use instead
    ```python
    dist.init_process_group("nccl")
    monitor = dist.new_group(backend="gloo")
    dist.monitored_barrier(group=monitor, timeout=timedelta(minutes=2))
    ```

    ## Fix safety
    No automatic fix: a gloo side group has to be created on every rank, in order.

    ## References
    - PyTorch docs: `torch.distributed.monitored_barrier` ("only supported with the GLOO
      backend").
    """

    code = "DDP302"
    name = "monitored-barrier-nccl"
    summary = "monitored_barrier on an NCCL process group"
    severity = Severity.ERROR
    needles = ("monitored_barrier",)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        groups = ProcessGroups(ctx.index, ctx.names)
        for call in ctx.index.nodes(cst.Call):
            if torch_distributed_call(ctx.names, call) != "monitored_barrier":
                continue
            group = argument(call, "group", 0)
            if groups.group_backend(call, group) != "nccl":
                continue
            if groups.is_default_group(group) or group is None:
                where = ctx.range_of(groups.init_calls[0].call)[0]
                which = f"the default group is NCCL (`init_process_group` at line {where})"
            else:
                which = f"`{ctx.node_text(group.value)}` is an NCCL group"
            message = (
                f"`monitored_barrier` is implemented for gloo only and {which}: every rank "
                'raises ValueError here; monitor on a `new_group(backend="gloo")` instead'
            )
            summary = "`monitored_barrier` on an NCCL group (it supports gloo only)"
            yield ctx.finding(self, call, message, summary=summary)
