"""DDP205: ``training_step`` returns ``None`` on a data-dependent path."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ddplint.code.context import CodeContext
from ddplint.code.steps.lossless_returns import LossKind, LosslessReturn, lossless_returns
from ddplint.code.syntax.messages import SUMMARY_SNIPPET, except_clause, snippet
from ddplint.finding import Finding, Severity
from ddplint.rule import CodeRule
from ddplint.rules.screens import defines_training_step


class TrainingStepReturnsNone(CodeRule):
    """
    ## What it does
    Flags a `return None`, a bare `return`, or falling off the end of `training_step` in
    a LightningModule (or NeMo `ModelPT`) on a path decided by this rank's data: under an
    `if` that reads the batch, the loss or outputs computed from them, or in an
    exception handler. A constant tensor returned there (`torch.tensor(0.0)`,
    `torch.zeros(1).to(self.device)`, `{"loss": torch.tensor(0.)}`) is flagged too: it
    has no graph back to the parameters.

    Modules that optimise manually (`self.automatic_optimization = False`, or a step that
    calls `manual_backward` / `self.optimizers()`) are not flagged: Lightning 2.6 accepts
    `None` from a manual `training_step` (a skip before `manual_backward` there is
    DDP204's). A `None` on a path every rank takes alike (`batch_idx < n`) is not flagged
    either: it fails on all ranks at once, with a clear error.

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
    name = "training-step-returns-none"
    summary = "training_step returns None (or a constant loss) on a data-dependent path"
    severity = Severity.ERROR
    needles = ("training_step",)

    screened_by = staticmethod(defines_training_step)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        steps = ctx.training_steps
        for function in ctx.index.nodes(cst.FunctionDef):
            if not steps.is_training_step(function) or steps.uses_manual_optimization(function):
                continue
            reported: set[tuple[int, int]] = set()
            for path in lossless_returns(ctx.index, ctx.names, function):
                finding = self._finding(ctx, path)
                if finding is not None and (finding.line, finding.column) not in reported:
                    reported.add((finding.line, finding.column))
                    yield finding

    def _finding(self, ctx: CodeContext, path: LosslessReturn) -> Finding | None:
        data_guard = next(
            (g for g in path.guards if ctx.data_dependence.is_data_dependent(g.test)), None
        )
        if data_guard is None and path.handler is None:
            return None
        if data_guard is not None:
            when = "unless" if data_guard.negated else "when"
            short = f"{when} `{snippet(ctx, data_guard.test, SUMMARY_SNIPPET)}`"
            why = f"{short} (this rank's batch/loss)"
        else:
            assert path.handler is not None
            short = "after an exception"
            why = f"after `{except_clause(ctx, path.handler)}` (a failure on this rank only)"
        node: cst.CSTNode = path.node
        if path.falls_off:
            what = "`training_step` falls off the end (returns None)"
            if data_guard is not None:
                node = data_guard.test
            elif path.handler is not None and path.handler.type is not None:
                node = path.handler.type
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
        return ctx.finding(self, node, message, summary=summary)
