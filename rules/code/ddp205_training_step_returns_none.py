"""DDP205: ``training_step`` returns ``None`` on a data-dependent path."""

from __future__ import annotations

from collections.abc import Iterator

from ddplint.analysis.divergence import Source
from ddplint.analysis.step_returns import LossKind, LosslessStep, lossless_step_returns
from ddplint.code.context import CodeContext
from ddplint.code.syntax.ast_snippets import SUMMARY_SNIPPET, ast_except_clause, ast_snippet
from ddplint.finding import Finding, Severity
from ddplint.rule import CodeRule
from ddplint.rules.screens import defines_training_step


class TrainingStepReturnsNone(CodeRule):
    """
    ## What it does
    Flags a `return None`, a bare `return`, or falling off the end of `training_step` in
    a LightningModule (or NeMo `ModelPT`) on a path decided by a value that differs
    between ranks: under an `if` that reads the batch, the loss or outputs computed from
    them, the rank itself (`if self.global_rank == 0:`) or a clock, or after such a test
    whose other way returns the loss (`if torch.isfinite(loss): return loss` then
    `return None`: control dependence, the analysis core's `guard_of`), or in an
    exception handler. A constant tensor returned there (`torch.tensor(0.0)`,
    `torch.zeros(1).to(self.device)`, `{"loss": torch.tensor(0.)}`) is flagged too: it
    has no graph back to the parameters.

    Modules that optimise manually (`self.automatic_optimization = False`, or a step that
    calls `manual_backward` / `self.optimizers()`) are not flagged: Lightning 2.6 accepts
    `None` from a manual `training_step` (a skip before `manual_backward` there is
    DDP204's). A `None` on a path every rank takes alike (`batch_idx < n`, a flag
    all-reduced first) is not flagged either: it fails on all ranks at once, with a clear
    error.

    ## Why is this bad?
    With automatic optimisation and more than one device, Lightning (2.3 and later)
    raises `RuntimeError: Skipping the training_step by returning None in distributed
    training is not supported` on the rank that returned `None`, and only there: the
    other ranks wait in the gradient all-reduce of their backward until the process
    group times out (30 minutes under `DDPStrategy`). Before 2.3 the rank silently
    skipped backward and the job hung (Lightning #5243). A constant tensor makes that
    rank's backward raise (`element 0 of tensors does not require grad`), or, with
    `requires_grad=True`, run without touching the parameters, so DDP's gradient
    all-reduce never starts there: the same hang. On one device the same code works,
    so the bug shows up only in multi-GPU runs.

    ## Example
    ```python
    def training_step(self, batch, batch_idx):
        if batch is None:
            return torch.tensor(0.0)
        loss = self.model(batch)
        if torch.isnan(loss):
            return None
        return loss
    ```

    ## Use instead
    ```python
    def training_step(self, batch, batch_idx):
        if batch is None:
            return self.zero_loss()
        loss = self.model(batch)
        if torch.isnan(loss):
            return self.zero_loss()
        return loss

    def zero_loss(self):
        # a zero tied to every parameter: every rank runs the same backward
        return sum(p.sum() for p in self.parameters()) * 0.0
    ```

    ## Fix safety
    No automatic fix: a zero loss keeps every rank in step but changes what the step
    does; a collectively decided skip needs manual optimisation.

    ## References
    - Lightning 2.6 `loops/optimization/automatic.py` (`_training_step`,
      `ClosureResult.from_training_step_output`), Lightning #5243.
    """

    code = "DDP205"
    needs_peers = True
    reads_libcst = False
    name = "training-step-returns-none"
    summary = "training_step returns None (or a constant loss) on a data-dependent path"
    severity = Severity.ERROR
    needles = ("training_step",)

    screened_by = staticmethod(defines_training_step)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        for step in lossless_step_returns(ctx.analysis):
            yield self._finding(ctx, step)

    def _finding(self, ctx: CodeContext, step: LosslessStep) -> Finding:
        path, guard = step.path, step.guard
        if guard is not None:
            when = "unless" if guard.negated else "when"
            short = f"{when} `{ast_snippet(ctx, guard.test, SUMMARY_SNIPPET)}`"
            why = f"{short} ({_reason(step)})"
        else:
            assert path.handler is not None
            short = "after an exception"
            why = f"after `{ast_except_clause(ctx, path.handler)}` (a failure on this rank only)"
        if path.falls_off:
            what = "`training_step` falls off the end (returns None)"
        else:
            what = f"`training_step` returns {path.kind.value} here"
        if path.kind is LossKind.NONE:
            effect = "with more than one device Lightning raises on this rank only"
        else:
            effect = (
                "it has no graph to the parameters: this rank's backward raises (no grad_fn) "
                "or, with requires_grad, never starts DDP's gradient all-reduce"
            )
        message = (
            f"{what} {why}: {effect}, while the other ranks are left in backward's "
            "all-reduce (a hang until the timeout, or a crash once this rank exits); return "
            "a zero loss tied to the parameters (`sum(p.sum() for p in self.parameters()) "
            "* 0.0`) so every rank runs backward"
        )
        returns = "falls off the end" if path.falls_off else f"returns {path.kind.value}"
        summary = f"`training_step` {returns} {short}, on this rank only"
        return ctx.ast_finding(self, step.at, message, summary=summary)


def _reason(step: LosslessStep) -> str:
    """Why the guard differs between ranks, short."""
    taint = step.taint
    if taint is None or taint.source in (Source.BATCH, Source.OUTPUT):
        return "this rank's batch/loss"
    return taint.source.value
