"""DDP212: a data exception caught and turned into a skip of a training step."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.caught_exceptions import StepEvent, swallowed_exceptions
from ddplint.code.context import CodeContext
from ddplint.code.syntax.ast_snippets import ast_except_clause
from ddplint.finding import Finding, Severity
from ddplint.rule import CodeRule
from ddplint.rules.code.ddp204_data_dependent_skip import consequence_of_skipping
from ddplint.rules.screens import catches_a_data_exception, names_a_data_exception


def _catches_data_exception(handler: ast.ExceptHandler) -> bool:
    """A handler naming an exception a batch can raise on one rank, other than the
    step failures (out of memory, ``RuntimeError``) that DDP204 reports."""
    return names_a_data_exception(caught_names(handler))


def caught_names(handler: ast.ExceptHandler) -> list[str]:
    """The last dotted part of each exception type a handler names (none for ``except:``)."""
    caught = handler.type
    if caught is None:
        return []
    elements = caught.elts if isinstance(caught, ast.Tuple) else [caught]
    return [ast.unparse(element).rsplit(".", 1)[-1] for element in elements]


class SwallowedExceptionSkipsStep(CodeRule):
    """
    ## What it does
    Flags, in a training loop or a Lightning `training_step`, an `except` handler for an
    exception raised by the data (a project's own exception such as `SkipBatch` or
    `BadSampleError`, `ValueError`, `KeyError`, `IndexError`, `AssertionError`,
    `OSError`, ...) that swallows it, or leaves with `continue` / `return`, before
    `backward()` or a collective that the other ranks still run.

    A training loop is a loop whose body runs a backward, itself or through a local
    function that does (`train_step(model, batch)`); the skipped backward or collective
    may also be run through a local function, and the `try` may stand in a local
    function the loop hands its batch to. It is built on the analysis core: the
    control-flow graph with its exception edges (what the `try` body's way reaches
    before the next iteration and no way out of the handler does), the batch view of
    the divergence analysis (the `try` body computes on this rank's batch), and the
    collective effects.

    Not flagged: handlers that re-raise; `StopIteration` and other exceptions that end
    iteration or the program; `RuntimeError` / out-of-memory / bare `except` (DDP204
    reports those); a failure recorded in a flag that the ranks then `all_reduce`
    before deciding; a `try` body that reads only values every rank shares (it raises
    on every rank or on none); a handler that issues collectives of its own.

    ## Why is this bad?
    The exception comes from this rank's own batch, so one rank skips the step while
    its peers run it. DDP's gradient all-reduce runs inside `backward()`: the skipping
    rank's next backward pairs with the others' current one, so gradients of different
    steps are averaged with no error, or the job hangs when the calls no longer match.

    ## Example
    ```python
    for batch in loader:
        try:
            loss = model(prepare(batch))  # prepare raises SkipBatch on a bad sample
        except SkipBatch:
            continue
        loss.backward()
    ```

    ## Use instead
    ```python
    for batch in loader:
        failed = torch.zeros((), device=device)
        try:
            loss = model(prepare(batch))
        except SkipBatch:
            failed.fill_(1)
        dist.all_reduce(failed, op=dist.ReduceOp.MAX)  # every rank skips together
        if failed.item():
            continue
        loss.backward()
    ```
    or filter bad samples in the dataset / collate function so every rank gets a batch.

    ## Fix safety
    No automatic fix: whether to skip together or to repair the batch is a training
    decision.

    ## References
    - PyTorch docs, DistributedDataParallel: gradients are all-reduced during
      `backward()`, and every rank must run the same collectives.
    - pytorch/pytorch#44353 (ranks skipping a step hang or desynchronise).
    """

    code = "DDP212"
    needs_peers = True
    name = "swallowed-exception-skips-step"
    summary = "a data exception caught on one rank skips backward or a collective"
    severity = Severity.ERROR
    needles = ("except",)
    also_needles = ("backward(", "training_step")

    screened_by = staticmethod(catches_a_data_exception)
    reads_libcst = False

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        for skip in swallowed_exceptions(ctx.analysis, _catches_data_exception):
            event = skip.skipped
            caught = ast_except_clause(ctx, skip.handler)
            message = (
                f"`{caught}` catches an exception of this rank's batch and "
                f"skips {_event_text(event)} on this rank only: "
                f"{consequence_of_skipping(event.backward)}; record the failure in a flag "
                "and all_reduce it (MAX) so every rank skips together, or filter the "
                "sample in the data pipeline"
            )
            assert skip.handler.type is not None
            yield ctx.ast_finding(
                self,
                skip.handler.type,
                message,
                summary="caught data exception skips a step",
                related=[
                    (skip.raised, "the per-batch work that may raise"),
                    (event.call, "what the handler skips"),
                ],
            )


def _event_text(event: StepEvent) -> str:
    """``loss.backward()``, with the local function that runs it."""
    if event.through is not None:
        return f"`{event.label}` (through `{event.through}`)"
    return f"`{event.label}`"
