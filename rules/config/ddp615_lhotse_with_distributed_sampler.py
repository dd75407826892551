"""DDP615: NeMo Lhotse data with Lightning's distributed sampler left on (preview)."""

from __future__ import annotations

from collections.abc import Iterator

from ddplint.config.context import ConfigContext
from ddplint.config.document import ConfigDocument, KeyPath, dotted
from ddplint.config.edits import set_or_add
from ddplint.config.nemo import dataset_sections, lhotse_map_style
from ddplint.config.values import ABSENT
from ddplint.finding import Applicability, Finding, Fix, Severity
from ddplint.rule import ConfigRule

#: Lightning 2.x's name, then 1.x's.
SAMPLER_KEYS = ("use_distributed_sampler", "replace_sampler_ddp")


class LhotseWithDistributedSampler(ConfigRule):
    """
    ## What it does
    Flags a NeMo training config with a multi-process trainer whose data sections
    (`model.train_ds`, `model.validation_ds`, ...) load through Lhotse as a map-style
    dataset (`use_lhotse: true` with non-tarred audio manifests, NeMo's default there,
    or `force_map_dataset: true`) while `trainer.use_distributed_sampler` is true or
    left at Lightning's default (true). Tarred, Shar and `input_cfg` data load as
    iterable datasets, which Lightning leaves alone: not flagged. A training script that
    switches the sampler off in code (`Trainer(use_distributed_sampler=False, **cfg.trainer)`,
    as NeMo's `examples/tts/vits.py` does) is not seen: the finding is then a false alarm
    (suppress it in the config). Preview (opt-in): no blind measurement exists for it yet.

    ## Why is this bad?
    Lhotse's samplers split the data across ranks themselves (NeMo hands them the rank
    and world size), and they have no length. With `use_distributed_sampler` on,
    Lightning replaces the loader's sampler by a `DistributedSamplerWrapper` around it,
    which needs a length: `TypeError: You seem to have configured a sampler in your
    DataLoader which does not provide __len__ method` when training starts, on every
    rank. NeMo's Lhotse configs set `use_distributed_sampler: false` for this reason.

    ## Example
    ```yaml
    model:
      train_ds:
        manifest_filepath: train_manifest.json
        use_lhotse: true
        batch_duration: 600
    trainer:
      devices: -1
      strategy: ddp
    ```

    ## Use instead
    ```yaml
    trainer:
      devices: -1
      strategy: ddp
      use_distributed_sampler: false  # Lhotse shards the data itself
    ```

    ## Fix safety
    The fix sets `trainer.use_distributed_sampler: false` (adding it when missing). It
    is unsafe: the setting applies to every loader of the trainer, and a loader of the
    same run that is not Lhotse (see DDP607) then gets no distributed sampler.

    ## References
    - NVIDIA-NeMo/Speech discussion 9511 (Canary training with Lhotse: the `TypeError`
      above; answer: set `use_distributed_sampler=False`).
    - NeMo docs, ASR datasets, "Lhotse dataloading" (added by NVIDIA-NeMo PR 7880): the
      Lhotse options go with `++trainer.use_distributed_sampler=false`.
    - NVIDIA/NeMo commit 6774fdcf23 (PR 10086): the Canary config gains
      `use_distributed_sampler: false  # Lhotse has its own distributed sampler`.
    - Lightning `_DatasetSamplerWrapper` (`lightning/fabric/utilities/distributed.py`).
    """

    code = "DDP615"
    name = "lhotse-with-distributed-sampler"
    summary = "Lhotse data with Lightning's distributed sampler left on"
    severity = Severity.ERROR
    default_enabled = False
    fix_applicability = Applicability.UNSAFE
    needles = ("use_lhotse",)

    def check(self, ctx: ConfigContext) -> Iterator[Finding]:
        for doc in ctx.configs:
            if doc.mapping(("trainer",)) is None or not ctx.world(doc).may_be_multi:
                continue
            key = _sampler_key(doc)
            if doc.value(key) not in (True, ABSENT):
                continue
            sections = [path for path, _ in dataset_sections(doc) if lhotse_map_style(doc, path)]
            if not sections:
                continue
            named = ", ".join(f"`{dotted(path)}`" for path in sections)
            written = doc.entry(key)
            at = written or doc.entry((*sections[0], "use_lhotse"))
            assert at is not None
            stated = "is true" if written else "is not set (Lightning's default: true)"
            message = (
                f"{stated} while {named} {'load' if len(sections) > 1 else 'loads'} through "
                f"Lhotse ({ctx.world(doc).describe}): "
                "Lightning wraps the Lhotse sampler, which has no length, in a "
                "`DistributedSamplerWrapper` and training fails at start (`TypeError: You "
                "seem to have configured a sampler in your DataLoader which does not provide "
                "__len__ method`); Lhotse splits the data across ranks itself"
            )
            summary = f"{stated} with Lhotse data: Lightning fails wrapping its sampler"
            fix = self._fix(ctx, doc, key)
            yield ctx.finding(self, doc, at, message, fix, key_path=key, summary=summary)

    @staticmethod
    def _fix(ctx: ConfigContext, doc: ConfigDocument, key: KeyPath) -> Fix | None:
        return ctx.checked_fix(
            doc,
            [set_or_add(doc, key[:-1], str(key[-1]), "false")],
            {key: False},
            Applicability.UNSAFE,
            f"Set `{dotted(key)}: false` (Lhotse shards the data itself)",
        )


def _sampler_key(doc: ConfigDocument) -> KeyPath:
    """The trainer's sampler switch as written (1.x name when only it is), else 2.x's."""
    for name in SAMPLER_KEYS:
        if doc.raw(("trainer", name)) is not ABSENT:
            return ("trainer", name)
    return ("trainer", SAMPLER_KEYS[0])
