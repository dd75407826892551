"""DDP613: a ZeRO offload that the configured stage never performs (preview)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from ddplint.config.context import ConfigContext
from ddplint.config.deepspeed import ZERO_KEY, DeepSpeedConfig
from ddplint.config.document import Entry
from ddplint.finding import Finding, Severity
from ddplint.rule import ConfigRule

#: Offload sections and the lowest stage that reads each.
OFFLOADS = (("offload_param", 3), ("cpu_offload_param", 3), ("offload_optimizer", 1))
OFFLOAD_EFFECT = "nothing is offloaded: a run sized for the offload runs out of GPU memory"


def _offloads(config: DeepSpeedConfig, found: Entry) -> bool:
    """An offload section that offloads: not ``device: none``, not ``false``."""
    if isinstance(found.value, Mapping):
        device = config.doc.value((*found.path, "device"))
        return not (isinstance(device, str) and device.lower() == "none")
    return config.doc.value(found.path) is True


class DeepSpeedZeroOptionIgnored(ConfigRule):
    """
    ## What it does
    Flags an offload that a DeepSpeed `zero_optimization` section asks for and the
    configured `stage` (0 when absent) never performs:

    - `offload_param` (or the deprecated `cpu_offload_param`) below stage 3: only ZeRO-3
      partitions, and so offloads, parameters;
    - `offload_optimizer` at stage 0 (ZeRO off).

    Not flagged: an offload whose `device` is `none` (not an offload); a stage that is
    not a plain number (`"auto"`, an environment resolver); a section Hydra composes
    with another config (a `defaults:` entry such as `- deepspeed@ds_cfg: zero2`
    merges a file onto it, so the stage it leaves out is set there); `stage3_*` tuning
    options below stage 3 (prefetch sizes, persistence thresholds, gathering 16-bit
    weights on save): they are inert there, and a stage-2 run holds full weights on
    every rank anyway, so nothing a run relies on is lost (on blind set 10 all 14 such
    findings were template keys left in stage-1/2 variants of a stage-3 recipe).
    Preview (opt-in).

    ## Why is this bad?
    DeepSpeed accepts the keys and silently does nothing with them. A run sized on the
    belief that parameters live in CPU memory (a model larger than one GPU) runs out of
    GPU memory at start instead, on every rank. The usual cause is a config copied from
    a ZeRO-3 recipe and switched to stage 2 (or the reverse) half way.

    ## Example
    ```json
    {
      "zero_optimization": {
        "stage": 2,
        "offload_param": {"device": "cpu", "pin_memory": true}
      }
    }
    ```

    ## Use instead
    ```json
    {
      "zero_optimization": {
        "stage": 3,
        "offload_param": {"device": "cpu", "pin_memory": true}
      }
    }
    ```
    or keep stage 2 and offload what it can (`offload_optimizer` is the offload stage 2
    has).

    ## Fix safety
    No automatic fix: raising the stage changes how training runs, and removing the
    options may remove what the author meant to have.

    ## References
    - DeepSpeed docs, configuration JSON, "ZeRO optimizations": `offload_param` is
      "valid only with stage 3"; `stage3_*` parameters.
    - DeepSpeed 0.19.8, `deepspeed/runtime/zero/config.py` (`DeepSpeedZeroConfig`).
    - deepspeedai/DeepSpeed issue 1403 (parameter offload needs stage 3).
    """

    code = "DDP613"
    name = "deepspeed-zero-option-ignored"
    summary = "an offload the configured ZeRO `stage` never performs"
    severity = Severity.WARNING
    default_enabled = False
    reads_json = True
    needles = (ZERO_KEY,)

    def check(self, ctx: ConfigContext) -> Iterator[Finding]:
        for config in ctx.deepspeed_configs:
            zero = config.doc.mapping(config.key(ZERO_KEY))
            stage = config.zero_stage
            if zero is None or stage is None:
                continue
            for name, lowest in OFFLOADS:
                found = config.entry(ZERO_KEY, name)
                if stage < lowest and found is not None and _offloads(config, found):
                    needs = "stage 3" if lowest == 3 else f"stage {lowest} or above"
                    yield self._ignored(ctx, config, found, stage, needs)

    def _ignored(
        self,
        ctx: ConfigContext,
        config: DeepSpeedConfig,
        found: Entry,
        stage: int,
        needs: str,
    ) -> Finding:
        written = config.entry(ZERO_KEY, "stage") is not None
        stated = f"`stage` is {stage}" if written else "no `stage` is set (stage 0)"
        message = (
            f"is read only at {needs}, but {stated}: DeepSpeed accepts it "
            f"and does nothing with it ({OFFLOAD_EFFECT})"
        )
        summary = f"is ignored at ZeRO stage {stage} (read at {needs})"
        return ctx.finding(self, config.doc, found, message, summary=summary)
