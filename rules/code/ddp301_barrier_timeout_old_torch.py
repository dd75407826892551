"""DDP301: ``dist.barrier(timeout=...)`` on a torch that lacks the argument."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ddplint.code.collectives.catalogue import torch_distributed_call
from ddplint.code.context import CodeContext
from ddplint.code.edits.argument_edits import remove_argument
from ddplint.code.edits.edits import replace_node
from ddplint.code.edits.unused_imports import orphaned_import_edits
from ddplint.code.ranks.process_groups import ProcessGroups
from ddplint.code.syntax.call_args import argument, has_star_arguments
from ddplint.code.syntax.constants import literal_value
from ddplint.code.torch_floor import TORCH_VERSION_SOURCE, at_least
from ddplint.finding import Applicability, Edit, Finding, Fix, Severity
from ddplint.rule import CodeRule
from ddplint.rules.prefilters import barrier_timeout_spelled

#: The first torch release whose ``barrier`` takes ``timeout``.
BARRIER_TIMEOUT_SINCE = (2, 12)
_SINCE_TEXT = ".".join(map(str, BARRIER_TIMEOUT_SINCE))
_VERSION_WORDS = ("version", "signature", "parameters")


class BarrierTimeoutOnOldTorch(CodeRule):
    """
    ## What it does
    Flags `torch.distributed.barrier(..., timeout=...)` when the project admits a torch
    older than 2.12, or when its torch version is unknown. The torch floor is read from
    `pyproject.toml` (`project.dependencies`, optional dependencies, dependency groups,
    Poetry), `setup.cfg` (`install_requires`, `extras_require`) and `requirements*.txt`;
    the `torch-version` setting in `[tool.ddplint]` overrides them.

    A call under a version check (`if torch.__version__ >= ...`, an
    `inspect.signature(...)` test) or inside `try:` with an `except TypeError:` fallback
    is not flagged.

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

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        version = ctx.options.torch_version
        if version is not None and at_least(version, BARRIER_TIMEOUT_SINCE):
            return
        groups = ProcessGroups(ctx.index, ctx.names)
        flagged = [
            (call, timeout)
            for call in ctx.index.nodes(cst.Call)
            if torch_distributed_call(ctx.names, call) == "barrier"
            and (timeout := argument(call, "timeout", 3)) is not None
            and literal_value(timeout.value) is not None
            and not _guarded(ctx, call)
        ]
        monitored = {id(call) for call, timeout in flagged if _monitored_fix(groups, call, timeout)}
        # The imports only the dropped timeouts use (`timedelta`) go with them: every fix
        # that drops a use carries the same removal, applied once when they all apply.
        orphaned = orphaned_import_edits(
            ctx, [timeout for call, timeout in flagged if id(call) not in monitored]
        )
        for call, timeout in flagged:
            if id(call) in monitored:
                fix = _monitored_barrier(ctx, call)
            else:
                fix = _drop_timeout(ctx, call, timeout, orphaned)
            yield ctx.finding(self, timeout, _message(ctx), fix, summary=_summary(ctx))


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


def _guarded(ctx: CodeContext, call: cst.Call) -> bool:
    """Inside a version check, or a ``try`` that falls back on ``TypeError``."""
    for ancestor in ctx.index.ancestors(call):
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        if isinstance(ancestor, (cst.If, cst.IfExp)) and _mentions_version(ctx, ancestor.test):
            return True
        if (
            isinstance(ancestor, cst.Try)
            and ctx.index.is_inside(call, ancestor.body)
            and any(_catches_type_error(h) for h in ancestor.handlers)
        ):
            return True
    return False


def _mentions_version(ctx: CodeContext, test: cst.BaseExpression) -> bool:
    for node in (test, *ctx.index.walk_within(test)):
        word = ""
        if isinstance(node, cst.Name):
            word = node.value
        elif isinstance(node, cst.Attribute):
            word = node.attr.value
        if any(w in word.lower() for w in _VERSION_WORDS):
            return True
    return False


def _catches_type_error(handler: cst.ExceptHandler) -> bool:
    caught = handler.type
    if caught is None:
        return False
    candidates = [e.value for e in caught.elements] if isinstance(caught, cst.Tuple) else [caught]
    return any(isinstance(c, cst.Name) and c.value == "TypeError" for c in candidates)


def _monitored_fix(groups: ProcessGroups, call: cst.Call, timeout: cst.Arg) -> bool:
    """Whether the fix can call ``monitored_barrier`` with the same timeout: a gloo group,
    the timeout by keyword, no other argument but the group."""
    group = argument(call, "group", 0)
    others = [a for a in call.args if a is not timeout and a is not group]
    return (
        groups.group_backend(call, group) == "gloo"
        and timeout.keyword is not None
        and not others
        and not has_star_arguments(call)
        and isinstance(call.func, cst.Attribute)
    )


def _monitored_barrier(ctx: CodeContext, call: cst.Call) -> Fix:
    assert isinstance(call.func, cst.Attribute)
    edit = replace_node(ctx, call.func.attr, "monitored_barrier")
    return Fix(Applicability.UNSAFE, (edit,), "Use `monitored_barrier` (gloo) with this timeout")


def _drop_timeout(
    ctx: CodeContext, call: cst.Call, timeout: cst.Arg, orphaned: dict[str, Edit]
) -> Fix:
    """Drop the argument, and the imports that only the dropped timeouts use."""
    names = {
        n.value
        for n in ctx.index.walk_within(timeout, into_functions=True)
        if isinstance(n, cst.Name)
    }
    imports = sorted({edit for name, edit in orphaned.items() if name in names})
    return Fix(
        Applicability.UNSAFE,
        (remove_argument(ctx, call, timeout), *imports),
        "Drop `timeout=`; set the timeout on the process group instead",
    )
