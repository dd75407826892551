"""DDP204: a rank-local skip of a training step before backward or a collective."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.api import STEP_FAILURES
from ddplint.analysis.caught_exceptions import StepEvent
from ddplint.analysis.root_causes import RootCauses
from ddplint.analysis.step_skips import DataSkip, data_dependent_skips
from ddplint.code.context import CodeContext
from ddplint.code.syntax.ast_snippets import SUMMARY_SNIPPET, ast_except_clause, ast_snippet
from ddplint.finding import Finding, Severity
from ddplint.rule import CodeRule


def consequence_of_skipping(backward: bool) -> str:
    """What the peers of a rank that skipped a backward (or a collective) run into."""
    if backward:
        return (
            "the other ranks' gradient all-reduce pairs with this rank's next one "
            "(silently mixed gradients) or hangs"
        )
    return (
        "the other ranks' call pairs with this rank's next collective (silently wrong data) "
        "or hangs"
    )


def catches_step_failure(handler: ast.ExceptHandler) -> bool:
    """A bare ``except`` or one naming a step failure (out of memory, ``RuntimeError``,
    ``Exception``)."""
    caught = handler.type
    if caught is None:
        return True
    elements = caught.elts if isinstance(caught, ast.Tuple) else [caught]
    return any(ast.unparse(e).rsplit(".", 1)[-1] in STEP_FAILURES for e in elements)


class DataDependentSkip(CodeRule):
    """
    ## What it does
    Flags, in a training loop (a `for`/`while` whose body reaches `backward()`,
    `manual_backward()`, `accelerator.backward(loss)` or `scaler.scale(loss).backward()`,
    directly or through a function of the same module) or a Lightning `training_step`:
    - a `continue` / `break` / `return` whose condition reads this rank's batch or loss
      (`torch.isnan(loss)`, `loss.item() > 1e4`, `batch is None`, values computed from
      them) placed before `backward()` or a collective on the same path;
    - `backward()` or a collective itself under such a condition
      (`if torch.isfinite(loss): loss.backward()`);
    - an `except RuntimeError` / `torch.cuda.OutOfMemoryError` (or broader) handler that
      swallows the failure of a `try` holding backward or a collective, or that leaves the
      step before one.

    A training loop is a `for` or `while` loop whose body runs a backward (itself or
    through a local function); its items are this rank's batch, and so is what
    `next(it)` draws in it. This rule is built on the analysis core: the batch view of the
    divergence analysis (the test reads this rank's batch, loss or model output),
    control dependence (the backward or collective the test, or an exit it decides,
    skips) and the collective effects.

    Not flagged: a skip after backward and the optimizer step; a skip decided
    collectively (the flag went through `dist.all_reduce` / `broadcast` /
    `accelerator.reduce` first); a skip on a value every rank shares (`batch_idx <
    start_step` when resuming, the epoch, a loop over a literal list of settings); a
    counter: a loop's turn number (`for step in range(n)`, also wrapped in a progress
    bar on rank 0 only: `if rank == 0: steps = tqdm(steps)`, `trange`,
    `itertools.count()`), an `enumerate` index, the entries of a mapping (`for name,
    opt in optimizers.items()`), a `+= 1` counter of the loop's turns; the epoch of a
    loop around a function that walks the loader it is handed (`for epoch in epochs:
    train_one_epoch(loader)`); a loss term that is `None` by a setting and only added to
    in place (`aux = None if not cfg.aux else torch.zeros(())`; `aux += term`); a
    question about the batch's structure (`isinstance(batch, dict)`, `"key" in batch`,
    `batch.keys()`). A `return None` or constant loss from an automatically optimised
    `training_step` is DDP205's. A test of a flag that some ranks set under a test
    of their own (`if rank == 0 and torch.isnan(loss): stop = True` ... `if not
    stop: all_gather(...)`) is DDP211's, which names the flag: one finding per root
    cause.

    ## Why is this bad?
    Each rank decides on its own batch, so one rank skips while the others do not.
    DDP's gradient all-reduce runs inside `backward()`: the skipping rank's next
    backward pairs with its peers' current one, so gradients of different steps are
    averaged together with no error (every later all-reduce is shifted by one), or the
    job hangs when the calls no longer match (BatchNorm buffers, ZeRO, a different
    collective). A swallowed out-of-memory error does the same on the rank that hit it.

    ## Example
    ```python
    for batch in loader:
        loss = model(batch)
        if torch.isnan(loss):
            continue
        loss.backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    for batch in loader:
        loss = model(batch)
        bad = torch.isnan(loss).float()
        dist.all_reduce(bad, op=dist.ReduceOp.MAX)  # every rank decides alike
        if bad.item():
            continue
        loss.backward()
        optimizer.step()
    ```
    or keep every rank in step with a zero loss tied to the parameters,
    `loss = sum(p.sum() for p in model.parameters()) * 0.0`, before `loss.backward()`
    (multiplying a NaN loss by zero still gives NaN).

    ## Fix safety
    No automatic fix: whether to skip collectively or to back-propagate a zero loss is a
    training decision.

    ## References
    - pytorch/pytorch#44353; NeMo PR 578; NVIDIA-NeMo/Automodel PR 2468.
    """

    code = "DDP204"
    name = "data-dependent-skip"
    summary = "continue/return on this rank's loss or batch before backward or a collective"
    severity = Severity.ERROR
    #: Preview since issue 23: under the bar of precision on blind code (docs/precision.md).
    default_enabled = False
    needs_peers = True
    needles = ("backward(", "training_step")

    reads_libcst = False

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        root_causes = RootCauses(ctx.analysis)
        for skip in data_dependent_skips(ctx.analysis, catches_step_failure):
            if root_causes.skip_owned_elsewhere(skip):
                continue  # DDP211's finding: it names the flag some ranks set
            message, summary = _message(ctx, skip)
            yield ctx.ast_finding(
                self,
                skip.at,
                message,
                summary=summary,
                related=[(skip.skipped.call, "what it skips")],
            )


def _skipped_text(event: StepEvent) -> str:
    if event.through is not None:
        return f"`{event.label}` (through `{event.through}`)"
    return f"`{event.label}`"


def _message(ctx: CodeContext, skip: DataSkip) -> tuple[str, str]:
    """The whole message and its short summary."""
    skipped = _skipped_text(skip.skipped)
    consequence = consequence_of_skipping(skip.skipped.backward)
    if skip.handler is not None:
        caught = ast_except_clause(ctx, skip.handler)
        return (
            f"`{caught}` swallows a failure on this rank only and skips {skipped}: "
            f"{consequence}; re-raise, or all_reduce a failure flag so every rank skips "
            "together"
        ), f"`{caught}` skips {skipped} on this rank only"
    assert skip.test is not None
    condition = ast_snippet(ctx, skip.test)
    short = ast_snippet(ctx, skip.test, SUMMARY_SNIPPET)
    when = "unless" if skip.negated else "when"
    remedy = "decide on every rank alike (all_reduce the flag with MAX) or " + (
        "back-propagate a zero loss tied to the parameters instead"
        if skip.skipped.backward
        else "make the call on every rank"
    )
    if not skip.exit:
        return (
            f"{skipped} runs only {when} `{condition}` (this rank's batch/loss): on a "
            f"rank that skips it, {consequence}; {remedy}"
        ), f"{skipped} runs only {when} `{short}` (this rank's data)"
    assert isinstance(skip.at, ast.stmt)
    statement = ast.unparse(skip.at)
    return (
        f"`{statement}` {when} `{condition}` (this rank's batch/loss) skips {skipped} "
        f"on this rank only: {consequence}; {remedy}"
    ), f"`{statement}` {when} `{short}` skips {skipped} on this rank only"
