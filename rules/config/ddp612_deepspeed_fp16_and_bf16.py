"""DDP612: a DeepSpeed config that enables both ``fp16`` and ``bf16`` (preview)."""

from __future__ import annotations

from collections.abc import Iterator

from ddplint.config.context import ConfigContext
from ddplint.config.deepspeed import BF16_KEYS, FP16_KEYS
from ddplint.config.document import dotted
from ddplint.finding import Finding, Severity
from ddplint.rule import ConfigRule


class DeepSpeedFp16AndBf16(ConfigRule):
    """
    ## What it does
    Flags a DeepSpeed config (a `.json` file or a YAML section, recognised by its keys)
    whose `fp16` section and `bf16` section (or its old name `bfloat16`) both say
    `enabled: true`. `"auto"` (filled in by the Hugging Face integration from the
    trainer's own flags) is not flagged. Preview (opt-in): no blind measurement exists
    for it yet.

    ## Why is this bad?
    DeepSpeed refuses the combination when the config is parsed, on every rank:
    `AssertionError: bfloat16 and fp16 modes cannot be simultaneously enabled`. It comes
    after the queue wait and the model load; a config that switches one on by
    default and the other from a flag fails only in some runs.

    ## Example
    ```json
    {
      "train_micro_batch_size_per_gpu": 4,
      "fp16": {"enabled": true, "loss_scale": 0},
      "bf16": {"enabled": true}
    }
    ```

    ## Use instead
    ```json
    {
      "train_micro_batch_size_per_gpu": 4,
      "fp16": {"enabled": false},
      "bf16": {"enabled": true}
    }
    ```
    (bf16 on GPUs that support it; fp16 with loss scaling elsewhere).

    ## Fix safety
    No automatic fix: which precision the run should use is the author's call.

    ## References
    - DeepSpeed 0.19.8, `deepspeed/runtime/config.py` (`DeepSpeedConfig`): the
      assertion.
    - Snowflake-AI-Research/Arctic-Platform PR 78 (a bf16 default added to a config
      that already enabled fp16 hit the assertion).
    """

    code = "DDP612"
    name = "deepspeed-fp16-and-bf16"
    summary = "DeepSpeed `fp16` and `bf16` are both enabled"
    severity = Severity.ERROR
    default_enabled = False
    reads_json = True
    needles = ("fp16",)
    also_needles = ("bf16", "bfloat16")
    required = ("enabled",)

    def check(self, ctx: ConfigContext) -> Iterator[Finding]:
        for config in ctx.deepspeed_configs:
            fp16 = config.enabled_section(FP16_KEYS)
            bf16 = config.enabled_section(BF16_KEYS)
            if fp16 is None or bf16 is None:
                continue
            found = config.entry(bf16, "enabled")
            assert found is not None
            other = dotted(config.key(fp16, "enabled"))
            message = (
                f"is true while `{other}` is true too: DeepSpeed asserts on every rank when "
                "it reads the config (`bfloat16 and fp16 modes cannot be simultaneously "
                "enabled`)"
            )
            summary = f"is true with `{other}` true: DeepSpeed refuses both"
            yield ctx.finding(self, config.doc, found, message, summary=summary)
