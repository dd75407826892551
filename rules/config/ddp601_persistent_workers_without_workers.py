"""DDP601: ``persistent_workers: true`` with ``num_workers: 0``."""

from __future__ import annotations

from collections.abc import Iterator

from ddplint.config.context import ConfigContext
from ddplint.config.edits import bool_text, replace_value
from ddplint.config.values import ABSENT, plain_scalar
from ddplint.finding import Applicability, Finding, Severity
from ddplint.rule import ConfigRule


class PersistentWorkersWithoutWorkers(ConfigRule):
    """
    ## What it does
    Flags a data-loader section of a training config (`model.train_ds`,
    `dataloader_params`, a LightningDataModule's `init_args`, ...) that sets
    `persistent_workers: true` while `num_workers` is 0 (or, in a `dataloader_params`
    block that is passed to `DataLoader` as keyword arguments, not set at all).

    ## Why is this bad?
    `torch.utils.data.DataLoader` refuses the combination when the loader is built:
    `ValueError: persistent_workers option needs num_workers > 0`. In a multi-GPU job
    that happens after the queue wait and the model set-up, on every rank.

    ## Example
    ```yaml
    model:
      train_ds:
        num_workers: 0
        persistent_workers: true
    ```

    ## Use instead
    ```yaml
    model:
      train_ds:
        num_workers: 0
        persistent_workers: false
    ```
    or keep persistent workers and set `num_workers` above 0.

    ## Fix safety
    The fix sets `persistent_workers: false`. It is safe: with no worker processes
    there is nothing to keep alive, so behaviour is unchanged except that the
    `ValueError` goes away.

    ## References
    - PyTorch docs: `torch.utils.data.DataLoader` (`persistent_workers`).
    - docs/hazards.md#ddp404: the same error in Python code.
    """

    code = "DDP601"
    name = "persistent-workers-without-workers"
    summary = "`persistent_workers: true` with `num_workers: 0` in a data-loader section"
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE
    needles = ("persistent_workers",)

    def check(self, ctx: ConfigContext) -> Iterator[Finding]:
        for doc in ctx.configs:
            for path, mapping in doc.mappings():
                if "persistent_workers" not in mapping:
                    continue
                key = (*path, "persistent_workers")
                if doc.value(key) is not True:
                    continue
                workers = doc.value((*path, "num_workers"))
                if workers is ABSENT and path and path[-1] == "dataloader_params":
                    reason = "`num_workers` is not set (DataLoader's default is 0)"
                elif isinstance(workers, int) and not isinstance(workers, bool) and workers == 0:
                    reason = "`num_workers` is 0"
                else:
                    continue
                found = doc.entry(key)
                assert found is not None
                fix = None
                if plain_scalar(found.value) is True:  # a literal, not an interpolation
                    fix = ctx.checked_fix(
                        doc,
                        [replace_value(doc, found, bool_text(doc, found, False))],
                        {key: False},
                        Applicability.SAFE,
                        "Set `persistent_workers: false`",
                    )
                message = (
                    f"is true while {reason}: building the DataLoader raises "
                    "`ValueError: persistent_workers option needs num_workers > 0`"
                )
                summary = "is true with 0 workers: the DataLoader raises"
                yield ctx.finding(self, doc, found, message, fix, summary=summary)
