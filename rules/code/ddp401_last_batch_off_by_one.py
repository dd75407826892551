"""DDP401: a last-batch or stepping condition off by one."""

from __future__ import annotations

import ast
import keyword
import re
import sys
from collections.abc import Iterator

from ddplint.analysis.api import BACKWARD_METHODS
from ddplint.analysis.batches import enclosing_loop
from ddplint.analysis.constants import nodes_within, scope_nodes
from ddplint.analysis.control_flow import Scope
from ddplint.analysis.enumerate_loops import (
    EnumerateLoop,
    EnumerateLoops,
    LastBatchTest,
    PeriodicTest,
    unwrap_progress,
)
from ddplint.analysis.names import dotted_name, passed_argument
from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import ast_node_text
from ddplint.finding import Applicability, Edit, Finding, Fix, Severity
from ddplint.rule import CodeRule
from ddplint.rules.prefilters import enumerate_counter_tested

_EXITS = (ast.Break, ast.Continue, ast.Return, ast.Pass)


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
    counter the body reassigns. A stepping test whose period defaults to 1 (a
    parameter's, an option's or a config field's declared default: every batch steps
    unless the user chooses more) is not flagged; nor is a missing tail flush where the
    gradients are cleared each time before the loop starts (`zero_grad()` at the top of
    the epoch loop or of the function that walks one epoch: the remainder is dropped on
    purpose, not carried into the next epoch), and neither is the missing tail flush
    over an iterable that never runs out (`itertools.cycle(loader)`, a generator looping
    forever, a class whose `__iter__` restarts the loader, of this module or another, or
    a wrapper of one: a prefetcher that yields the items of what it wraps until they
    end): it has no epoch end.

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

    This rule is built on the analysis core (the enumerate loops, their last-batch and
    periodic tests, on Python's `ast`).

    ## References
    - Python docs: `enumerate(iterable, start=0)`.
    """

    code = "DDP401"
    reads_libcst = False
    name = "last-batch-off-by-one"
    summary = "last-batch or stepping condition off by one"
    severity = Severity.WARNING
    default_enabled = False
    fix_applicability = Applicability.SAFE
    needles = ("enumerate",)
    narrowed_by = staticmethod(enumerate_counter_tested)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        analysis = ctx.analysis
        for loop in EnumerateLoops(analysis.nodes, analysis.names, analysis.constants):
            if loop.start is None:
                continue
            for node in nodes_within(loop.loop.body):
                if isinstance(node, ast.Compare):
                    test = loop.last_batch_test(node)
                    if test is not None:
                        yield from self._last_batch(ctx, loop, test)
                elif isinstance(node, ast.If):
                    yield from self._stepping(ctx, loop, node)

    def _last_batch(
        self, ctx: CodeContext, loop: EnumerateLoop, test: LastBatchTest
    ) -> Iterator[Finding]:
        assert loop.start is not None
        past = test.batches_past_last(loop.start)
        if past not in (1, -1):
            return
        if past == 1 and test.equal and _only_exits(loop, test.comparison):
            return
        text = ast_node_text(ctx, test.comparison)
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
        yield ctx.ast_finding(self, test.comparison, message, summary=summary, fix=fix)

    def _stepping(self, ctx: CodeContext, loop: EnumerateLoop, branch: ast.If) -> Iterator[Finding]:
        test = loop.periodic_test(branch.test)
        if test is None or not _steps_optimizer(branch.body):
            return
        if not _after_backward(loop, branch) or _one_unless_chosen(ctx, loop, test):
            return
        assert loop.start is not None
        test_text = ast_node_text(ctx, test.test)
        period = ast_node_text(ctx, test.period)
        off_by = test.groups_off_by(loop.start)
        if off_by in (1, -1):
            counter = _counter_plus(loop.counter, 1 - loop.start)
            when = (
                "on the first batch, after one batch of gradients"
                if off_by == 1
                else f"after {_minus_one(loop, test.period, period)} batches"
            )
            message = (
                f"`{test_text}` steps the optimizer {when}, then every "
                f"{period}: counting from {loop.start}, every {period}-th batch is "
                f"`{counter} % {period} == 0`"
            )
            edit = _replace_parenthesised(ctx, test.counter_side, counter)
            fix = Fix(Applicability.SAFE, (edit,), f"Test `{counter} % {period} == 0`")
            summary = f"`{test_text}` steps the optimizer {when.split(',')[0]}"
            yield ctx.ast_finding(self, test.test, message, summary=summary, fix=fix)
        elif off_by == 0 and not _flushed_after(ctx, loop) and not _endless(ctx, loop):
            if _cleared_before(ctx, loop):
                return
            message = (
                f"`{test_text}` steps only after full groups of {period} "
                f"batches: when the epoch's batch count is not a multiple of {period}, the "
                "gradients of its last batches are silently never stepped (they leak into "
                "the next epoch); step on the last batch too"
            )
            summary = f"`{test_text}` never steps the epoch's last partial group"
            tail_fix = _tail_fix(ctx, loop, test)
            yield ctx.ast_finding(self, test.test, message, summary=summary, fix=tail_fix)


def _replace_parenthesised(ctx: CodeContext, node: ast.expr, text: str) -> Edit:
    """Replace ``node`` together with the grouping parentheses right around it (``ast``
    spans leave them out; a call's parentheses stay)."""
    line, column, end_line, end_column = ctx.ast_range(node)
    lines = ctx.source.lines
    while True:
        before = lines[line - 1][: column - 1].rstrip()
        after = lines[end_line - 1][end_column - 1 :].lstrip()
        if not (before.endswith("(") and after.startswith(")")) or _calls(before[:-1]):
            return Edit(line, column, end_line, end_column, text)
        column = len(before)
        end_column = len(lines[end_line - 1]) - len(after) + 2


def _calls(prefix: str) -> bool:
    """Whether a ``(`` right after ``prefix`` opens a call (or a subscript's call), not
    a group: a name that is not a keyword, or a closing bracket, comes before it."""
    prefix = prefix.rstrip()
    word = re.search(r"\w+$", prefix)
    return prefix.endswith((")", "]")) or (word is not None and not keyword.iskeyword(word[0]))


def _minus_one(loop: EnumerateLoop, period: ast.expr, text: str) -> str:
    value = loop.value(period)
    return str(value - 1) if isinstance(value, int) else f"{text} - 1"


def _counter_plus(counter: str, offset: int) -> str:
    if offset == 0:
        return counter
    sign = "+" if offset > 0 else "-"
    return f"({counter} {sign} {abs(offset)})"


def _last_batch_text(ctx: CodeContext, loop: EnumerateLoop, length: ast.expr) -> str:
    """``len(loader) - 1`` (0-based) / ``len(loader)`` (1-based): the last counter."""
    assert loop.start is not None
    offset = loop.start - 1
    text = ast_node_text(ctx, length)
    if offset == 0:
        return text
    return f"{text} {'+' if offset > 0 else '-'} {abs(offset)}"


def _only_exits(loop: EnumerateLoop, comparison: ast.Compare) -> bool:
    """``if <comparison>: break`` (or continue/return/pass): a cap, not last-batch work."""
    return any(
        isinstance(branch, ast.If)
        and branch.test is comparison
        and not branch.orelse
        and all(isinstance(s, _EXITS) for s in branch.body)
        for branch in nodes_within(loop.loop.body)
    )


def _steps_optimizer(body: list[ast.stmt]) -> bool:
    return any(isinstance(n, ast.Call) and _is_optimizer_step(n) for n in nodes_within(body))


def _is_optimizer_step(call: ast.Call) -> bool:
    """``<optimizer>.step()`` or ``optimizer_step(...)``. The receiver is told by its
    last name (the LibCST rule's test, kept as it was: not yet by its allocation)."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in ("step", "optimizer_step"):
        return False
    if func.attr == "optimizer_step":
        return True
    receiver = func.value
    while isinstance(receiver, ast.Subscript):
        receiver = receiver.value
    name = (dotted_name(receiver) or "").rsplit(".", 1)[-1].lower()
    return "optim" in name or name in ("opt", "scaler") or name.startswith("opt_")


def _after_backward(loop: EnumerateLoop, branch: ast.If) -> bool:
    """A ``backward()`` call in the loop body precedes ``branch``."""
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in BACKWARD_METHODS
        and _position(node) < _position(branch)
        for node in nodes_within(loop.loop.body)
    )


def _flushed_after(ctx: CodeContext, loop: EnumerateLoop) -> bool:
    """An optimizer step after the loop, in the same function, before any later loop
    starts (a later loop's backward adds to the partial group before such a step)."""
    scope: Scope = ctx.analysis.constants.owner_of(_loop_scope(ctx, loop))
    end = (loop.loop.end_lineno or loop.loop.lineno, loop.loop.end_col_offset or 0)
    nodes = list(scope_nodes(scope))
    next_loop = min(
        (
            _position(node)
            for node in nodes
            if isinstance(node, (ast.For, ast.AsyncFor, ast.While)) and _position(node) > end
        ),
        default=(sys.maxsize, 0),
    )
    return any(
        isinstance(node, ast.Call)
        and end < _position(node) < next_loop
        and _is_optimizer_step(node)
        for node in nodes
    )


def _cleared_before(ctx: CodeContext, loop: EnumerateLoop) -> bool:
    """A ``zero_grad()`` each time before the loop starts: after the start of the loop
    around it (an epoch loop), or of its function where none is. A partial group left
    by the last epoch is then dropped on purpose, not carried into the next one."""
    scope: Scope = ctx.analysis.constants.owner_of(_loop_scope(ctx, loop))
    start = _position(loop.loop)
    around = enclosing_loop(scope, loop.loop)
    after = _position(around if around is not None else scope)
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "zero_grad"
        and after < _position(node) < start
        for node in scope_nodes(scope)
    )


def _loop_scope(ctx: CodeContext, loop: EnumerateLoop) -> Scope:
    iterable = loop.loop.iter  # the ``enumerate(...)`` call
    made_in = ctx.analysis.nodes.scope_of_call(iterable) if isinstance(iterable, ast.Call) else None
    return made_in or ctx.analysis.module


def _one_unless_chosen(ctx: CodeContext, loop: EnumerateLoop, test: PeriodicTest) -> bool:
    """Whether the period is 1 unless the user chooses more: its declared default (a
    parameter's, an option's, a config field's) is at most 1, so every batch steps."""
    default = ctx.analysis.fallback_defaults.of(test.period, _loop_scope(ctx, loop))
    if default is None:
        return False
    value = default.value  # None or a flag: the caller must give a number, not a default
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 1


def _endless(ctx: CodeContext, loop: EnumerateLoop) -> bool:
    """Whether the loop walks an iterable that never runs out (no epoch end: no group
    is left over there)."""
    call = loop.loop.iter  # the ``enumerate(...)`` call
    enumerated = passed_argument(call, "iterable", 0) if isinstance(call, ast.Call) else None
    if enumerated is None:
        return False
    walked = unwrap_progress(ctx.analysis.names, enumerated)
    return ctx.analysis.endless_iterables.is_endless(walked, _loop_scope(ctx, loop))


def _position(node: ast.AST) -> tuple[int, int]:
    return getattr(node, "lineno", 0), getattr(node, "col_offset", 0)


def _tail_fix(ctx: CodeContext, loop: EnumerateLoop, test: PeriodicTest) -> Fix | None:
    if loop.iterable_name is None:
        return None
    assert loop.start is not None
    offset = loop.start - 1
    length = f"len({loop.iterable_name})"
    if offset:
        length += f" {'+' if offset > 0 else '-'} {abs(offset)}"
    _, _, end_line, end_column = ctx.ast_range(test.test)
    edit = Edit(end_line, end_column, end_line, end_column, f" or {loop.counter} == {length}")
    return Fix(Applicability.UNSAFE, (edit,), "Step on the last batch too")
