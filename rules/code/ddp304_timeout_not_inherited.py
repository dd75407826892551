"""DDP304: a group or monitored barrier that does not get ``init_process_group``'s timeout."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.api import GROUP_CREATORS
from ddplint.analysis.names import call_argument, has_star_arguments, is_none
from ddplint.analysis.process_groups import InitCall, ProcessGroups
from ddplint.analysis.timeouts import timeout_argument
from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import ast_node_text
from ddplint.finding import Finding, Severity
from ddplint.rule import CodeRule

_SHOWN = 4
_NOT_INHERITING = GROUP_CREATORS | {"monitored_barrier"}


class TimeoutNotInherited(CodeRule):
    """
    ## What it does
    Flags the `timeout=` of `init_process_group` when the same module (the same
    function, if it has its own `init_process_group`) calls `new_group(...)`,
    `new_subgroups(...)`, `new_subgroups_by_enumeration(...)` or `monitored_barrier(...)`
    without a `timeout` of their own. One finding per `init_process_group`, listing the
    calls; a call in a function nothing in the project references (a wrapper nothing
    calls) is left out.

    This rule is built on the analysis core (`analysis/process_groups`, on Python's
    `ast`).

    ## Why is this bad?
    These calls do not inherit the default group's timeout (reproduced on torch 2.13):
    a new group uses the backend default (10 minutes for NCCL, 30 otherwise), and
    `monitored_barrier` without `timeout=` waits gloo's default of 30 minutes whatever
    its group's timeout. A short timeout set for debugging leaves every collective on a
    subgroup on the long default, so a hang there sits for half an hour; a long timeout
    set for slow checkpoints does not protect the subgroup, which times out early. This
    is information, not a crash.

    ## Example
    ```python
    dist.init_process_group("nccl", timeout=timedelta(minutes=2))
    tp_group = dist.new_group(ranks=[0, 1])
    ```

    ## Use instead
    ```python
    timeout = timedelta(minutes=2)
    dist.init_process_group("nccl", timeout=timeout)
    tp_group = dist.new_group(ranks=[0, 1], timeout=timeout)
    ```

    ## Fix safety
    No automatic fix: which timeout the group should have is the author's choice.

    ## References
    - PyTorch docs: `torch.distributed.new_group` (`timeout`), `monitored_barrier`.
    """

    code = "DDP304"
    name = "timeout-not-inherited"
    summary = "new_group / monitored_barrier do not inherit init_process_group's timeout"
    severity = Severity.INFO
    default_enabled = False
    needs_peers = True
    needles = ("new_group", "new_subgroups", "monitored_barrier")
    #: It reports at the module's own ``init_process_group(timeout=...)`` call.
    required = ("init_process_group",)

    reads_libcst = False

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        groups = ProcessGroups(ctx.analysis)
        if not groups.inits:
            return
        missed: dict[int, list[str]] = {}
        for call in ctx.analysis.nodes.calls_in_order():
            found = timeout_argument(ctx.analysis.names, call)
            if found is None or found[0].api not in _NOT_INHERITING:
                continue
            parameter, timeout = found
            if timeout is not None or has_star_arguments(call) or ctx.never_runs(call.lineno):
                continue  # a call nothing in the project runs (a wrapper nothing calls)
            init = _governing_init(ctx, groups, call)
            if init is None:
                continue
            if parameter.api == "monitored_barrier":
                backend = groups.group_backend(call, call_argument(call, 0, "group"))
                if backend is not None and backend.name == "nccl":
                    continue  # DDP302: it raises before any timeout matters
            missed.setdefault(id(init.call), []).append(f"`{parameter.api}` at line {call.lineno}")
        for init in groups.inits:
            calls = missed.get(id(init.call))
            if not calls or init.timeout is None or init.timeout_at is None:
                continue
            shown = ", ".join(calls[:_SHOWN])
            more = f" and {len(calls) - _SHOWN} more" if len(calls) > _SHOWN else ""
            message = (
                f"`timeout={ast_node_text(ctx, init.timeout)}` applies to the default group "
                f"only: {shown}{more} pass no `timeout=` and wait the backend default instead "
                "(new groups: 10 min for NCCL, 30 min otherwise; `monitored_barrier`: 30 min); "
                "pass the timeout there too"
            )
            summary = f"`init_process_group(timeout=...)` does not reach {len(calls)} later call(s)"
            yield ctx.ast_finding(self, init.timeout_at, message, summary=summary)


def _governing_init(ctx: CodeContext, groups: ProcessGroups, call: ast.Call) -> InitCall | None:
    """The ``init_process_group`` call whose timeout the author likely meant for ``call``:
    the one in the same function, else the module's; None when that is ambiguous or
    sets no timeout."""
    constants = ctx.analysis.constants
    function = constants.owner_of(groups.scope_of(call))
    local = [i for i in groups.inits if constants.owner_of(i.scope) is function]
    candidates = local or groups.inits
    if any(i.timeout is None or is_none(i.timeout) for i in candidates):
        return None
    return candidates[0]
