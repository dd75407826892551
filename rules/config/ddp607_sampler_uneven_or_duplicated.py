"""DDP607: sampler settings that duplicate data on every rank or give ranks uneven
batch counts."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from ddplint.config.context import ConfigContext
from ddplint.config.document import ConfigDocument, KeyPath, dotted
from ddplint.config.edits import bool_text, set_or_add
from ddplint.config.nemo import class_name, dataset_sections, is_lhotse, is_megatron, is_tarred
from ddplint.config.samplers import plain_sampler_in_data
from ddplint.config.values import ABSENT
from ddplint.finding import Applicability, Finding, Severity
from ddplint.rule import ConfigRule

SAMPLER_SWITCHES = ("use_distributed_sampler", "replace_sampler_ddp")
#: Batch samplers that size batches dynamically (Lhotse's ``DynamicCutSampler`` /
#: ``DynamicBucketingSampler`` and the like): each rank takes every world_size-th batch
#: and, without ``drop_last``, the last step exists on some ranks only.
_DYNAMIC_SAMPLER = re.compile(r"(Dynamic|Bucket)\w*Sampler$")
#: Keys that choose a sampler by name (``sampler: DynamicBucketingSampler``).
_SAMPLER_NAME_KEYS = ("sampler", "sampler_type", "sampler_name", "batch_sampler")
#: icefall / k2 datamodule switch: true builds Lhotse's ``DynamicBucketingSampler``.
_BUCKETING_SWITCH = "bucketing_sampler"


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
    - the same switch off while a LightningCLI `data:` section chooses a plain torch
      sampler (`sampler: {class_path: torch.utils.data.WeightedRandomSampler}`,
      `sampler: weighted`, `weighted_sampler: true`); samplers that shard by themselves
      (`num_replicas` / `rank`) and project sampler classes are not flagged.
    - a dynamic or bucketing batch sampler (`_target_: ...DynamicBucketingSampler`,
      `sampler: DynamicBucketingSampler`, icefall's `bucketing_sampler: true`) with
      `drop_last` false or not set, when the file gives more than one process
      (`trainer.devices` x `num_nodes`, or a top-level `world_size`).

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
    For a dynamic sampler the fix sets `drop_last: true` (added when missing). It is
    unsafe: each epoch then skips the incomplete last batches. No fix for the switched-off
    distributed sampler: which datasets should be split is the author's decision.

    ## References
    - Lightning docs: `Trainer(use_distributed_sampler=...)`.
    - Lhotse `CutSampler.__next__` (one batch per rank per step; `drop_last`).
    """

    code = "DDP607"
    name = "sampler-uneven-or-duplicated"
    summary = "Distributed sampler switched off for map-style data, or uneven dynamic batches"
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE
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
            found = doc.entry(key)
            assert found is not None
            plain = plain_sampler_in_data(doc)
            if plain is not None:
                where, sampler = plain
                message = (
                    f"is false while `{dotted(where)}` is a {sampler}, which draws from the "
                    "whole dataset: Lightning neither adds a DistributedSampler nor wraps "
                    "this sampler in one, so every rank samples all of the data (with the "
                    "same seed on every rank, the same samples; "
                    f"{ctx.world(doc).describe}; silent duplicated work)"
                )
                summary = f"is false with a {sampler}: every rank samples all data"
                yield ctx.finding(self, doc, found, message, summary=summary)
                continue
            sections = _map_style_sections(doc)
            if not sections:
                continue
            assert found is not None
            shown = ", ".join(f"`{s}`" for s in sections)
            message = (
                f"is false while {shown} {'is a' if len(sections) == 1 else 'are'} map-style "
                f"manifest dataset{'' if len(sections) == 1 else 's'} with no sampler of "
                f"{'its' if len(sections) == 1 else 'their'} own: Lightning adds no "
                f"DistributedSampler, so every rank iterates all of the data "
                f"({ctx.world(doc).describe}; silent duplicated work)"
            )
            summary = "is false for map-style data: every rank reads all of it"
            yield ctx.finding(self, doc, found, message, summary=summary)

    def _dynamic_without_drop_last(
        self, ctx: ConfigContext, doc: ConfigDocument
    ) -> Iterator[Finding]:
        for path, mapping in doc.mappings():
            chosen = _dynamic_sampler(doc, path, mapping)
            if chosen is None:
                continue
            name, chooser = chosen
            drop_last = doc.value((*path, "drop_last"))
            if drop_last is not ABSENT and drop_last is not False:
                continue
            drop_key: KeyPath = (*path, "drop_last")
            found = doc.entry(drop_key) or doc.entry((*path, chooser))
            assert found is not None
            state = "false" if drop_last is False else "not set (default false)"
            message = (
                f"is {state} for the {name} at `{dotted(path)}`: it hands each rank every "
                "world_size-th batch, so the last step can exist on some ranks only; a "
                "per-step collective there (DDP's gradient all-reduce, `sync_dist` logging) "
                "then waits for ranks that have already finished the epoch"
            )
            summary = f"is {state} for a {name}: uneven last step across ranks"
            fix = ctx.checked_fix(
                doc,
                [set_or_add(doc, path, "drop_last", bool_text(doc, doc.entry(drop_key), True))],
                {drop_key: True},
                Applicability.UNSAFE,
                "Set `drop_last: true`",
            )
            yield ctx.finding(self, doc, found, message, fix, key_path=drop_key, summary=summary)


def _dynamic_sampler(
    doc: ConfigDocument, path: KeyPath, mapping: Mapping[Any, Any]
) -> tuple[str, str] | None:
    """The dynamic sampler this mapping builds and the key that chooses it: a
    ``_target_`` class, a sampler named by a string value, or icefall's
    ``bucketing_sampler: true``."""
    if "_target_" in mapping:
        name = class_name(doc.value((*path, "_target_"))) or ""
        return (name, "_target_") if _DYNAMIC_SAMPLER.search(name) else None
    for key in _SAMPLER_NAME_KEYS:
        value = doc.value((*path, key)) if key in mapping else ABSENT
        if isinstance(value, str) and _DYNAMIC_SAMPLER.search(class_name(value) or ""):
            return class_name(value) or value, key
    if _BUCKETING_SWITCH in mapping and doc.value((*path, _BUCKETING_SWITCH)) is True:
        return "DynamicBucketingSampler", _BUCKETING_SWITCH
    return None
