"""DDP503: an NCCL collective issued before the rank has chosen its GPU."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from ddplint.code.collectives.catalogue import torch_distributed_call
from ddplint.code.collectives.ddp_wrappers import is_ddp_wrapper
from ddplint.code.collectives.run_order import RunOrder, TracedCall
from ddplint.code.context import CodeContext
from ddplint.code.ranks.process_groups import DEVICE_CHOICES, ProcessGroups
from ddplint.code.syntax.call_args import argument, keyword_argument
from ddplint.code.syntax.constants import literal_value, single_assignment
from ddplint.finding import Finding, Severity
from ddplint.needles import DEVICE_CHOICE_NEEDLES
from ddplint.rule import CodeRule

#: Collectives that pickle to the *current* device (``torch.cuda.current_device()``, as
#: PyTorch documents for NCCL groups): cuda:0 on every rank before ``set_device``. A
#: ``barrier`` is not one: with no device bound, ProcessGroupNCCL runs it on GPU
#: ``rank % device_count`` (or on the devices its earlier collectives used).
CURRENT_DEVICE_COLLECTIVES = frozenset(
    {
        "all_gather_object",
        "broadcast_object_list",
        "gather_object",
        "scatter_object_list",
    }
)


#: Collectives on the tensor passed first: they run on that tensor's device.
TENSOR_COLLECTIVES = frozenset(
    {"all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "gather"}
)


@dataclass(frozen=True)
class _LateChoice:
    """How the trace later names this rank's GPU: a ``set_device`` call (``call``), or
    only a DDP wrapper given ``device_ids`` (which leaves the current device alone)."""

    call: cst.Call
    sets_current_device: bool


class CollectiveBeforeSetDevice(CodeRule):
    """
    ## What it does
    Flags an object collective (`all_gather_object`, `broadcast_object_list`,
    `gather_object`, `scatter_object_list`) or a collective on a tensor made on
    `"cuda"` with no index (`torch.ones(1, device="cuda")`, `t.cuda()`) on the
    default NCCL group that runs after
    `init_process_group` but before the rank chooses its GPU, when the same code path
    chooses it later: `torch.cuda.set_device(local_rank)` comes after the collective, or
    the GPU is only ever named per use (`DistributedDataParallel(...,
    device_ids=[local_rank])`, `torch.device("cuda", local_rank)`,
    `torch.device(f"cuda:{local_rank}")`) and never made current. The path
    is followed through the functions of the module (a `setup()` that initialises and
    waits, called before `set_device` in the worker). Not flagged: `barrier(device_ids=
    [...])`, `init_process_group(device_id=...)`, a `set_device` before the collective,
    a gloo group.

    ## Why is this bad?
    Object collectives move their pickled bytes to the *current* CUDA device (PyTorch
    documents that the user must make it the rank's own with `set_device`), and a
    tensor made on `"cuda"` lives there too. Before `set_device` that is `cuda:0` on
    every rank: every process creates a CUDA context and an NCCL communicator on GPU 0,
    the collective can hang or fail with a duplicate-GPU error, and GPU 0 runs out of
    memory on large nodes. `DistributedDataParallel(device_ids=...)` places the model
    but does not change the current device, so a later object collective still runs
    on GPU 0. The device chosen later does not repair the communicator made earlier.

    ## Example
    ```python
    dist.init_process_group("nccl")
    config = [cfg]
    dist.broadcast_object_list(config, src=0)
    torch.cuda.set_device(local_rank)
    ```

    ## Use instead
    ```python
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    config = [cfg]
    dist.broadcast_object_list(config, src=0)
    ```

    ## Fix safety
    No automatic fix: moving `set_device` up changes what runs in between on the
    current device, and an object collective takes no device argument.

    ## References
    - PyTorch docs: `torch.distributed.all_gather_object` and the other object
      collectives (the note on `torch.cuda.current_device()` under NCCL),
      `torch.distributed.init_process_group` (`device_id`); ProcessGroupNCCL's barrier
      warning "using GPU N to perform barrier as devices used by this process are
      currently unknown" (the `rank % device_count` guess).
    - pytorch/pytorch#15051, #124714 (processes sharing GPU 0 under NCCL).
    """

    code = "DDP503"
    name = "collective-before-set-device"
    summary = "NCCL collective runs before the rank chooses its GPU"
    severity = Severity.ERROR
    default_enabled = False
    needles = DEVICE_CHOICE_NEEDLES
    required = ("init_process_group",)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        groups = ProcessGroups(ctx.index, ctx.names)
        nccl_inits = {init.call for init in groups.init_calls if _may_be_nccl(ctx, init.backend)}
        nccl_inits -= {i.call for i in groups.init_calls if keyword_argument(i.call, "device_id")}
        if not nccl_inits:
            return
        order = RunOrder(ctx.index)
        reported: set[cst.Call] = set()
        for root in order.entry_points():
            trace = order.trace(root)
            for traced, late in _before_device_choice(ctx, groups, trace, nccl_inits):
                if traced.call in reported:
                    continue
                reported.add(traced.call)
                yield _finding(self, ctx, traced, late)


def _may_be_nccl(ctx: CodeContext, backend: str | None) -> bool:
    """A literal NCCL backend; no literal (left out: NCCL for CUDA tensors; computed:
    taken as NCCL when the module names it at all)."""
    if backend is not None:
        return "nccl" in backend
    return "nccl" in ctx.source.text.lower()


def _before_device_choice(
    ctx: CodeContext, groups: ProcessGroups, trace: list[TracedCall], inits: set[cst.Call]
) -> Iterator[tuple[TracedCall, _LateChoice]]:
    """The current-device collectives of ``trace`` between an NCCL init and the first
    device choice, when the trace makes a choice after them."""
    start = next((i for i, t in enumerate(trace) if t.call in inits), None)
    if start is None or any(_chooses_device(ctx, t.call) for t in trace[:start]):
        return
    pending: list[TracedCall] = []
    for traced in trace[start + 1 :]:
        if _chooses_device(ctx, traced.call):
            late = _LateChoice(traced.call, sets_current_device=True)
            yield from ((p, late) for p in pending)
            return
        if _runs_on_current_device(ctx, groups, traced.call):
            pending.append(traced)
    wrapper = next((t.call for t in trace if _names_rank_device(ctx, t.call)), None)
    if wrapper is not None:
        late = _LateChoice(wrapper, sets_current_device=False)
        yield from ((p, late) for p in pending)


def _chooses_device(ctx: CodeContext, call: cst.Call) -> bool:
    return ctx.names.qualified_name(call.func) in DEVICE_CHOICES or ctx.project.sets_device(call)


def _names_rank_device(ctx: CodeContext, call: cst.Call) -> bool:
    """The rank's GPU is named for one use without being made current: a DDP wrapper
    given ``device_ids``, ``torch.device("cuda", local_rank)`` or
    ``torch.device(f"cuda:{local_rank}")``."""
    if is_ddp_wrapper(ctx.names, call):
        return argument(call, "device_ids", 1) is not None
    if ctx.names.qualified_name(call.func) != "torch.device" or not call.args:
        return False
    if len(call.args) >= 2:
        return literal_value(call.args[0].value) == "cuda"
    first = call.args[0].value
    return isinstance(first, cst.FormattedString) and ctx.node_text(first)[2:].startswith("cuda:")


def _runs_on_current_device(ctx: CodeContext, groups: ProcessGroups, call: cst.Call) -> bool:
    function = torch_distributed_call(ctx.names, call)
    if function not in CURRENT_DEVICE_COLLECTIVES and not (
        function in TENSOR_COLLECTIVES and _on_current_cuda_device(ctx, call)
    ):
        return False
    group = keyword_argument(call, "group")
    return groups.is_default_group(group) and groups.default_backend in (None, "nccl")


def _on_current_cuda_device(ctx: CodeContext, call: cst.Call) -> bool:
    """The collective's first tensor is made on the current GPU without an index:
    ``torch.zeros(1, device="cuda")``, ``t.cuda()``, ``t.to("cuda")`` (or a name bound
    once to one of those)."""
    tensor = argument(call, "tensor", 0)
    if tensor is None:
        return False
    value = tensor.value
    if isinstance(value, cst.Name):
        bound = single_assignment(ctx.index, call, value.value)
        value = bound if bound is not None else value
    if not isinstance(value, cst.Call):
        return False
    device = keyword_argument(value, "device")
    if device is not None:
        return literal_value(device.value) == "cuda"
    if isinstance(value.func, cst.Attribute) and value.func.attr.value == "cuda":
        return not value.args
    if isinstance(value.func, cst.Attribute) and value.func.attr.value == "to" and value.args:
        return literal_value(value.args[0].value) == "cuda"
    return False


def _finding(
    rule: CollectiveBeforeSetDevice, ctx: CodeContext, traced: TracedCall, late: _LateChoice
) -> Finding:
    name = " ".join(ctx.node_text(traced.call.func).split())
    where = f" (in `{traced.chain[-1]}`)" if traced.chain else ""
    line = ctx.range_of(late.call)[0]
    if late.sets_current_device:
        later = f"the GPU is chosen only later (`{_short(ctx, late.call)}`, line {line})"
    else:
        later = (
            f"no `set_device` is called: `{_short(ctx, late.call)}` (line {line}) names "
            "the rank's GPU for one use but leaves the current device at cuda:0"
        )
    message = (
        f"`{name}()`{where} runs on the NCCL group before this rank chooses its GPU — "
        f"{later}. It runs on the current device, cuda:0 on every rank: all processes "
        "make a context and a communicator on GPU 0, and the collective can hang or fail "
        "with a duplicate-GPU error"
    )
    return ctx.finding(
        rule,
        traced.call,
        message,
        summary=f"`{name}()` runs on cuda:0 before the rank's GPU is chosen",
    )


def _short(ctx: CodeContext, call: cst.Call) -> str:
    text = " ".join(ctx.node_text(call).split())
    return text if len(text) <= 60 else f"{' '.join(ctx.node_text(call.func).split())}(...)"
