"""DDP613: ZeRO options that the configured stage never reads (preview)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from ddplint.config.context import ConfigContext
from ddplint.config.deepspeed import ZERO_KEY, DeepSpeedConfig
from ddplint.config.document import Entry
from ddplint.finding import Finding, Severity
from ddplint.rule import ConfigRule

#: Offload sections and the lowest stage that reads each.
OFFLOADS = (("offload_param", 3), ("cpu_offload_param", 3), ("offload_optimizer", 1))
STAGE3_PREFIX = "stage3_"
OFFLOAD_EFFECT = "nothing is offloaded: a run sized for the offload runs out of GPU memory"
STAGE3_EFFECT = "ZeRO-3 settings in a config that does not run ZeRO-3; was stage 3 meant?"


def _offloads(config: DeepSpeedConfig, found: Entry) -> bool:
    """An offload section that offloads: not ``device: none``, not ``false``."""
    if isinstance(found.value, Mapping):
        device = config.doc.value((*found.path, "device"))
        return not (isinstance(device, str) and device.lower() == "none")
    return config.doc.value(found.path) is True


class DeepSpeedZeroOptionIgnored(ConfigRule):
    """
    ## What it does
    Flags options of a DeepSpeed `zero_optimization` section that the configured
    `stage` (0 when absent) never reads:

    - `offload_param` (or the deprecated `cpu_offload_param`) below stage 3: only ZeRO-3
      partitions, and so offloads, parameters;
    - `offload_optimizer` at stage 0 (ZeRO off);
    - `stage3_*` options (prefetch, persistence thresholds, live parameters, gathering
      16-bit weights on save) below stage 3: one finding per section, at the first.

    An offload whose `device` is `none` is not an offload and is not flagged; a stage
    that is not a plain number (`"auto"`) is not judged. Preview (opt-in): no blind
    measurement exists for it yet.

    ## Why is this bad?
    DeepSpeed accepts the keys and silently does nothing with them. A run sized on the
    belief that parameters live in CPU memory (a model larger than one GPU) runs out of
    GPU memory at start instead, on every rank; a stage-3 save option left in a stage-2
    config does not gather anything on save. The usual cause is a config copied from a
    ZeRO-3 recipe and switched to stage 2 (or the reverse) half way.

    ## Example
    ```json
    {
      "zero_optimization": {
        "stage": 2,
        "offload_param": {"device": "cpu", "pin_memory": true},
        "stage3_max_live_parameters": 1e9
      }
    }
    ```

    ## Use instead
    ```json
    {
      "zero_optimization": {
        "stage": 3,
        "offload_param": {"device": "cpu", "pin_memory": true},
        "stage3_max_live_parameters": 1e9
      }
    }
    ```
    or keep stage 2 and remove the options it does not read (`offload_optimizer` is
    the offload stage 2 has).

    ## Fix safety
    No automatic fix: raising the stage changes how training runs, and removing the
    options may remove what the author meant to have.

    ## References
    - DeepSpeed docs, configuration JSON, "ZeRO optimizations": `offload_param` is
      "valid only with stage 3"; `stage3_*` parameters.
    - DeepSpeed 0.19.8, `deepspeed/runtime/zero/config.py` (`DeepSpeedZeroConfig`).
    - deepspeedai/DeepSpeed issue 1403 (parameter offload needs stage 3); wenet-e2e/wenet
      PR 2485 (removed `stage3_*` options from its stage-1 config).
    """

    code = "DDP613"
    name = "deepspeed-zero-option-ignored"
    summary = "a ZeRO option the configured `stage` never reads"
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
                    yield self._ignored(ctx, config, found, stage, needs, OFFLOAD_EFFECT)
            stage3 = [key for key in zero if isinstance(key, str) and key.startswith(STAGE3_PREFIX)]
            first = config.entry(ZERO_KEY, stage3[0]) if stage3 else None
            if stage < 3 and first is not None:
                more = len(stage3) - 1
                plural = "s" if more > 1 else ""
                others = f" (and {more} more `stage3_*` option{plural})" if more else ""
                yield self._ignored(ctx, config, first, stage, "stage 3", STAGE3_EFFECT, others)

    def _ignored(
        self,
        ctx: ConfigContext,
        config: DeepSpeedConfig,
        found: Entry,
        stage: int,
        needs: str,
        effect: str,
        others: str = "",
    ) -> Finding:
        written = config.entry(ZERO_KEY, "stage") is not None
        stated = f"`stage` is {stage}" if written else "no `stage` is set (stage 0)"
        message = (
            f"{others} is read only at {needs}, but {stated}: DeepSpeed accepts it "
            f"and does nothing with it ({effect})"
        )
        summary = f"is ignored at ZeRO stage {stage} (read at {needs})"
        return ctx.finding(self, config.doc, found, message.lstrip(), summary=summary)
