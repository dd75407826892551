"""DDP217: collectives counted by the values in this rank's batch."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ddplint.analysis.forms import VALUE_SELECTIONS
from ddplint.code.context import CodeContext
from ddplint.code.syntax.messages import snippet
from ddplint.code.syntax.names import dotted_name
from ddplint.code.values.divergence import Source
from ddplint.finding import Finding, Severity
from ddplint.needles import COLLECTIVE_CALL_NEEDLES, COLLECTIVE_NEEDLES
from ddplint.rule import CodeRule
from ddplint.rules.screens import loops_over_values

_DIVERGENT = frozenset({Source.DATA, Source.CONTRIBUTED, Source.DECIDED})


def _selects_values(ctx: CodeContext, iterable: cst.BaseExpression) -> bool:
    """``labels.unique()``, ``torch.unique(y)``, ``set(batch["lang"])``, ``y.tolist()``
    of a value that differs between ranks."""
    for node in (iterable, *ctx.index.walk_within(iterable)):
        if not isinstance(node, cst.Call):
            continue
        name = (dotted_name(node.func) or "").rsplit(".", 1)[-1]
        if name not in VALUE_SELECTIONS:
            continue
        found = ctx.divergence.source_of(node)
        if found is not None and found.source in _DIVERGENT:
            return True
    return False


class CollectivesPerBatchValue(CodeRule):
    """
    ## What it does
    Flags a collective whose number of calls depends on the values in this rank's
    batch: a collective (or `self.log(..., sync_dist=True)`) in a loop over the values
    present in the batch (`for c in labels.unique():`, `for lang in set(batch["lang"]):`),
    and `self.log_dict(..., sync_dist=True)` of a dictionary whose keys come from such a
    loop or comprehension (`{f"acc/{c}": ... for c in torch.unique(y)}`).

    Not flagged: loops over values every rank shares (`range(num_classes)`, a literal
    list, the keys of a fixed mapping, the model's parameters); loops over the batch's
    length.

    ## Why is this bad?
    Each rank sees different classes (languages, tasks) in its batch, so the ranks make
    different numbers of all-reduces with different keys. Lightning's `sync_dist`
    reduces each logged key with its own all-reduce: the ranks pair different keys'
    values (silently wrong metrics) or one rank waits for an all-reduce the others
    never make, until the timeout.

    ## Example
    ```python
    def validation_step(self, batch, batch_idx):
        x, y = batch
        preds = self(x).argmax(-1)
        for c in y.unique():
            acc = (preds[y == c] == c).float().mean()
            self.log(f"val_acc/{int(c)}", acc, sync_dist=True)
    ```

    ## Use instead
    ```python
    def validation_step(self, batch, batch_idx):
        x, y = batch
        preds = self(x).argmax(-1)
        self.per_class_acc.update(preds, y)  # torchmetrics MulticlassAccuracy(average=None)

    def on_validation_epoch_end(self):
        for c, acc in enumerate(self.per_class_acc.compute()):  # every class, every rank
            self.log(f"val_acc/{c}", acc)
        self.per_class_acc.reset()
    ```

    ## Fix safety
    No automatic fix: the fixed set of keys (every class) is the author's to choose.

    ## References
    - Lightning docs, "Logging: sync_dist" (values are reduced across devices per key).
    - PyTorch docs, `torch.distributed`: collectives must be called by every rank of
      the group, in the same order.
    """

    code = "DDP217"
    name = "collectives-per-batch-value"
    summary = "the number of collectives depends on the values in this rank's batch"
    severity = Severity.ERROR
    needles = COLLECTIVE_NEEDLES
    more_needles = (COLLECTIVE_CALL_NEEDLES,)

    screened_by = staticmethod(loops_over_values)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        reported: set[cst.CSTNode] = set()
        for call in ctx.collectives:
            loop = self._value_loop(ctx, call)
            if loop is None or loop in reported:
                continue
            reported.add(loop)
            repeats = "runs once" if ctx.index.is_inside(call, loop) else "reduces one key"
            message = (
                f"`{snippet(ctx, call)}` {repeats} per value of "
                f"`{snippet(ctx, _iterable_of(loop))}`, which differ between ranks' "
                "batches: the ranks make different numbers of collectives (different "
                "keys), so they pair unrelated values or one waits until the timeout. "
                "Reduce over a fixed set of keys (every class) on every rank"
            )
            yield ctx.finding(
                self, call, message, summary="collectives counted by values in this rank's batch"
            )

    @staticmethod
    def _value_loop(ctx: CodeContext, call: cst.Call) -> cst.CSTNode | None:
        """The loop or comprehension over this rank's batch values that repeats
        ``call`` (or builds the dictionary ``log_dict`` reduces)."""
        for ancestor in ctx.index.ancestors(call):
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                break
            if isinstance(ancestor, cst.For) and _selects_values(ctx, ancestor.iter):
                return ancestor
        collective = ctx.collectives[call]
        if not (collective.syncs_logged_metric and call.args):
            return None
        logged = call.args[0].value
        if isinstance(logged, (cst.DictComp, cst.ListComp, cst.GeneratorExp)):
            for clause in _for_clauses(logged):
                if _selects_values(ctx, clause.iter):
                    return logged
        if isinstance(logged, cst.Name):
            return _filling_loop(ctx, call, logged.value)
        return None


def _for_clauses(comprehension: cst.BaseComp | cst.DictComp) -> Iterator[cst.CompFor]:
    clause: cst.CompFor | None = comprehension.for_in
    while clause is not None:
        yield clause
        clause = clause.inner_for_in


def _filling_loop(ctx: CodeContext, call: cst.Call, name: str) -> cst.For | None:
    """A ``for`` over batch values, earlier in the function, that sets ``name[key]``."""
    function = ctx.index.enclosing_function(call)
    if function is None:
        return None
    position = ctx.index.order[call]
    for node in ctx.index.walk_within(function.body):
        if not isinstance(node, cst.Assign) or ctx.index.order[node] > position:
            continue
        for target in node.targets:
            subscript = target.target
            if not (
                isinstance(subscript, cst.Subscript)
                and isinstance(subscript.value, cst.Name)
                and subscript.value.value == name
            ):
                continue
            loop = ctx.index.enclosing(node, cst.For)
            if loop is not None and _selects_values(ctx, loop.iter):
                return loop
    return None


def _iterable_of(loop: cst.CSTNode) -> cst.CSTNode:
    if isinstance(loop, cst.For):
        return loop.iter
    if isinstance(loop, (cst.DictComp, cst.ListComp, cst.GeneratorExp)):
        return loop.for_in.iter
    return loop
