"""Samplers a LightningCLI ``data:`` section chooses, and whether they split data
across ranks themselves.

A *plain* sampler draws from the whole dataset on every rank: torch's
``RandomSampler`` / ``SequentialSampler`` / ``WeightedRandomSampler`` /
``SubsetRandomSampler``, named by ``class_path`` / ``_target_``, by a string
(``sampler: weighted``), or switched on by a flag (``weighted_sampler: true``).
Lhotse samplers and samplers that take ``num_replicas`` / ``rank`` / ``world_size``
shard by themselves; a project's own sampler class is not known and not reported.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ddplint.config.document import ConfigDocument, KeyPath
from ddplint.config.nemo import class_name

PLAIN_SAMPLER_CLASSES = frozenset(
    {"RandomSampler", "SequentialSampler", "WeightedRandomSampler", "SubsetRandomSampler"}
)
#: String values that name a plain sampler (``sampler: weighted``).
PLAIN_SAMPLER_WORDS = {
    "random": "RandomSampler",
    "sequential": "SequentialSampler",
    "weighted": "WeightedRandomSampler",
    "weighted_random": "WeightedRandomSampler",
    "balanced": "WeightedRandomSampler",
}
#: Boolean switches that build a ``WeightedRandomSampler`` when true.
_WEIGHTED_SWITCH = re.compile(r"^(use_)?(weighted|balanced)_sampl(er|ing)$")
#: Keys that make a sampler split data across ranks itself.
SHARDING_KEYS = frozenset({"num_replicas", "rank", "world_size"})
_SAMPLER_KEY = re.compile(r"sampler", re.I)
_TARGET_KEYS = ("class_path", "_target_")


def plain_sampler_in_data(doc: ConfigDocument) -> tuple[KeyPath, str] | None:
    """The first plain sampler under the top-level ``data:`` section, as (path of the
    key that chooses it, class name), or None."""
    for path, mapping in doc.mappings():
        if not path or path[0] != "data":
            continue
        for key in mapping:
            if not isinstance(key, str) or not _SAMPLER_KEY.search(key):
                continue
            chosen = _plain_sampler(doc, (*path, key), key)
            if chosen is not None:
                return (*path, key), chosen
    return None


def _plain_sampler(doc: ConfigDocument, path: KeyPath, key: str) -> str | None:
    value = doc.value(path)
    if isinstance(value, Mapping):
        init_args = value.get("init_args")
        holders = [value, init_args] if isinstance(init_args, Mapping) else [value]
        if any(k in holder for holder in holders for k in SHARDING_KEYS):
            return None
        for target_key in _TARGET_KEYS:
            if target_key in value:
                name = class_name(doc.value((*path, target_key)))
                return name if name in PLAIN_SAMPLER_CLASSES else None
        return None
    if isinstance(value, str):
        name = class_name(value) or ""
        if name in PLAIN_SAMPLER_CLASSES:
            return name
        return PLAIN_SAMPLER_WORDS.get(value.strip().lower())
    if value is True and _WEIGHTED_SWITCH.match(key):
        return "WeightedRandomSampler"
    return None  # None, false, a number, an unknown value: no plain sampler
