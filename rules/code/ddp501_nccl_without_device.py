"""DDP501: an NCCL process group in a script that never picks a GPU per rank."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ddplint.code.collectives.ddp_wrappers import is_ddp_wrapper
from ddplint.code.context import CodeContext
from ddplint.code.edits.statement_edits import insert_statement_before
from ddplint.code.ranks.process_groups import DEVICE_CHOICES, InitCall, ProcessGroups
from ddplint.code.ranks.rank_predicates import RankPredicates
from ddplint.code.syntax.call_args import argument, keyword_argument
from ddplint.code.syntax.names import dotted_name
from ddplint.code_facts import is_test_file
from ddplint.finding import Applicability, Finding, Fix, Severity
from ddplint.rule import CodeRule

#: Frameworks that pick the device for each rank themselves.
FRAMEWORKS = ("lightning", "pytorch_lightning", "lightning_fabric", "accelerate", "deepspeed")
_ENV_READERS = frozenset({"os.environ", "os.environ.get", "os.getenv"})


class NcclWithoutDevice(CodeRule):
    """
    ## What it does
    Flags `init_process_group("nccl")` (or `backend="nccl"` / `Backend.NCCL`) in a
    module that then wraps a model in `DistributedDataParallel` or calls a collective,
    when the module never chooses a GPU for the rank: no `torch.cuda.set_device(...)`,
    `torch.cuda.device(...)`, `init_process_group(device_id=...)`,
    `DistributedDataParallel(..., device_ids=[...])` and no `CUDA_VISIBLE_DEVICES`
    assignment. Modules that use Lightning, Fabric, accelerate or DeepSpeed are not
    flagged: those set the device themselves. Nor is a set-up function (`setup()`
    creating the group) whose every caller in the project chooses the GPU itself.

    ## Why is this bad?
    Every rank starts on `cuda:0`. NCCL then fails with a duplicate-GPU error
    (`Duplicate GPU detected: rank 1 and rank 0 both on CUDA device ...`), or a barrier
    runs on the wrong GPU and hangs, and all ranks allocate memory on GPU 0.

    ## Example
    ```python
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    model = DDP(model.cuda())
    ```

    ## Use instead
    ```python
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    model = DDP(model.cuda(), device_ids=[local_rank])
    ```

    ## Fix safety
    When the same function reads `LOCAL_RANK` into a name before the
    `init_process_group` call, the fix inserts `torch.cuda.set_device(<name>)` just
    before it. It is safe: it is the documented set-up and changes nothing else.
    Otherwise there is no fix: which GPU a rank owns is the launcher's convention.

    ## References
    - PyTorch docs: "Getting Started with Distributed Data Parallel";
      `torch.distributed.init_process_group` (`device_id`).
    - pytorch/pytorch#15051, #124714.
    """

    code = "DDP501"
    name = "nccl-without-device"
    summary = "NCCL process group with no GPU chosen per rank"
    severity = Severity.ERROR
    #: Preview since issue 23: under the bar of precision on blind code (docs/precision.md).
    default_enabled = False
    fix_applicability = Applicability.SAFE
    needles = ("nccl", "NCCL")
    required = ("init_process_group",)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        if any(ctx.names.imports_module(framework) for framework in FRAMEWORKS):
            return
        groups = ProcessGroups(ctx.index, ctx.names)
        nccl = [
            init
            for init in groups.init_calls
            if init.backend
            and "nccl" in init.backend
            and not _not_the_real_init(ctx, init)
            and not ctx.project.device_chosen_by_callers(init.call)
        ]
        if not nccl or _chooses_device(ctx, groups) or not _uses_ranks(ctx):
            return
        for init in nccl:
            message = (
                "NCCL process group, but no GPU is chosen for this rank (no "
                "`torch.cuda.set_device(local_rank)`, `device_id=` or `device_ids=[...]`): "
                "every rank runs on cuda:0 — a duplicate-GPU error, or a barrier on the "
                "wrong GPU that hangs"
            )
            summary = "NCCL process group, but no GPU chosen per rank: every rank uses cuda:0"
            yield ctx.finding(self, init.call, message, _fix(ctx, init), summary=summary)


def _chooses_device(ctx: CodeContext, groups: ProcessGroups) -> bool:
    if any(keyword_argument(init.call, "device_id") for init in groups.init_calls):
        return True
    for call in ctx.index.nodes(cst.Call):
        name = ctx.names.qualified_name(call.func)
        if name in DEVICE_CHOICES or ctx.project.sets_device(call):
            return True
        if is_ddp_wrapper(ctx.names, call) and argument(call, "device_ids", 1) is not None:
            return True
    # A script that sets (or reads) CUDA_VISIBLE_DEVICES manages GPUs per rank itself.
    if any(s.evaluated_value == "CUDA_VISIBLE_DEVICES" for s in ctx.index.nodes(cst.SimpleString)):
        return True
    return _places_per_call(ctx)


def _places_per_call(ctx: CodeContext) -> bool:
    """The GPU is named at each use instead: a collective given ``device_ids=[rank]``, or
    tensors placed on ``f"cuda:{rank % n}"`` / ``torch.device("cuda", local_rank)``."""
    for call in ctx.index.nodes(cst.Call):
        if call in ctx.collectives and keyword_argument(call, "device_ids") is not None:
            return True
        if ctx.names.qualified_name(call.func) == "torch.device" and len(call.args) >= 2:
            return True
    return any(
        _is_rank_device_string(node, ctx.rank_predicates)
        for node in ctx.index.nodes(cst.FormattedString)
    )


def _is_rank_device_string(node: cst.FormattedString, ranks: RankPredicates) -> bool:
    """``f"cuda:{...}"`` whose index reads the rank (what the expression reads, not what
    its names are called)."""
    text = "".join(p.value for p in node.parts if isinstance(p, cst.FormattedStringText))
    if not text.startswith("cuda:"):
        return False
    return any(
        isinstance(part, cst.FormattedStringExpression) and ranks.is_rank_dependent(part.expression)
        for part in node.parts
    )


def _not_the_real_init(ctx: CodeContext, init: InitCall) -> bool:
    """A one-process group (``world_size=1``: cuda:0 is right), or, in a test module, a
    fallback under ``if not dist.is_initialized()``: the test harness (a conftest
    fixture, a setup utility) initialises the world and picks the GPU first."""
    size = keyword_argument(init.call, "world_size")
    if size is not None and isinstance(size.value, cst.Integer) and size.value.value == "1":
        return True
    if not is_test_file(ctx.source.path):
        return False
    return any(
        isinstance(a, cst.If) and "is_initialized" in ctx.node_text(a.test)
        for a in ctx.index.ancestors(init.call)
    )


def _uses_ranks(ctx: CodeContext) -> bool:
    """The module wraps a model in DDP or calls a collective."""
    return any(
        is_ddp_wrapper(ctx.names, call) or call in ctx.collectives
        for call in ctx.index.nodes(cst.Call)
    )


def _fix(ctx: CodeContext, init: InitCall) -> Fix | None:
    statement = ctx.index.parent.get(init.call)
    holder = ctx.index.parent.get(statement) if isinstance(statement, cst.Expr) else None
    torch_name = next(
        (local for local, full in ctx.names.bindings.items() if full == "torch"), None
    )
    if not isinstance(holder, cst.SimpleStatementLine) or torch_name is None:
        return None
    local_rank = _local_rank_name(ctx, init.call)
    if local_rank is None:
        return None
    call = f"{torch_name}.cuda.set_device({local_rank})"
    edit = insert_statement_before(ctx, holder, call)
    return Fix(Applicability.SAFE, (edit,), f"Call `{call}` before `init_process_group`")


def _local_rank_name(ctx: CodeContext, init: cst.Call) -> str | None:
    """A name assigned from ``os.environ["LOCAL_RANK"]`` (or ``.get``/``getenv``) in the
    scope of ``init``, before it."""
    scope = ctx.index.enclosing_function(init) or ctx.module
    position = ctx.index.order[init]
    for node in ctx.index.walk_within(scope):
        if ctx.index.order[node] >= position:
            return None
        if (
            isinstance(node, cst.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0].target, cst.Name)
            and _reads_local_rank(ctx, node.value)
        ):
            return node.targets[0].target.value
    return None


def _reads_local_rank(ctx: CodeContext, value: cst.BaseExpression) -> bool:
    reads_env = False
    names_local_rank = False
    for node in (value, *ctx.index.walk_within(value)):
        if isinstance(node, cst.SimpleString) and node.evaluated_value == "LOCAL_RANK":
            names_local_rank = True
        elif isinstance(node, (cst.Attribute, cst.Name)):
            qualified = ctx.names.qualified_name(node) or dotted_name(node)
            reads_env = reads_env or qualified in _ENV_READERS
    return reads_env and names_local_rank
