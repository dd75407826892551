"""DDP607: sampler settings that duplicate data on every rank or give ranks uneven
batch counts."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ddplint.config.context import ConfigContext
from ddplint.config.document import ConfigDocument, KeyPath, dotted
from ddplint.config.nemo import class_name, dataset_sections, is_lhotse, is_megatron, is_tarred
from ddplint.config.values import ABSENT
from ddplint.finding import Finding, Severity
from ddplint.rule import ConfigRule

SAMPLER_SWITCHES = ("use_distributed_sampler", "replace_sampler_ddp")
#: Batch samplers that size batches dynamically (Lhotse's ``DynamicCutSampler`` /
#: ``DynamicBucketingSampler`` and the like): each rank takes every world_size-th batch
#: and, without ``drop_last``, the last step exists on some ranks only.
_DYNAMIC_SAMPLER = re.compile(r"(Dynamic|Bucket)\w*Sampler$")


def _map_style_sections(doc: ConfigDocument) -> list[str]:
    """``model.*_ds`` sections NeMo builds as a plain map-style DataLoader with no
    sampler of its own: a manifest, not tarred, not Lhotse."""
    names = []
    for path, _section in dataset_sections(doc):
        manifest = doc.value((*path, "manifest_filepath"))
        if manifest is ABSENT or manifest is None:
            continue
        if is_lhotse(doc, path) or is_tarred(doc, path):
            continue
        names.append(dotted(path))
    return names


class SamplerUnevenOrDuplicated(ConfigRule):
    """
    ## What it does
    In a multi-device training config, flags:

    - `trainer.use_distributed_sampler: false` (`replace_sampler_ddp: false` in
      Lightning 1.x) while a NeMo dataset section (`model.train_ds`,
      `model.validation_ds`, ...) is a plain map-style manifest dataset, neither Lhotse
      nor tarred, so nothing else splits it across ranks. Lhotse and Megatron configs
      set the switch off on purpose and are not flagged.
    - a dynamic or bucketing batch sampler (`_target_: ...DynamicBucketingSampler`) with
      `drop_last` false or not set.

    ## Why is this bad?
    Without Lightning's `DistributedSampler`, every rank iterates the whole dataset:
    training sees each sample world-size times per "epoch", validation repeats the same
    work on every rank. Nothing fails (silent). Dynamic samplers hand each rank every
    world_size-th batch; without `drop_last` the final step exists on some ranks only,
    and a per-step collective there (DDP's gradient all-reduce in training) waits for
    ranks that have already left the epoch.

    ## Example
    ```yaml
    model:
      train_ds:
        manifest_filepath: train.json
    trainer:
      devices: 8
      use_distributed_sampler: false
    ```

    ## Use instead
    ```yaml
    trainer:
      devices: 8
      use_distributed_sampler: true   # or shard the data yourself (Lhotse)
    ```

    ## Fix safety
    No automatic fix: which datasets should be split is the author's decision.

    ## References
    - Lightning docs: `Trainer(use_distributed_sampler=...)`.
    - Lhotse `CutSampler.__next__` (one batch per rank per step; `drop_last`).
    """

    code = "DDP607"
    name = "sampler-uneven-or-duplicated"
    summary = "Distributed sampler switched off for map-style data, or uneven dynamic batches"
    severity = Severity.WARNING
    needles = ("use_distributed_sampler", "replace_sampler_ddp", "Sampler")

    def check(self, ctx: ConfigContext) -> Iterator[Finding]:
        for doc in ctx.configs:
            world = ctx.world(doc)
            if world.single:
                continue
            yield from self._sampler_switched_off(ctx, doc)
            yield from self._dynamic_without_drop_last(ctx, doc)

    def _sampler_switched_off(self, ctx: ConfigContext, doc: ConfigDocument) -> Iterator[Finding]:
        if is_megatron(doc):
            return
        for switch in SAMPLER_SWITCHES:
            key = ("trainer", switch)
            if doc.value(key) is not False:
                continue
            sections = _map_style_sections(doc)
            if not sections:
                continue
            found = doc.entry(key)
            assert found is not None
            shown = ", ".join(f"`{s}`" for s in sections)
            message = (
                f"is false while {shown} {'is a' if len(sections) == 1 else 'are'} map-style "
                f"manifest dataset{'' if len(sections) == 1 else 's'} with no sampler of "
                f"{'its' if len(sections) == 1 else 'their'} own: Lightning adds no "
                f"DistributedSampler, so every rank iterates all of the data "
                f"({ctx.world(doc).describe}; silent duplicated work)"
            )
            which = shown if len(sections) == 1 else f"{len(sections)} datasets"
            summary = f"is false: every rank iterates all of {which}"
            yield ctx.finding(self, doc, found, message, summary=summary)

    def _dynamic_without_drop_last(
        self, ctx: ConfigContext, doc: ConfigDocument
    ) -> Iterator[Finding]:
        for path, mapping in doc.mappings():
            if "_target_" not in mapping:
                continue
            name = class_name(doc.value((*path, "_target_"))) or ""
            if not _DYNAMIC_SAMPLER.search(name):
                continue
            drop_last = doc.value((*path, "drop_last"))
            if drop_last is not ABSENT and drop_last is not False:
                continue
            drop_key: KeyPath = (*path, "drop_last")
            found = doc.entry(drop_key) or doc.entry((*path, "_target_"))
            assert found is not None
            state = "false" if drop_last is False else "not set (default false)"
            message = (
                f"is {state} for the {name} at `{dotted(path)}`: it hands each rank every "
                "world_size-th batch, so the last step can exist on some ranks only; a "
                "per-step collective there (DDP's gradient all-reduce, `sync_dist` logging) "
                "then waits for ranks that have already finished the epoch"
            )
            unset = "is false" if drop_last is False else "not set"
            summary = f"{unset} for {name}: last step on some ranks only"
            yield ctx.finding(self, doc, found, message, key_path=drop_key, summary=summary)
