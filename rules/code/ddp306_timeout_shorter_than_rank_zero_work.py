"""DDP306: a process-group timeout too short for work one rank does while the rest wait."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from ddplint.analysis.names import keyword_argument
from ddplint.analysis.rank_zero_work import RankZeroWork, rank_zero_work
from ddplint.analysis.run_order import entry_points, run_order
from ddplint.analysis.timeout_lengths import describe_seconds, number_or_default, timedelta_length
from ddplint.analysis.timeouts import timeout_argument
from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import ast_node_text
from ddplint.finding import Finding, Severity
from ddplint.rule import CodeRule

#: Below this (torch's default for gloo and Lightning's strategies), a timeout is short
#: enough that a dataset download or preprocessing pass can outlast it.
SHORT_TIMEOUT_SECONDS = 30 * 60
#: Group-wide timeouts (not one barrier's own).
_GROUP_TIMEOUT_APIS = frozenset(
    {
        "init_process_group",
        "InitProcessGroupKwargs",
        "init_distributed",
        "DDPStrategy",
        "FSDPStrategy",
        "DeepSpeedStrategy",
        "ModelParallelStrategy",
    }
)


class TimeoutShorterThanRankZeroWork(CodeRule):
    """
    ## What it does
    Flags a process-group timeout shorter than 30 minutes
    (`init_process_group(timeout=timedelta(seconds=60))`, accelerate's
    `InitProcessGroupKwargs(timeout=...)`, a Lightning strategy's `timeout=`,
    `deepspeed.init_distributed(timeout=...)`, transformers
    `TrainingArguments(ddp_timeout=...)` in seconds) in a module where one rank works while the
    others wait in a collective: the body of `torch_distributed_zero_first(rank)` or
    `main_process_first()` (accelerate, transformers `TrainingArguments`), or an
    `if rank == 0:` block followed by a barrier. The length is read from the
    `timedelta(...)` (also through a name, or from the declared default of an option,
    parameter or config field it is built from).

    This rule is built on the analysis core (the rank test by the divergence analysis,
    the waiting context manager by the collective its code reaches, values through
    constants and declared defaults, on Python's `ast`).

    ## Why is this bad?
    The waiting ranks sit in a barrier, and the barrier fails when the timeout expires:
    NCCL's watchdog aborts the job (`Watchdog caught collective operation timeout`),
    gloo raises. Downloading, tokenising or caching a dataset on the first rank, or
    saving a large checkpoint, takes minutes to hours — far longer on the first run than
    on the developer's warm cache — so a timeout chosen to make hangs fail fast kills
    the first real run.

    ## Example
    ```python
    dist.init_process_group("nccl", timeout=timedelta(seconds=60))
    with torch_distributed_zero_first(rank):
        dataset = load_dataset("c4", "en")
    ```

    ## Use instead
    ```python
    dist.init_process_group("nccl", timeout=timedelta(hours=2))
    with torch_distributed_zero_first(rank):
        dataset = load_dataset("c4", "en")
    ```
    or prepare the data in a separate step before the distributed job starts.

    ## Fix safety
    No automatic fix: how long the work takes is not known statically.

    ## References
    - PyTorch docs: `torch.distributed.init_process_group` (`timeout`, and the NCCL
      watchdog's use of it).
    - Hugging Face transformers docs: `TrainingArguments.main_process_first`, and the
      accelerate docs: `InitProcessGroupKwargs` (raising the timeout for long
      preprocessing).
    - huggingface/accelerate#314 (timeouts during long main-process preprocessing).
    """

    code = "DDP306"
    name = "timeout-shorter-than-rank-zero-work"
    summary = "Process-group timeout shorter than the work one rank does while others wait"
    severity = Severity.WARNING
    default_enabled = False
    needs_peers = True
    needles = ("timeout",)
    also_needles = ("timedelta", "ddp_timeout")

    reads_libcst = False

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        timeouts = {id(t.call): t for t in _short_group_timeouts(ctx)}
        if not timeouts:
            return
        works = {id(w.work): w for w in rank_zero_work(ctx.analysis)}
        if not works:
            return
        reported: set[int] = set()
        for root in entry_points(ctx.analysis):
            trace = run_order(ctx.analysis, root)
            for position, call in enumerate(trace):
                if id(call) not in timeouts or id(call) in reported:
                    continue
                work = next((works[id(c)] for c in trace[position + 1 :] if id(c) in works), None)
                if work is not None:
                    reported.add(id(call))
                    yield _finding(self, ctx, timeouts[id(call)], work)


@dataclass(frozen=True)
class _ShortTimeout:
    """A call that sets a group-wide timeout under 30 minutes: where the argument is
    passed, the length in seconds and what sets it (for messages)."""

    call: ast.Call
    at: ast.AST
    seconds: float
    setter: str


def _short_group_timeouts(ctx: CodeContext) -> Iterator[_ShortTimeout]:
    analysis = ctx.analysis
    for scope, calls in analysis.nodes.calls_by_scope.items():
        for call in calls:
            seconds_arg = _ddp_timeout_seconds(ctx, call, scope)
            if seconds_arg is not None:
                yield seconds_arg
                continue
            found = timeout_argument(analysis.names, call)
            if found is None or found[1] is None or found[0].api not in _GROUP_TIMEOUT_APIS:
                continue
            length = timedelta_length(analysis, found[1], scope)
            if length is not None and 0 < length.seconds < SHORT_TIMEOUT_SECONDS:
                source = (
                    f" ({length.default.where} {length.default.value})" if length.default else ""
                )
                setter = f"`{found[0].api}` timeout{source}"
                keyword = keyword_argument(call, "timeout")
                at = keyword if keyword is not None else found[1]
                yield _ShortTimeout(call, at, length.seconds, setter)


def _ddp_timeout_seconds(ctx: CodeContext, call: ast.Call, scope: ast.AST) -> _ShortTimeout | None:
    """transformers ``TrainingArguments(ddp_timeout=60)`` (seconds, an int)."""
    qualified = ctx.analysis.names.resolve(call.func) or ""
    if not (qualified.startswith("transformers.") and qualified.endswith("TrainingArguments")):
        return None
    keyword = keyword_argument(call, "ddp_timeout")
    if keyword is None:
        return None
    found = number_or_default(ctx.analysis, keyword.value, scope)
    if found is None or not 0 < found[0] < SHORT_TIMEOUT_SECONDS:
        return None
    seconds, default = found
    setter = "`TrainingArguments(ddp_timeout=...)`"
    if default is not None:
        setter = f"{setter} ({default.where} {default.value})"
    return _ShortTimeout(call, keyword, seconds, setter)


def _finding(
    rule: TimeoutShorterThanRankZeroWork,
    ctx: CodeContext,
    timeout: _ShortTimeout,
    work: RankZeroWork,
) -> Finding:
    length = describe_seconds(timeout.seconds)
    what = " ".join(ast_node_text(ctx, work.work.func).split())
    message = (
        f"{timeout.setter} is {length}, but one rank runs `{what}(...)` {work.how} "
        f"(line {work.work.lineno}) while the others wait in a barrier: if that work takes "
        f"longer than {length} (a first download, tokenising or caching a dataset), the "
        "waiting ranks time out and the job aborts"
    )
    return ctx.ast_finding(
        rule,
        timeout.at,
        message,
        summary=f"timeout of {length}; ranks wait while one runs `{what}`",
    )
