"""DDP217: collectives counted by the values in this rank's batch."""

from __future__ import annotations

from collections.abc import Iterator

from ddplint.analysis.value_loops import collectives_per_batch_value
from ddplint.code.context import CodeContext
from ddplint.finding import Finding, Severity
from ddplint.needles import COLLECTIVE_CALL_NEEDLES, COLLECTIVE_NEEDLES
from ddplint.rule import CodeRule
from ddplint.rules.code.ddp219_ranks_part_before_collective import header_text
from ddplint.rules.screens import loops_over_values


class CollectivesPerBatchValue(CodeRule):
    """
    ## What it does
    Flags a collective whose number of calls depends on the values in this rank's
    batch: a collective (or `self.log(..., sync_dist=True)`) in a loop over the values
    present in the batch (`for c in labels.unique():`, `for lang in set(batch["lang"]):`),
    and `self.log_dict(..., sync_dist=True)` of a dictionary whose keys come from such a
    loop or comprehension (`{f"acc/{c}": ... for c in torch.unique(y)}`).

    Which values a batch holds is asked of the analysis core's batch view (a
    LightningModule step's batch, a training loop's items, a model's output).

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
    needs_peers = True
    name = "collectives-per-batch-value"
    summary = "the number of collectives depends on the values in this rank's batch"
    severity = Severity.ERROR
    needles = COLLECTIVE_NEEDLES
    more_needles = (COLLECTIVE_CALL_NEEDLES,)

    reads_libcst = False
    screened_by = staticmethod(loops_over_values)

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        for found in collectives_per_batch_value(ctx.analysis):
            repeats = "runs once" if found.inside else "reduces one key"
            message = (
                f"`{header_text(found.call)}` {repeats} per value of "
                f"`{header_text(found.iterable)}`, which differ between ranks' "
                "batches: the ranks make different numbers of collectives (different "
                "keys), so they pair unrelated values or one waits until the timeout. "
                "Reduce over a fixed set of keys (every class) on every rank"
            )
            yield ctx.ast_finding(
                self,
                found.call,
                message,
                summary="collectives counted by values in this rank's batch",
                related=[(found.loop, "the loop over this rank's batch values")],
            )
