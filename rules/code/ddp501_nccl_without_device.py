"""DDP501: an NCCL process group in a script that never picks a GPU per rank."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.api import DDP_WRAPPERS
from ddplint.analysis.constants import literal_value
from ddplint.analysis.device_choices import (
    gives_group_device,
    makes_device_current,
    names_device_for_one_use,
    names_visible_devices,
    rank_device_strings,
)
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.names import keyword_argument
from ddplint.analysis.process_groups import InitCall, ProcessGroups
from ddplint.analysis.project import project_key
from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import insert_ast_statement_before
from ddplint.code_facts import is_test_file
from ddplint.finding import Applicability, Finding, Fix, Severity
from ddplint.rule import CodeRule

#: Frameworks that pick the device for each rank themselves.
FRAMEWORKS = ("lightning", "pytorch_lightning", "lightning_fabric", "accelerate", "deepspeed")
_ENV_READERS = frozenset({"os.environ", "os.environ.get", "os.getenv"})
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


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
    creating the group) whose every caller in the project chooses the GPU itself, nor a
    module that calls a project helper that chooses it. The GPU counts as named per use
    when a device string `f"cuda:{index}"` reads the rank (whatever the index is
    called), not when the index is a setting alike on every rank.

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
    This rule is built on the analysis core (process groups and their backends, where
    the module chooses a GPU, what a device index reads: the divergence analysis).

    ## References
    - PyTorch docs: "Getting Started with Distributed Data Parallel";
      `torch.distributed.init_process_group` (`device_id`).
    - pytorch/pytorch#15051, #124714.
    """

    code = "DDP501"
    reads_libcst = False
    name = "nccl-without-device"
    summary = "NCCL process group with no GPU chosen per rank"
    severity = Severity.ERROR
    #: Preview since issue 23: under the bar of precision on blind code (docs/precision.md).
    default_enabled = False
    needs_peers = True
    fix_applicability = Applicability.SAFE
    needles = ("nccl", "NCCL")
    required = ("init_process_group",)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        analysis = ctx.analysis
        if _imports_a_framework(analysis):
            return
        groups = ProcessGroups(analysis)
        nccl = [
            init
            for init in groups.inits
            if init.backend is not None
            and "nccl" in init.backend.name
            and not _not_the_real_init(ctx, init)
            and not _device_chosen_by_callers(analysis, init)
        ]
        if not nccl or _chooses_device(analysis, groups) or not _uses_ranks(analysis):
            return
        for init in nccl:
            message = (
                "NCCL process group, but no GPU is chosen for this rank (no "
                "`torch.cuda.set_device(local_rank)`, `device_id=` or `device_ids=[...]`): "
                "every rank runs on cuda:0 — a duplicate-GPU error, or a barrier on the "
                "wrong GPU that hangs"
            )
            summary = "NCCL process group, but no GPU chosen per rank: every rank uses cuda:0"
            yield ctx.ast_finding(self, init.call, message, summary=summary, fix=_fix(ctx, init))


def _imports_a_framework(analysis: ModuleAnalysis) -> bool:
    return any(
        imported == framework or imported.startswith(f"{framework}.")
        for imported in analysis.names.imports.values()
        for framework in FRAMEWORKS
    )


def _device_chosen_by_callers(analysis: ModuleAnalysis, init: InitCall) -> bool:
    """``init`` sits in a function of this module every project caller calls around
    choosing the rank's GPU (``setup()``, then ``torch.cuda.set_device``)."""
    scope = init.scope
    if not isinstance(scope, _FUNCTIONS):
        return False
    key = project_key(scope, analysis.nodes.scope_of.get(scope))
    return key is not None and analysis.project.callers_choose_device(key)


def _chooses_device(analysis: ModuleAnalysis, groups: ProcessGroups) -> bool:
    if any(gives_group_device(analysis, init.call) for init in groups.inits):
        return True
    for call in analysis.nodes.calls_in_order():
        if makes_device_current(analysis, call):
            return True
        if analysis.names.resolve(call.func) in DDP_WRAPPERS and names_device_for_one_use(
            analysis, call
        ):
            return True
    # A script that sets (or reads) CUDA_VISIBLE_DEVICES manages GPUs per rank itself.
    return names_visible_devices(analysis) or _places_per_call(analysis)


def _places_per_call(analysis: ModuleAnalysis) -> bool:
    """The GPU is named at each use instead: a collective given ``device_ids=[rank]``, or
    tensors placed on ``f"cuda:{rank % n}"`` / ``torch.device("cuda", local_rank)``."""
    for call in analysis.nodes.calls_in_order():
        scope = analysis.nodes.scope_of_call(call)
        if (
            keyword_argument(call, "device_ids") is not None
            and analysis.call_collective(call, scope) is not None
        ):
            return True
        if analysis.names.resolve(call.func) == "torch.device" and len(call.args) >= 2:
            return True
    return next(rank_device_strings(analysis), None) is not None


def _not_the_real_init(ctx: CodeContext, init: InitCall) -> bool:
    """A one-process group (``world_size=1``: cuda:0 is right), or, in a test module, a
    fallback under ``if not dist.is_initialized()``: the test harness (a conftest
    fixture, a setup utility) initialises the world and picks the GPU first."""
    size = keyword_argument(init.call, "world_size")
    if size is not None and literal_value(size.value) == 1:
        return True
    if not is_test_file(ctx.source.path):
        return False
    return any(
        isinstance(statement, ast.If)
        and "is_initialized" in ast.unparse(statement.test)
        and _holds(statement, init.call)
        for statement in ctx.analysis.nodes.of_type(ast.If)
    )


def _holds(statement: ast.stmt, node: ast.AST) -> bool:
    return any(inner is node for inner in ast.walk(statement))


def _uses_ranks(analysis: ModuleAnalysis) -> bool:
    """The module wraps a model in DDP or calls a collective."""
    return any(
        analysis.names.resolve(call.func) in DDP_WRAPPERS
        or analysis.call_collective(call, analysis.nodes.scope_of_call(call)) is not None
        for call in analysis.nodes.calls_in_order()
    )


def _fix(ctx: CodeContext, init: InitCall) -> Fix | None:
    statement = _statement_of(init)
    torch_name = next(
        (local for local, full in ctx.analysis.names.imports.items() if full == "torch"), None
    )
    if statement is None or torch_name is None:
        return None
    local_rank = _local_rank_name(ctx.analysis, init, statement)
    if local_rank is None:
        return None
    call = f"{torch_name}.cuda.set_device({local_rank})"
    edit = insert_ast_statement_before(ctx, statement, call)
    return Fix(Applicability.SAFE, (edit,), f"Call `{call}` before `init_process_group`")


def _statement_of(init: InitCall) -> ast.Expr | None:
    """The expression statement that is the ``init_process_group`` call itself."""
    body = init.scope.body if isinstance(init.scope, (ast.Module, *_FUNCTIONS)) else []
    for statement in ast.walk(ast.Module(body=list(body), type_ignores=[])):
        if isinstance(statement, ast.Expr) and statement.value is init.call:
            return statement
    return None


def _local_rank_name(analysis: ModuleAnalysis, init: InitCall, statement: ast.stmt) -> str | None:
    """A name assigned from ``os.environ["LOCAL_RANK"]`` (or ``.get``/``getenv``) in the
    scope of ``init``, before it."""
    body = init.scope.body if isinstance(init.scope, (ast.Module, *_FUNCTIONS)) else []
    assignments = [
        node
        for node in ast.walk(ast.Module(body=list(body), type_ignores=[]))
        if isinstance(node, ast.Assign)
        and (node.lineno, node.col_offset) < (statement.lineno, statement.col_offset)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and _reads_local_rank(analysis, node.value)
    ]
    if not assignments:
        return None
    first = min(assignments, key=lambda node: (node.lineno, node.col_offset))
    target = first.targets[0]
    return target.id if isinstance(target, ast.Name) else None


def _reads_local_rank(analysis: ModuleAnalysis, value: ast.expr) -> bool:
    reads_env = False
    names_local_rank = False
    for node in ast.walk(value):
        if isinstance(node, ast.Constant) and node.value == "LOCAL_RANK":
            names_local_rank = True
        elif isinstance(node, (ast.Attribute, ast.Name)):
            reads_env = reads_env or analysis.names.resolve(node) in _ENV_READERS
    return reads_env and names_local_rank
