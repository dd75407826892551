"""DDP301: ``dist.barrier(timeout=...)`` on a torch that lacks the argument."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.feature_checks import checked_calls
from ddplint.analysis.names import call_argument, has_star_arguments, is_none, keyword_argument
from ddplint.analysis.process_groups import ProcessGroups
from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import remove_ast_argument
from ddplint.code.edits.ast_unused_imports import orphaned_ast_import_edits
from ddplint.code.torch_floor import TORCH_VERSION_SOURCE, at_least
from ddplint.finding import Applicability, Edit, Finding, Fix, Severity
from ddplint.rule import CodeRule
from ddplint.rules.prefilters import barrier_timeout_spelled

#: The first torch release whose ``barrier`` takes ``timeout``.
BARRIER_TIMEOUT_SINCE = (2, 12)
_SINCE_TEXT = ".".join(map(str, BARRIER_TIMEOUT_SINCE))
#: Where ``timeout`` sits among ``barrier``'s positional parameters.
_TIMEOUT_POSITION = 3


class BarrierTimeoutOnOldTorch(CodeRule):
    """
    ## What it does
    Flags `torch.distributed.barrier(..., timeout=...)` when the project admits a torch
    older than 2.12, or when its torch version is unknown. The torch floor is read from
    `pyproject.toml` (`project.dependencies`, optional dependencies, dependency groups,
    Poetry), `setup.cfg` (`install_requires`, `extras_require`) and `requirements*.txt`;
    the `torch-version` setting in `[tool.ddplint]` overrides them.

    A call under a version check (`if torch.__version__ >= ...`, an
    `inspect.signature(...)` test, also through a name bound once to one, and in a
    conditional expression) or inside `try:` with an `except TypeError:` fallback is
    not flagged.

    ## Why is this bad?
    `barrier` accepts `timeout` only from torch 2.12. On an older torch every rank
    crashes at this line with
    `TypeError: barrier() got an unexpected keyword argument 'timeout'`, typically deep
    into a run, after the first epoch.

    ## Example
    ```python
    # pyproject.toml: dependencies = ["torch>=2.1"]
    dist.barrier(timeout=timedelta(minutes=5))
    ```

    ## Use instead
    ```python
    dist.init_process_group("nccl", timeout=timedelta(minutes=5))
    ...
    dist.barrier()
    ```
    On a gloo group, `dist.monitored_barrier(timeout=timedelta(minutes=5))` also reports
    which ranks did not arrive.

    ## Fix safety
    The fix is unsafe: it changes how long the barrier waits. On a gloo group it calls
    `monitored_barrier` with the same timeout; otherwise it drops the argument, and the
    process group's timeout applies (set it in `init_process_group` or `new_group`).
    An import that only the dropped timeouts used (`from datetime import timedelta`,
    `import datetime`) is removed with them, so no unused import is left behind; when
    several barriers share it, each of their fixes carries the removal: apply them
    together (`--fix` does).

    This rule is built on the analysis core (`analysis/process_groups` for the group's
    backend, on Python's `ast`); its fixes are built from `ast` positions.

    ## References
    - PyTorch docs: `torch.distributed.barrier`, `torch.distributed.monitored_barrier`.
    """

    code = "DDP301"
    name = "barrier-timeout-old-torch"
    summary = "dist.barrier(timeout=...) on a torch older than 2.12"
    severity = Severity.ERROR
    fix_applicability = Applicability.UNSAFE
    needles = ("barrier",)
    narrowed_by = staticmethod(barrier_timeout_spelled)

    reads_libcst = False

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        version = ctx.options.torch_version
        if version is not None and at_least(version, BARRIER_TIMEOUT_SINCE):
            return
        groups = ProcessGroups(ctx.analysis)
        checked = checked_calls(ctx.analysis.module, ctx.analysis.constants)
        flagged: list[tuple[ast.Call, ast.AST, ast.expr]] = []
        for calls in ctx.analysis.nodes.calls_by_scope.values():
            for call in calls:
                if groups.made_by(call) != "barrier" or id(call) in checked:
                    continue
                timeout = call_argument(call, _TIMEOUT_POSITION, "timeout")
                if timeout is None or is_none(timeout):
                    continue
                keyword = keyword_argument(call, "timeout")
                flagged.append((call, keyword if keyword is not None else timeout, timeout))
        flagged.sort(key=lambda found: (found[0].lineno, found[0].col_offset))
        monitored = {id(call) for call, _, _ in flagged if _monitored_fix(groups, call)}
        # The imports only the dropped timeouts use (`timedelta`) go with them: every fix
        # that drops a use carries the same removal, applied once when they all apply.
        orphaned = orphaned_ast_import_edits(
            ctx, [timeout for call, _, timeout in flagged if id(call) not in monitored]
        )
        for call, argument, timeout in flagged:
            if id(call) in monitored:
                fix = _monitored_barrier(ctx, call)
            else:
                fix = _drop_timeout(ctx, call, argument, timeout, orphaned)
            yield ctx.ast_finding(self, argument, _message(ctx), summary=_summary(ctx), fix=fix)


def _summary(ctx: CodeContext) -> str:
    version = ctx.options.torch_version
    admits = f"the project admits torch {version}" if version else "the project's torch is unknown"
    return f"`barrier(timeout=...)` needs torch >= {_SINCE_TEXT}; {admits}"


def _message(ctx: CodeContext) -> str:
    source = ctx.options.fact(TORCH_VERSION_SOURCE)
    crash = "TypeError: barrier() got an unexpected keyword argument 'timeout'"
    version = ctx.options.torch_version
    if version is not None:
        return (
            f"`barrier(timeout=...)` needs torch >= {_SINCE_TEXT}, but this project admits "
            f"torch {version} ({source}); there it crashes every rank with {crash}"
        )
    why = f" ({source})" if source else ""
    return (
        f"`barrier(timeout=...)` needs torch >= {_SINCE_TEXT} and this project's torch "
        f"version is unknown{why}; it may be older, where this crashes with {crash} "
        "(set `torch-version` in [tool.ddplint] to say which torch you use)"
    )


def _monitored_fix(groups: ProcessGroups, call: ast.Call) -> bool:
    """Whether the fix can call ``monitored_barrier`` with the same timeout: a gloo group,
    the timeout by keyword, no other argument but the group."""
    group = call_argument(call, 0, "group")
    backend = groups.group_backend(call, group)
    others = [k for k in call.keywords if k.arg not in ("timeout", "group")]
    positional = [a for a in call.args if a is not group]
    return (
        backend is not None
        and backend.name == "gloo"
        and keyword_argument(call, "timeout") is not None
        and not others
        and not positional
        and not has_star_arguments(call)
        and isinstance(call.func, ast.Attribute)
    )


def _monitored_barrier(ctx: CodeContext, call: ast.Call) -> Fix:
    """Call ``monitored_barrier`` instead: the attribute's last name replaced."""
    assert isinstance(call.func, ast.Attribute)
    _, _, end_line, end_column = ctx.ast_range(call.func)
    start = end_column - len(call.func.attr)
    edit = Edit(end_line, start, end_line, end_column, "monitored_barrier")
    return Fix(Applicability.UNSAFE, (edit,), "Use `monitored_barrier` (gloo) with this timeout")


def _drop_timeout(
    ctx: CodeContext,
    call: ast.Call,
    argument: ast.AST,
    timeout: ast.expr,
    orphaned: dict[str, Edit],
) -> Fix:
    """Drop the argument, and the imports that only the dropped timeouts use."""
    names = {node.id for node in ast.walk(timeout) if isinstance(node, ast.Name)}
    imports = sorted({edit for name, edit in orphaned.items() if name in names})
    return Fix(
        Applicability.UNSAFE,
        (remove_ast_argument(ctx, call, argument), *imports),
        "Drop `timeout=`; set the timeout on the process group instead",
    )
