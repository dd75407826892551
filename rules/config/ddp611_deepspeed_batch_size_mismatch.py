"""DDP611: a DeepSpeed ``train_batch_size`` that no data-parallel size can produce from
the micro batch and gradient accumulation (preview)."""

from __future__ import annotations

import math
from collections.abc import Iterator

from ddplint.config.context import ConfigContext
from ddplint.finding import Finding, Severity
from ddplint.rule import ConfigRule

TRAIN_BATCH = "train_batch_size"
MICRO_BATCH = "train_micro_batch_size_per_gpu"
ACCUMULATION = "gradient_accumulation_steps"


class DeepSpeedBatchSizeMismatch(ConfigRule):
    """
    ## What it does
    Flags a DeepSpeed config (a `.json` file or a YAML section, recognised by its keys:
    `train_micro_batch_size_per_gpu`, `zero_optimization`, ...) whose `train_batch_size`
    cannot equal `train_micro_batch_size_per_gpu` x `gradient_accumulation_steps` x the
    data-parallel size for any number of GPUs: it is not a multiple of the product of
    the two that are written.

    Values left to the Hugging Face integration (`"auto"`) and values that are not plain
    numbers are not compared. A value that divides evenly but needs a world size other
    than the one launched is not found: the world size in launch scripts is not read.
    Preview (opt-in): no blind measurement exists for it yet.

    ## Why is this bad?
    `deepspeed.initialize` asserts `train_batch_size == micro batch x accumulation x
    world size` (`Check batch related parameters. train_batch_size is not equal to
    micro_batch_per_gpu * gradient_acc_step * world_size`) on every rank, after the
    queue wait and the model set-up. With one of the two left out DeepSpeed derives it
    by integer division, and the same assertion fails.

    ## Example
    ```json
    {
      "train_batch_size": 64,
      "train_micro_batch_size_per_gpu": 6,
      "gradient_accumulation_steps": 4
    }
    ```

    ## Use instead
    ```json
    {
      "train_batch_size": 96,
      "train_micro_batch_size_per_gpu": 6,
      "gradient_accumulation_steps": 4
    }
    ```
    (96 = 6 x 4 x 4 GPUs), or leave `train_batch_size` out and let DeepSpeed compute it.

    ## Fix safety
    No automatic fix: which of the three numbers is wrong is the author's call.

    ## References
    - DeepSpeed docs, configuration JSON: "Batch Size related parameters"
      (`train_batch_size` = micro batch x gradient accumulation x number of GPUs).
    - DeepSpeed `DeepSpeedConfig._batch_assertion` (`deepspeed/runtime/config.py`).
    """

    code = "DDP611"
    name = "deepspeed-batch-size-mismatch"
    summary = "DeepSpeed `train_batch_size` is not micro batch x accumulation x GPUs"
    severity = Severity.ERROR
    default_enabled = False
    reads_json = True
    needles = (MICRO_BATCH, "zero_optimization")
    also_needles = (TRAIN_BATCH,)

    def check(self, ctx: ConfigContext) -> Iterator[Finding]:
        for config in ctx.deepspeed_configs:
            train = config.count(TRAIN_BATCH)
            found = config.entry(TRAIN_BATCH)
            if train is None or found is None:
                continue
            factors = {n: config.count(n) for n in (MICRO_BATCH, ACCUMULATION)}
            written = {name: value for name, value in factors.items() if value is not None}
            if not written:
                continue
            product = math.prod(written.values())
            shown = " x ".join(f"`{name}` {value}" for name, value in written.items())
            if train % product == 0:
                continue
            reason = f"is not a multiple of {shown}" + (f" = {product}" if len(written) > 1 else "")
            message = (
                f"{train} {reason}, so no number of GPUs makes it micro batch x gradient "
                "accumulation x data-parallel size: `deepspeed.initialize` asserts that "
                "equality on every rank (`Check batch related parameters`)"
            )
            yield ctx.finding(self, config.doc, found, message, summary=f"{train} {reason}")
