"""DDP306: a process-group timeout too short for work one rank does while the rest wait."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from ddplint.code.collectives.run_order import RunOrder
from ddplint.code.collectives.timeouts import describe_seconds, timedelta_length, timeout_argument
from ddplint.code.context import CodeContext
from ddplint.code.ranks.rank_zero_work import RankZeroWork, rank_zero_work
from ddplint.code.syntax.call_args import keyword_argument
from ddplint.code.syntax.constants import UNKNOWN, constant_value
from ddplint.code.values.fallback_defaults import fallback_default
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
    needles = ("timeout",)
    also_needles = ("timedelta", "ddp_timeout")

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        timeouts = {t.call: t for t in _short_group_timeouts(ctx)}
        if not timeouts:
            return
        works = {
            w.work: w
            for w in rank_zero_work(ctx.index, ctx.rank_predicates, ctx.collectives, ctx.call_reach)
        }
        if not works:
            return
        order = RunOrder(ctx.index)
        reported: set[cst.Call] = set()
        for root in order.entry_points():
            trace = [traced.call for traced in order.trace(root)]
            for position, call in enumerate(trace):
                if call not in timeouts or call in reported:
                    continue
                work = next((works[c] for c in trace[position + 1 :] if c in works), None)
                if work is not None:
                    reported.add(call)
                    yield _finding(self, ctx, timeouts[call], work)


@dataclass(frozen=True)
class _ShortTimeout:
    """A call that sets a group-wide timeout under 30 minutes: its argument, the length
    in seconds and what sets it (for messages)."""

    call: cst.Call
    arg: cst.Arg
    seconds: float
    setter: str


def _short_group_timeouts(ctx: CodeContext) -> Iterator[_ShortTimeout]:
    for call in ctx.index.nodes(cst.Call):
        seconds_arg = _ddp_timeout_seconds(ctx, call)
        if seconds_arg is not None:
            yield seconds_arg
            continue
        found = timeout_argument(ctx.names, call)
        if found is None or found[1] is None or found[0].api not in _GROUP_TIMEOUT_APIS:
            continue
        length = timedelta_length(ctx.index, ctx.names, found[1].value)
        if length is not None and 0 < length.seconds < SHORT_TIMEOUT_SECONDS:
            source = f" ({length.default.where} {length.default.value})" if length.default else ""
            setter = f"`{found[0].api}` timeout{source}"
            yield _ShortTimeout(call, found[1], length.seconds, setter)


def _ddp_timeout_seconds(ctx: CodeContext, call: cst.Call) -> _ShortTimeout | None:
    """transformers ``TrainingArguments(ddp_timeout=60)`` (seconds, an int)."""
    qualified = ctx.names.qualified_name(call.func) or ""
    if not (qualified.startswith("transformers.") and qualified.endswith("TrainingArguments")):
        return None
    arg = keyword_argument(call, "ddp_timeout")
    if arg is None:
        return None
    seconds = constant_value(ctx.index, arg.value)
    setter = "`TrainingArguments(ddp_timeout=...)`"
    if seconds is UNKNOWN:
        default = fallback_default(ctx.index, arg.value)
        if default is None:
            return None
        seconds = default.value
        setter = f"{setter} ({default.where} {default.value})"
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        return None
    if not 0 < seconds < SHORT_TIMEOUT_SECONDS:
        return None
    return _ShortTimeout(call, arg, float(seconds), setter)


def _finding(
    rule: TimeoutShorterThanRankZeroWork,
    ctx: CodeContext,
    timeout: _ShortTimeout,
    work: RankZeroWork,
) -> Finding:
    length = describe_seconds(timeout.seconds)
    what = " ".join(ctx.node_text(work.work.func).split())
    line = ctx.range_of(work.work)[0]
    message = (
        f"{timeout.setter} is {length}, but one rank runs `{what}(...)` {work.how} "
        f"(line {line}) while the others wait in a barrier: if that work takes longer "
        f"than {length} (a first download, tokenising or caching a dataset), the waiting "
        "ranks time out and the job aborts"
    )
    return ctx.finding(
        rule,
        timeout.arg,
        message,
        summary=f"timeout of {length}; ranks wait while one runs `{what}`",
    )
