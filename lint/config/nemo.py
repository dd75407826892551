"""What NeMo does with a config (checked against nemo_toolkit 2.7.3 sources): which
``_target_`` classes are Conformer encoders or hold BatchNorm, which dataset sections
give ranks different batch counts, and how tarred shards are counted and split."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ddplint.config.braces import count_expansions
from ddplint.config.document import ConfigDocument, KeyPath, dotted
from ddplint.config.values import ABSENT, UNKNOWN

#: ``ConformerEncoder`` and the classes that build one from the same keyword arguments
#: (``sync_max_audio_length``, ``conv_norm_type``, ``pos_emb_max_len``).
CONFORMER_CLASSES = frozenset(
    {
        "ConformerEncoder",
        "ConformerEncoderAdapter",
        "ConformerEncoderUNet",
        "SpectrogramConformer",
        "SpectrogramConformerUNet",
    }
)
#: Encoders whose convolution modules use ``conv_norm_type`` (default ``batch_norm``).
CONV_NORM_CLASSES = CONFORMER_CLASSES | {"SqueezeformerEncoder"}
#: Encoders built from Jasper blocks: ``normalization_mode`` defaults to ``batch``.
JASPER_CLASSES = frozenset({"ConvASREncoder", "ConvASREncoderAdapter", "ParallelConvASREncoder"})
#: Modules that always hold BatchNorm layers.
ALWAYS_BATCHNORM = frozenset({"ECAPAEncoder", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d"})
MEL_PREPROCESSORS = frozenset({"AudioToMelSpectrogramPreprocessor"})
DEFAULT_POS_EMB_MAX_LEN = 5000
DEFAULT_WINDOW_STRIDE = 0.01
#: Dataset sections whose forward passes run outside training (eval on every rank).
EVAL_SECTIONS = ("validation_ds", "test_ds")
#: Brace spellings NeMo turns into ``{`` / ``}`` before expanding shard paths.
_OPEN_BRACES = ("(", "[", "<", "_OP_")
_CLOSE_BRACES = (")", "]", ">", "_CL_")


@dataclass(frozen=True)
class Module:
    """A mapping with a ``_target_``: where it is and which class it names."""

    path: KeyPath
    class_name: str

    @property
    def where(self) -> str:
        return dotted(self.path)


def class_name(target: Any) -> str | None:
    if not isinstance(target, str) or not target:
        return None
    return target.rsplit(".", 1)[-1]


def modules(doc: ConfigDocument, classes: frozenset[str]) -> list[Module]:
    """Every mapping whose ``_target_`` (resolved) names one of ``classes``."""
    found = []
    for path, mapping in doc.mappings():
        if "_target_" not in mapping:
            continue
        name = class_name(doc.value((*path, "_target_")))
        if name in classes:
            found.append(Module(path, name))
    return found


def names_nemo_modules(doc: ConfigDocument) -> bool:
    """Whether some ``_target_`` names a NeMo class: the model's layers are then known
    from the class lists above (as far as they go)."""
    for path, mapping in doc.mappings():
        if "_target_" in mapping:
            target = doc.value((*path, "_target_"))
            if isinstance(target, str) and target.startswith("nemo."):
                return True
    return False


def is_true(value: Any) -> bool:
    return value is True


#: Wrappers that freeze (and put in eval mode) the encoder they hold, unless told not to.
FREEZING_WRAPPERS = frozenset({"ConformerMultiLayerFeaturePreprocessor"})


def is_frozen(doc: ConfigDocument, module: Module) -> bool:
    """Whether NeMo freezes the module: ``freeze: true`` / ``freeze_encoder: true`` on it
    or a mapping that holds it, or a freezing wrapper (NEST multi-layer features).
    ``NeuralModule.freeze()`` also puts it in eval mode, which Lightning keeps."""
    for end in range(len(module.path), -1, -1):
        path = module.path[:end]
        mapping = doc.mapping(path)
        if mapping is None:
            continue
        if is_true(doc.value((*path, "freeze"))) or is_true(doc.value((*path, "freeze_encoder"))):
            return True
        wrapper = class_name(doc.value((*path, "_target_"))) in FREEZING_WRAPPERS
        if wrapper and doc.value((*path, "freeze_encoder")) is ABSENT:
            return True
    return False


def batchnorm_modules(
    doc: ConfigDocument, classes: frozenset[str] = CONV_NORM_CLASSES
) -> list[Module]:
    """Modules of ``classes`` (and, beyond Conformer-style encoders, Jasper-block and
    always-BatchNorm modules when asked) that build BatchNorm layers and train them
    (a frozen module keeps its BatchNorm in eval mode)."""
    found = []
    for module in modules(doc, classes):
        if is_frozen(doc, module):
            continue
        if module.class_name in CONV_NORM_CLASSES:
            norm = doc.value((*module.path, "conv_norm_type"))
            if norm is ABSENT or (isinstance(norm, str) and norm == "batch_norm"):
                found.append(module)
        elif module.class_name in JASPER_CLASSES:
            norm = doc.value((*module.path, "normalization_mode"))
            if norm is ABSENT or norm == "batch":
                found.append(module)
        elif module.class_name in ALWAYS_BATCHNORM:
            found.append(module)
    return found


def dataset_sections(doc: ConfigDocument) -> list[tuple[KeyPath, Mapping[Any, Any]]]:
    """NeMo dataset sections, in file order: ``model.<name>_ds`` (ASR, TTS, audio, SSL)
    and ``data.<name>_ds`` (speechlm2's data module)."""
    sections: list[tuple[KeyPath, Mapping[Any, Any]]] = []
    for parent in ("model", "data"):
        holder = doc.mapping((parent,))
        if holder is None:
            continue
        sections += [
            ((parent, key), value)
            for key, value in holder.items()
            if isinstance(key, str) and key.endswith("_ds") and isinstance(value, Mapping)
        ]
    return sections


#: Keys that only NeMo's Lhotse data path reads: a section with one of them is Lhotse
#: even without ``use_lhotse`` (speechlm2 always loads through Lhotse).
LHOTSE_ONLY_KEYS = ("input_cfg", "cuts_path", "shar_path")


def is_lhotse(doc: ConfigDocument, section: KeyPath) -> bool:
    """``use_lhotse: true``, or Lhotse-only keys on the section or on one of its
    ``datasets`` (separate data loaders that inherit the section's settings)."""
    if is_true(doc.value((*section, "use_lhotse"))):
        return True
    datasets = doc.mapping((*section, "datasets")) or {}
    holders = [doc.mapping(section), *(d for d in datasets.values() if isinstance(d, Mapping))]
    return any(h is not None and any(k in h for k in LHOTSE_ONLY_KEYS) for h in holders)


def _drops_last(doc: ConfigDocument, section: KeyPath) -> bool | None:
    """``drop_last: true`` on the section, or on every one of its ``datasets`` (which
    inherit the section's settings); None when a value is unknown."""
    value = doc.value((*section, "drop_last"))
    if value is UNKNOWN:
        return None
    if value is True:
        return True
    datasets = doc.mapping((*section, "datasets"))
    if not datasets:
        return False
    values = [doc.value((*section, "datasets", name, "drop_last")) for name in datasets]
    if any(v is UNKNOWN for v in values):
        return None
    return all(v is True for v in values)


def is_tarred(doc: ConfigDocument, section: KeyPath) -> bool:
    return is_true(doc.value((*section, "is_tarred")))


def lhotse_map_style(doc: ConfigDocument, section: KeyPath) -> bool:
    """A NeMo Lhotse section (``use_lhotse: true``) that NeMo loads as a map-style
    dataset with a Lhotse sampler: ``force_map_dataset: true``, or non-tarred audio
    manifests (NeMo's default) not forced iterable. Tarred, Shar, ``input_cfg`` (mixed)
    and text data are iterable datasets, which no sampler wraps."""
    if not is_true(doc.value((*section, "use_lhotse"))):
        return False
    if is_true(doc.value((*section, "force_map_dataset"))):
        return True
    holder = doc.mapping(section) or {}
    if is_true(doc.value((*section, "force_iterable_dataset"))) or is_tarred(doc, section):
        return False
    if any(key in holder for key in ("shar_path", "input_cfg", "tarred_audio_filepaths")):
        return False
    return "manifest_filepath" in holder or "cuts_path" in holder


def uneven_batches_reason(doc: ConfigDocument, section: KeyPath) -> str | None:
    """Why ranks can run a different number of batches over this dataset, or None.

    Lhotse samplers draw ``world_size`` batches per step and stop a rank whose share is
    missing, so without ``drop_last: true`` the last step runs on some ranks only;
    tarred (iterable) data is split by shard, so each rank reads its own amount.
    """
    name = dotted(section)
    if is_lhotse(doc, section):
        iterable = (
            is_tarred(doc, section)
            or doc.value((*section, "shar_path")) not in (ABSENT, None)
            or is_true(doc.value((*section, "use_iterable_dataset")))
        )
        if iterable:
            return f"`{name}` reads tarred / Shar data through Lhotse (split by shard per rank)"
        if _drops_last(doc, section) is False:
            return (
                f"`{name}` uses Lhotse without `drop_last: true`, so the last batch can "
                "exist on some ranks only"
            )
        return None
    if is_tarred(doc, section):
        return f"`{name}` is tarred (iterable, split by shard per rank)"
    return None


def shard_strategy(doc: ConfigDocument, section: KeyPath) -> Any:
    for key in ("tarred_shard_strategy", "shard_strategy"):
        value = doc.value((*section, key))
        if value is not ABSENT:
            return value
    return "scatter"


def _pattern_count(path: str) -> int:
    for token in _OPEN_BRACES:
        path = path.replace(token, "{")
    for token in _CLOSE_BRACES:
        path = path.replace(token, "}")
    return count_expansions(path)


def shard_counts(value: Any) -> list[int] | None:
    """Shards per bucket, as NeMo's ``get_tarred_dataset`` / ``expand_sharded_filepaths``
    count them: a string splits on ``,``; a single path is brace-expanded; a list of
    paths is one bucket with one shard per item; a list of lists is one bucket each."""
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list) or not value:
        return None
    buckets = value if all(isinstance(v, list) for v in value) else [value]
    counts = []
    for bucket in buckets:
        if not bucket or not all(isinstance(p, str) for p in bucket):
            return None
        counts.append(_pattern_count(bucket[0]) if len(bucket) == 1 else len(bucket))
    return counts


def is_megatron(doc: ConfigDocument) -> bool:
    """Megatron-based NeMo models split data and average metrics across data-parallel
    ranks themselves."""
    model = doc.mapping(("model",))
    return model is not None and any(
        key in model
        for key in ("tensor_model_parallel_size", "pipeline_model_parallel_size", "megatron_amp_O2")
    )
