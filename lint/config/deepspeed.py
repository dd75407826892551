"""DeepSpeed configs (what ``deepspeed.initialize`` reads, as JSON or as a YAML section),
recognised by their keys wherever they sit: batch sizes, precision sections, the ZeRO
stage and the options each stage reads."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ddplint.config.document import ConfigDocument, Entry, KeyPath
from ddplint.config.hydra_defaults import composed_at
from ddplint.config.values import ABSENT, positive_int

#: Cheap text check before a file is loaded: a DeepSpeed config names one of these.
DEEPSPEED_NEEDLES = ("train_micro_batch_size_per_gpu", "zero_optimization", "train_batch_size")
#: Sections a DeepSpeed config has beside its batch sizes.
_SECTIONS = frozenset({"fp16", "bf16", "bfloat16", "optimizer", "scheduler", "zero_optimization"})
#: The precision sections.
FP16_KEYS = ("fp16",)
BF16_KEYS = ("bf16", "bfloat16")  # ``bfloat16`` is the old spelling DeepSpeed still reads
ZERO_KEY = "zero_optimization"


def _is_deepspeed_mapping(mapping: Mapping[Any, Any]) -> bool:
    """``train_micro_batch_size_per_gpu`` (DeepSpeed's own name), a ``zero_optimization``
    section, or ``train_batch_size`` beside another DeepSpeed section."""
    if "train_micro_batch_size_per_gpu" in mapping:
        return True
    if isinstance(mapping.get(ZERO_KEY), Mapping):
        return True
    return "train_batch_size" in mapping and any(k in mapping for k in _SECTIONS)


@dataclass(frozen=True)
class DeepSpeedConfig:
    """One DeepSpeed config: the whole document or the mapping at ``path``."""

    doc: ConfigDocument
    path: KeyPath

    def key(self, *names: str) -> KeyPath:
        return (*self.path, *names)

    def entry(self, *names: str) -> Entry | None:
        return self.doc.entry(self.key(*names))

    def count(self, name: str) -> int | None:
        """A batch-size setting as a whole number; None when absent, ``"auto"`` (filled
        in by the Hugging Face integration) or not a plain number."""
        return positive_int(self.doc.value(self.key(name)))

    def enabled_section(self, names: tuple[str, ...]) -> str | None:
        """The section DeepSpeed reads of ``names`` (the first one written) when it says
        ``enabled: true``; None otherwise."""
        for name in names:
            if self.doc.raw(self.key(name)) is not ABSENT:
                return name if self.doc.value(self.key(name, "enabled")) is True else None
        return None

    @property
    def zero_stage(self) -> int | None:
        """The ZeRO stage: 0 when ``zero_optimization`` or its ``stage`` is absent (the
        default), None when it is not a plain number (``"auto"``, an interpolation) or,
        absent here, may be set by a config Hydra's ``defaults:`` merges onto it."""
        if (
            self.doc.mapping(self.key(ZERO_KEY)) is None
            and self.doc.raw(self.key(ZERO_KEY)) is not ABSENT
        ):
            return None
        stage_key = self.key(ZERO_KEY, "stage")
        stage = self.doc.value(stage_key)
        if stage is ABSENT:
            return None if composed_at(self.doc, stage_key) else 0
        if isinstance(stage, int) and not isinstance(stage, bool) and 0 <= stage <= 3:
            return stage
        return None


def deepspeed_configs(doc: ConfigDocument) -> Iterator[DeepSpeedConfig]:
    """Every DeepSpeed config in ``doc``: the root, or mappings nested in a larger
    config (a Lightning ``DeepSpeedStrategy(config=...)``, a Hydra section)."""
    for path, mapping in doc.mappings():
        if _is_deepspeed_mapping(mapping):
            yield DeepSpeedConfig(doc, path)
