"""DDP220: an asynchronous collective whose work handle is not waited before it matters."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.handles import Pending, UnwaitedHandle, unwaited_handles
from ddplint.code.context import CodeContext
from ddplint.finding import Finding, Severity
from ddplint.rule import CodeRule

_LIMIT = 60


class AsyncHandleNotWaited(CodeRule):
    """
    ## What it does
    Flags a `torch.distributed` collective issued with `async_op=True` (and `isend`,
    `irecv`, `batch_isend_irecv`) whose work handle is not waited, on some path, before
    it matters:

    - its output tensor is used before `wait()` (read, returned, written);
    - the name holding the handle is bound again first (a loop that keeps only the
      last handle and waits that one);
    - the function ends without waiting it, or the handle is never bound at all
      (`dist.all_reduce(t, async_op=True)` as a statement).

    Handles put in a list and waited in a later loop (`works.append(h)` ... `for w in
    works: w.wait()`, or `[w.wait() for w in works]`) are waited. A handle that leaves
    the function (returned, stored on `self` or in a dict, passed to another function,
    turned into a future with `.get_future()`, used by a nested function) is not
    followed: whoever receives it waits it. A test `if h is not None: h.wait()` is
    enough (a rank outside the group gets `None`), and so are `torch.cuda.synchronize()`
    and a blocking `dist.barrier()` (NCCL runs a group's collectives in order).
    Calls count by their resolved name: `torch.distributed` and `deepspeed.comm`.

    This rule is built on the analysis core (control flow): preview while its precision
    on code nobody tuned on is measured.

    ## Why is this bad?
    An asynchronous collective returns at once; its output tensor holds the result only
    after the handle is waited (`wait()` also makes the current CUDA stream wait for the
    communication stream). Reading the tensor earlier reads whatever it held before: the
    numbers are silently wrong, differently on each run. A handle dropped or overwritten
    is a collective nobody waits: its result, and any error it raises, are lost.

    ## Example
    ```python
    dist.all_reduce(grads, async_op=True)
    grads.div_(world_size)
    ```

    ## Use instead
    ```python
    work = dist.all_reduce(grads, async_op=True)
    ...  # independent work that overlaps the communication
    work.wait()
    grads.div_(world_size)
    ```

    ## Fix safety
    No automatic fix: where to wait (how much work may overlap) is the author's call.

    ## References
    - PyTorch docs, `torch.distributed`, "Synchronous and asynchronous collective
      operations": with `async_op=True` the output is valid only after `wait()`.
    - OpenNMT-py issue 2295: `all_reduce(..., async_op=True)` then `div_` on the buffer.
    """

    code = "DDP220"
    reads_libcst = False
    name = "async-handle-not-waited"
    summary = "asynchronous collective not waited before its result is needed"
    severity = Severity.ERROR
    default_enabled = False
    needs_peers = True
    needles = ("async_op", "isend", "irecv", "batch_isend_irecv")

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        for found in unwaited_handles(ctx.analysis):
            yield ctx.ast_finding(
                self, found.issued.call, handle_message(found), summary=_summary(found)
            )


def _spelled(node: ast.AST) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= _LIMIT else text[: _LIMIT - 3] + "..."


def _issued(found: UnwaitedHandle) -> str:
    issued = found.issued
    if issued.output is not None:
        return f"`{issued.name}` into `{issued.output}`"
    return f"`{issued.name}`"


def handle_message(found: UnwaitedHandle) -> str:
    """The whole explanation of one unwaited handle."""
    issued = _issued(found)
    holder = f"`{found.holder}`" if found.holder is not None else "its handle"
    if found.how is Pending.READ:
        at = f"`{_spelled(found.at)}`" if found.at is not None else "it"
        return (
            f"the asynchronous {issued} is used at line {found.line} ({at}) before "
            f"{holder} is waited on some path: the tensor may not hold the result yet, "
            "and the numbers are silently wrong; call `wait()` before using it"
        )
    if found.how is Pending.REBOUND:
        return (
            f"{holder}, the handle of the asynchronous {issued}, is bound again at line "
            f"{found.line} before it is waited: that collective is never waited; keep "
            "every handle (a list, waited in a loop) or wait before issuing the next"
        )
    if found.how is Pending.DISCARDED:
        return (
            f"the handle of the asynchronous {issued} is discarded: nothing waits for it, "
            "so its result may be read before it is ready and its errors are lost; keep "
            "it and call `wait()`, or drop `async_op=True`"
        )
    return (
        f"{holder}, the handle of the asynchronous {issued}, is not waited on some path to "
        "the end of the function: its result may never be ready where it is used; "
        "call `wait()` on every path (or return the handle to the caller)"
    )


def _summary(found: UnwaitedHandle) -> str:
    if found.how is Pending.READ:
        return f"`{found.issued.name}` result used before wait()"
    if found.how is Pending.REBOUND:
        return f"`{found.issued.name}` handle overwritten before wait()"
    return f"`{found.issued.name}` handle never waited"
