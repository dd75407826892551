"""DDP503: an NCCL collective issued before the rank has chosen its GPU."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from ddplint.analysis.api import torch_distributed_function
from ddplint.analysis.constants import literal_value
from ddplint.analysis.device_choices import (
    gives_group_device,
    makes_device_current,
    names_device_for_one_use,
)
from ddplint.analysis.effects import default_group
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.names import call_argument, keyword_argument
from ddplint.analysis.process_groups import ProcessGroups
from ddplint.analysis.run_order import GraphOrder, TracedCall, entry_points
from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import ast_node_text
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
    """How the trace names this rank's GPU: a ``set_device`` call (``call``) after the
    collective or on another way, or only a DDP wrapper given ``device_ids`` (which
    leaves the current device alone)."""

    call: ast.Call
    sets_current_device: bool
    #: The choice is made only on other ways through the code, never after this one.
    elsewhere: bool = False


class CollectiveBeforeSetDevice(CodeRule):
    """
    ## What it does
    Flags an object collective (`all_gather_object`, `broadcast_object_list`,
    `gather_object`, `scatter_object_list`) or a collective on a tensor made on
    `"cuda"` with no index (`torch.ones(1, device="cuda")`, `t.cuda()`) on the
    default NCCL group that runs after
    `init_process_group` but before the rank chooses its GPU, when the same code path
    chooses it later: `torch.cuda.set_device(local_rank)` comes after the collective (or
    only on another way through the code, such as past an early `return`), or
    the GPU is only ever named per use (`DistributedDataParallel(...,
    device_ids=[local_rank])`, `torch.device("cuda", local_rank)`,
    `torch.device(f"cuda:{local_rank}")`) and never made current. The path
    is followed through the functions of the module (a `setup()` that initialises and
    waits, called before `set_device` in the worker), along each function's
    control-flow graph, not the order of the text: a `set_device` on a way that can run
    before the collective (the other arm of an `if` cannot) counts as before, one in
    dead code after a `return` counts as nothing, and a project helper that calls
    `set_device` counts as one. Not flagged: `barrier(device_ids=
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

    This rule is built on the analysis core (process groups and their backends, the
    device choices, run order along the control-flow graph on Python's `ast`).

    ## References
    - PyTorch docs: `torch.distributed.all_gather_object` and the other object
      collectives (the note on `torch.cuda.current_device()` under NCCL),
      `torch.distributed.init_process_group` (`device_id`); ProcessGroupNCCL's barrier
      warning "using GPU N to perform barrier as devices used by this process are
      currently unknown" (the `rank % device_count` guess).
    - pytorch/pytorch#15051, #124714 (processes sharing GPU 0 under NCCL).
    """

    code = "DDP503"
    reads_libcst = False
    name = "collective-before-set-device"
    summary = "NCCL collective runs before the rank chooses its GPU"
    severity = Severity.ERROR
    default_enabled = False
    needs_peers = True
    needles = DEVICE_CHOICE_NEEDLES
    required = ("init_process_group",)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        analysis = ctx.analysis
        groups = ProcessGroups(analysis)
        nccl_inits = {
            id(init.call)
            for init in groups.inits
            if _may_be_nccl(ctx, init.backend.name if init.backend else None)
            and not gives_group_device(analysis, init.call)
        }
        if not nccl_inits:
            return
        order = GraphOrder(analysis)
        reported: set[int] = set()
        for root in entry_points(analysis):
            trace = order.trace(root)
            for traced, late in _before_device_choice(analysis, groups, order, trace, nccl_inits):
                if id(traced.call) in reported:
                    continue
                reported.add(id(traced.call))
                yield _finding(self, ctx, traced, late)


def _may_be_nccl(ctx: CodeContext, backend: str | None) -> bool:
    """A known NCCL backend; none known (left out: NCCL for CUDA tensors; computed:
    taken as NCCL when the module names it at all)."""
    if backend is not None:
        return "nccl" in backend
    return "nccl" in ctx.source.text.lower()


def _before_device_choice(
    analysis: ModuleAnalysis,
    groups: ProcessGroups,
    order: GraphOrder,
    trace: list[TracedCall],
    inits: set[int],
) -> Iterator[tuple[TracedCall, _LateChoice]]:
    """The current-device collectives of ``trace`` that may run after an NCCL init
    with no device choice that may run before them, when a choice may run after them
    (or the trace names the rank's GPU only per use)."""
    started = [t for t in trace if id(t.call) in inits]
    if not started:
        return
    choices = [t for t in trace if makes_device_current(analysis, t.call)]
    named = next((t for t in trace if names_device_for_one_use(analysis, t.call)), None)
    for traced in trace:
        if not _runs_on_current_device(analysis, groups, traced.call):
            continue
        if not any(order.may_run_after(init, traced) for init in started):
            continue
        if any(order.may_run_after(choice, traced) for choice in choices):
            continue
        later = next((c for c in choices if order.may_run_after(traced, c)), None)
        if later is not None:
            yield traced, _LateChoice(later.call, sets_current_device=True)
        elif choices:
            yield traced, _LateChoice(choices[0].call, sets_current_device=True, elsewhere=True)
        elif named is not None:
            yield traced, _LateChoice(named.call, sets_current_device=False)


def _runs_on_current_device(
    analysis: ModuleAnalysis, groups: ProcessGroups, call: ast.Call
) -> bool:
    function = torch_distributed_function(analysis.names.resolve(call.func))
    if function not in CURRENT_DEVICE_COLLECTIVES and not (
        function in TENSOR_COLLECTIVES and _on_current_cuda_device(analysis, call)
    ):
        return False
    group = keyword_argument(call, "group")
    if group is not None and not default_group(group.value):
        return False
    backend = groups.default_backend
    return backend is None or backend.name == "nccl"


def _on_current_cuda_device(analysis: ModuleAnalysis, call: ast.Call) -> bool:
    """The collective's first tensor is made on the current GPU without an index:
    ``torch.zeros(1, device="cuda")``, ``t.cuda()``, ``t.to("cuda")`` (or a name bound
    once to one of those)."""
    value = call_argument(call, 0, "tensor")
    if isinstance(value, ast.Name):
        constants = analysis.constants
        owner = constants.owner_of(analysis.nodes.scope_of_call(call))
        bound = constants.single_assignment(owner, value.id)
        value = bound[0] if bound is not None else value
    if not isinstance(value, ast.Call):
        return False
    device = keyword_argument(value, "device")
    if device is not None:
        return literal_value(device.value) == "cuda"
    if isinstance(value.func, ast.Attribute) and value.func.attr == "cuda":
        return not value.args
    if isinstance(value.func, ast.Attribute) and value.func.attr == "to" and value.args:
        return literal_value(value.args[0]) == "cuda"
    return False


def _finding(
    rule: CollectiveBeforeSetDevice, ctx: CodeContext, traced: TracedCall, late: _LateChoice
) -> Finding:
    name = " ".join(ast_node_text(ctx, traced.call.func).split())
    where = f" (in `{traced.chain[-1]}`)" if traced.chain else ""
    line = late.call.lineno
    if late.elsewhere:
        later = (
            f"the GPU is chosen only on another way through the code "
            f"(`{_short(ctx, late.call)}`, line {line}), not on the way to it"
        )
    elif late.sets_current_device:
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
    return ctx.ast_finding(
        rule,
        traced.call,
        message,
        summary=f"`{name}()` runs on cuda:0 before the rank's GPU is chosen",
        related=[(late.call, "where the GPU is named")],
    )


def _short(ctx: CodeContext, call: ast.Call) -> str:
    text = " ".join(ast_node_text(ctx, call).split())
    return text if len(text) <= 60 else f"{' '.join(ast_node_text(ctx, call.func).split())}(...)"
