"""DDP302: ``monitored_barrier`` on an NCCL group."""

from __future__ import annotations

from collections.abc import Iterator

from ddplint.analysis.names import call_argument
from ddplint.analysis.process_groups import Backend, ProcessGroups
from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import ast_node_text
from ddplint.finding import Finding, Severity
from ddplint.rule import CodeRule


class MonitoredBarrierOnNccl(CodeRule):
    """
    ## What it does
    Flags `torch.distributed.monitored_barrier(...)` on a group that is NCCL: the
    default group when this module calls `init_process_group("nccl")` (or
    `backend=Backend.NCCL`, or a name bound once to `"nccl"`), or a group bound to
    `new_group(backend="nccl")` in the same scope. Also when the backend is read from a
    parameter, `argparse` option or config field whose declared default is `"nccl"`: a
    run left at the default raises (the message cites the default). Backends that are
    computed (`"nccl" if cuda else "gloo"`) or set in another module are not guessed.

    This rule is built on the analysis core (`analysis/process_groups`: a group
    followed from where it is made to the call that uses it, on Python's `ast`).

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

    reads_libcst = False

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        groups = ProcessGroups(ctx.analysis)
        for calls in ctx.analysis.nodes.calls_by_scope.values():
            for call in calls:
                if groups.made_by(call) != "monitored_barrier":
                    continue
                group = call_argument(call, 0, "group")
                backend = groups.group_backend(call, group)
                if backend is None or backend.name != "nccl":
                    continue
                made = groups.group_made(call, group) if group is not None else None
                if group is None or made is None:
                    line = groups.inits[0].call.lineno
                    which = f"the default group is NCCL (`init_process_group` at line {line}"
                else:
                    which = f"`{ast_node_text(ctx, group)}` is an NCCL group (made at line "
                    which += str(made[0].lineno)
                message = (
                    f"`monitored_barrier` is implemented for gloo only and {which}"
                    f"{_by_default(backend)}): every rank raises ValueError here; monitor "
                    'on a `new_group(backend="gloo")` instead'
                )
                summary = "`monitored_barrier` on an NCCL group (it supports gloo only)"
                yield ctx.ast_finding(self, call, message, summary=summary)


def _by_default(backend: Backend) -> str:
    return f", where the run keeps the default: {backend.source}" if backend.source else ""
