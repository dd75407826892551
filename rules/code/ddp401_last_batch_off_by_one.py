"""DDP401: a last-batch or stepping condition off by one."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ddplint.code.context import CodeContext
from ddplint.code.edits.edits import replace_node
from ddplint.code.steps.batch_conditions import (
    LastBatchTest,
    PeriodicTest,
    last_batch_test,
    periodic_test,
)
from ddplint.code.steps.loop_facts import EnumerateLoop, enumerate_loops
from ddplint.code.syntax.constants import literal_value
from ddplint.code.syntax.names import dotted_name
from ddplint.finding import Applicability, Edit, Finding, Fix, Severity
from ddplint.rule import CodeRule
from ddplint.rules.prefilters import enumerate_counter_tested

_EXITS = (cst.Break, cst.Continue, cst.Return, cst.Pass)
# Text pre-filter: the counter of ``for i, x in enumerate(...)``, then ``i == <not a
# number>`` / ``i + 1 != ...`` / ``== i`` and ``(i + 1) %``.


class LastBatchOffByOne(CodeRule):
    """
    ## What it does
    In a `for i, batch in enumerate(loader[, start])` loop, flags tests on the counter
    that are off by one, matching the enumerate start and the same iterable
    (`len(loader)` or a name bound to it, `num_batches = len(loader)`):

    - `i == len(loader)` with a 0-based enumerate: never true (`!=`: always true);
    - `i == len(loader) - 1` with `start=1`: true one batch early;
    - after `backward()`, an optimizer step under `i % k == 0` (0-based): it steps on
      the first batch alone, then every k (likewise `(i + 1) % k == 0` with `start=1`:
      the first group is one batch short);
    - after `backward()`, an optimizer step under `(i + 1) % k == 0` with no tail flush
      (`or i == len(loader) - 1`, or a step after the loop): the last
      `len(loader) % k` batches are never stepped.

    A never-true test that only leaves the loop (`if i == num_batches: break`) caps an
    endless iterator and is not flagged; neither are tests on another iterable or on a
    counter the body reassigns.

    ## Why is this bad?
    The code under a last-batch test runs once per epoch: flushing gradients, an
    `all_gather` of metrics, a barrier, closing a progress bar. Off by one, it never runs
    (or runs before the last batch), silently; when it holds a collective, the ranks
    disagree at the end of the epoch and hang. Changing `len(loader) - 1` to
    `len(loader)` with a 0-based `enumerate` is exactly how one team turned a hang
    at batch 62/62 into dead code.

    ## Example
    ```python
    for batch_idx, batch in enumerate(loader):
        loss = model(batch)
        loss.backward()
        if (batch_idx + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
        if batch_idx == len(loader):
            dist.all_reduce(epoch_loss)
    ```

    ## Use instead
    ```python
    for batch_idx, batch in enumerate(loader):
        loss = model(batch)
        loss.backward()
        last = batch_idx == len(loader) - 1
        if (batch_idx + 1) % accum == 0 or last:
            optimizer.step()
            optimizer.zero_grad()
        if last:
            dist.all_reduce(epoch_loss)
    ```

    ## Fix safety
    For the definite forms (never true, one early, stepping on the first batch) the fix
    corrects the arithmetic and is safe. Adding the tail flush is unsafe: it changes
    how many steps an epoch takes, and `len()` must work on the iterable.

    ## References
    - Python docs: `enumerate(iterable, start=0)`.
    """

    code = "DDP401"
    name = "last-batch-off-by-one"
    summary = "last-batch or stepping condition off by one"
    severity = Severity.WARNING
    default_enabled = False
    fix_applicability = Applicability.SAFE
    needles = ("enumerate",)
    narrowed_by = staticmethod(enumerate_counter_tested)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        for loop in enumerate_loops(ctx):
            if loop.start is None:
                continue
            for node in ctx.index.walk_within(loop.loop.body):
                if isinstance(node, cst.Comparison):
                    test = last_batch_test(loop, node)
                    if test is not None:
                        yield from self._last_batch(ctx, loop, test)
                elif isinstance(node, cst.If):
                    yield from self._stepping(ctx, loop, node)

    def _last_batch(
        self, ctx: CodeContext, loop: EnumerateLoop, test: LastBatchTest
    ) -> Iterator[Finding]:
        assert loop.start is not None
        past = test.batches_past_last(loop.start)
        if past not in (1, -1):
            return
        if past == 1 and test.equal and _only_exits(ctx, test.comparison):
            return
        text = ctx.node_text(test.comparison)
        right = _last_batch_text(ctx, loop, test.length)
        if past == 1:
            what = "never true" if test.equal else "always true"
            message = (
                f"`{text}` is {what}: `enumerate` counts from {loop.start}, so the last pass "
                f"is `{loop.counter} == {right}`; the code it guards silently "
                f"{'never runs' if test.equal else 'runs on every pass'}"
            )
            summary = f"`{text}` is {what} (the last pass is `{loop.counter} == {right}`)"
        else:
            message = (
                f"`{text}` tests the pass before the last: with `enumerate(..., start="
                f"{loop.start})` the last pass is `{loop.counter} == {right}`"
            )
            summary = f"`{text}` tests the pass before the last"
        edits = [_replace_parenthesised(ctx, test.length_side, right)]
        if not loop.is_counter(test.counter_side):
            edits.append(_replace_parenthesised(ctx, test.counter_side, loop.counter))
        fix = Fix(Applicability.SAFE, tuple(edits), f"Test `{loop.counter} == {right}`")
        yield ctx.finding(self, test.comparison, message, fix, summary=summary)

    def _stepping(self, ctx: CodeContext, loop: EnumerateLoop, branch: cst.If) -> Iterator[Finding]:
        test = periodic_test(loop, branch.test)
        if test is None or not _steps_optimizer(ctx, branch.body):
            return
        if not _after_backward(ctx, loop, branch):
            return
        assert loop.start is not None
        period = ctx.node_text(test.period)
        off_by = test.groups_off_by(loop.start)
        if off_by in (1, -1):
            counter = _counter_plus(loop.counter, 1 - loop.start)
            when = (
                "on the first batch, after one batch of gradients"
                if off_by == 1
                else f"after {_minus_one(test.period, period)} batches"
            )
            message = (
                f"`{ctx.node_text(test.test)}` steps the optimizer {when}, then every "
                f"{period}: counting from {loop.start}, every {period}-th batch is "
                f"`{counter} % {period} == 0`"
            )
            edit = _replace_parenthesised(ctx, test.counter_side, counter)
            fix = Fix(Applicability.SAFE, (edit,), f"Test `{counter} % {period} == 0`")
            summary = f"`{ctx.node_text(test.test)}` steps the optimizer {when.split(',')[0]}"
            yield ctx.finding(self, test.test, message, fix, summary=summary)
        elif off_by == 0 and not _flushed_after(ctx, loop):
            message = (
                f"`{ctx.node_text(test.test)}` steps only after full groups of {period} "
                f"batches: when the epoch's batch count is not a multiple of {period}, the "
                "gradients of its last batches are silently never stepped (they leak into "
                "the next epoch); step on the last batch too"
            )
            summary = f"`{ctx.node_text(test.test)}` never steps the epoch's last partial group"
            tail_fix = _tail_fix(ctx, loop, test)
            yield ctx.finding(self, test.test, message, tail_fix, summary=summary)


def _replace_parenthesised(ctx: CodeContext, node: cst.BaseExpression, text: str) -> Edit:
    """Replace ``node`` together with the parentheses around it."""
    if not node.lpar:
        return replace_node(ctx, node, text)
    line, column, _, _ = ctx.range_of(node.lpar[0])
    _, _, end_line, end_column = ctx.range_of(node.rpar[-1])
    return Edit(line, column, end_line, end_column, text)


def _minus_one(period: cst.BaseExpression, text: str) -> str:
    value = literal_value(period)
    return str(value - 1) if isinstance(value, int) else f"{text} - 1"


def _counter_plus(counter: str, offset: int) -> str:
    if offset == 0:
        return counter
    sign = "+" if offset > 0 else "-"
    return f"({counter} {sign} {abs(offset)})"


def _last_batch_text(ctx: CodeContext, loop: EnumerateLoop, length: cst.BaseExpression) -> str:
    """``len(loader) - 1`` (0-based) / ``len(loader)`` (1-based): the last counter."""
    assert loop.start is not None
    offset = loop.start - 1
    text = ctx.node_text(length)
    if offset == 0:
        return text
    return f"{text} {'+' if offset > 0 else '-'} {abs(offset)}"


def _only_exits(ctx: CodeContext, comparison: cst.Comparison) -> bool:
    """``if <comparison>: break`` (or continue/return/pass): a cap, not last-batch work."""
    branch = ctx.index.parent.get(comparison)
    if not isinstance(branch, cst.If) or branch.test is not comparison or branch.orelse:
        return False
    body = branch.body
    statements = (
        body.body if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)) else ()
    )
    smalls: list[cst.CSTNode] = []
    for statement in statements:
        if isinstance(statement, cst.SimpleStatementLine):
            smalls.extend(statement.body)
        else:
            smalls.append(statement)
    return bool(smalls) and all(isinstance(s, _EXITS) for s in smalls)


def _steps_optimizer(ctx: CodeContext, body: cst.CSTNode) -> bool:
    for node in ctx.index.walk_within(body):
        if isinstance(node, cst.Call) and _is_optimizer_step(node):
            return True
    return False


def _is_optimizer_step(call: cst.Call) -> bool:
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in ("step", "optimizer_step"):
        return False
    if func.attr.value == "optimizer_step":
        return True
    receiver = func.value
    while isinstance(receiver, cst.Subscript):
        receiver = receiver.value
    name = (dotted_name(receiver) or "").rsplit(".", 1)[-1].lower()
    return "optim" in name or name in ("opt", "scaler") or name.startswith("opt_")


def _after_backward(ctx: CodeContext, loop: EnumerateLoop, branch: cst.If) -> bool:
    """A ``backward()`` call in the loop body precedes ``branch``."""
    position = ctx.index.order[branch]
    for node in ctx.index.walk_within(loop.loop.body):
        if ctx.index.order[node] >= position:
            return False
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in ("backward", "manual_backward")
        ):
            return True
    return False


def _flushed_after(ctx: CodeContext, loop: EnumerateLoop) -> bool:
    """An optimizer step after the loop, in the same function."""
    scope = ctx.index.enclosing_function(loop.loop) or ctx.module
    end = max(ctx.index.order[n] for n in (loop.loop, *ctx.index.walk_within(loop.loop)))
    return any(
        ctx.index.order[node] > end and isinstance(node, cst.Call) and _is_optimizer_step(node)
        for node in ctx.index.walk_within(scope)
    )


def _tail_fix(ctx: CodeContext, loop: EnumerateLoop, test: PeriodicTest) -> Fix | None:
    if loop.iterable_name is None:
        return None
    assert loop.start is not None
    offset = loop.start - 1
    length = f"len({loop.iterable_name})"
    if offset:
        length += f" {'+' if offset > 0 else '-'} {abs(offset)}"
    _, _, end_line, end_column = ctx.range_of(test.test)
    edit = Edit(end_line, end_column, end_line, end_column, f" or {loop.counter} == {length}")
    return Fix(Applicability.UNSAFE, (edit,), "Step on the last batch too")
