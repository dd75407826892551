"""DDP603: ``ConformerEncoder.sync_max_audio_length`` against uneven forwards, or
switched off while inputs outgrow ``pos_emb_max_len``."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from ddplint.code_facts import RANK_ZERO_CALLS
from ddplint.config.context import ConfigContext
from ddplint.config.document import ConfigDocument, dotted
from ddplint.config.edits import bool_text, set_or_add_many
from ddplint.config.nemo import (
    CONFORMER_CLASSES,
    DEFAULT_POS_EMB_MAX_LEN,
    DEFAULT_WINDOW_STRIDE,
    EVAL_SECTIONS,
    MEL_PREPROCESSORS,
    Module,
    dataset_sections,
    modules,
    uneven_batches_reason,
)
from ddplint.config.values import ABSENT
from ddplint.finding import Applicability, Finding, Fix, Severity
from ddplint.rule import ConfigRule

SYNC = "sync_max_audio_length"
POS_LEN = "pos_emb_max_len"


@dataclass(frozen=True)
class InputFrames:
    """The longest input in feature frames: ``ceil(max_duration / window_stride)``."""

    frames: int
    max_duration: float
    window_stride: float
    section: str
    #: Every dataset section sets ``max_duration`` (no input can be longer).
    complete: bool

    def describe(self) -> str:
        return (
            f"`{self.section}.max_duration: {self.max_duration:g}` s / `window_stride: "
            f"{self.window_stride:g}` s = {self.frames} frames"
        )


def _number(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


def input_frames(doc: ConfigDocument) -> InputFrames | None:
    """The longest input the datasets allow, in mel frames, when it can be known."""
    preprocessors = modules(doc, MEL_PREPROCESSORS)
    if not preprocessors:
        return None
    stride = doc.value((*preprocessors[0].path, "window_stride"))
    window_stride = DEFAULT_WINDOW_STRIDE if stride is ABSENT else _number(stride)
    if window_stride is None:
        return None
    longest: tuple[float, str] | None = None
    complete = True
    for path, _ in dataset_sections(doc):
        duration = _number(doc.value((*path, "max_duration")))
        complete = complete and duration is not None
        if duration is not None and (longest is None or duration > longest[0]):
            longest = (duration, dotted(path))
    if longest is None:
        return None
    frames = math.ceil(round(longest[0] / window_stride, 6))
    return InputFrames(frames, longest[0], window_stride, longest[1], complete)


class ConformerSyncMaxAudioLength(ConfigRule):
    """
    ## What it does
    For every NeMo `ConformerEncoder` (FastConformer, NEST, and the classes built on it)
    in a multi-device training config:

    - `sync_max_audio_length: true` (the default) while ranks can run different numbers
      of encoder forwards: a Lhotse validation/test set (`model.validation_ds`, or
      speechlm2's `data.validation_ds`) without `drop_last: true`, a tarred or Shar
      validation/test set, or (from the code in the same repo) an encoder or
      `transcribe` call reached on rank 0 only.
    - `sync_max_audio_length: false` while the longest allowed input
      (`max_duration / window_stride` frames) exceeds `pos_emb_max_len`.

    ## Why is this bad?
    With the default, every encoder forward (in eval too) does a one-element MAX
    all-reduce of the input length. A rank that runs one more forward than the others
    waits in that all-reduce for a peer that never joins: the job hangs, or NCCL pairs
    it with a later, different collective and the ranks continue with mixed data.
    Lhotse samplers draw `world_size` batches per step and stop the rank whose share is
    missing, so without `drop_last: true` the last validation step runs on some ranks
    only. Reproduced with NeMo's module: 3 forwards on one rank, 2 on the other, failure.

    The opposite setting is a hazard too: with `false`, each rank extends its relative
    positional-encoding buffer to its own longest input once inputs exceed
    `pos_emb_max_len`, so the ranks hold buffers of different sizes (NEST allows 60 s
    inputs: 6000 frames at 10 ms, above the default 5000).

    ## Example
    ```yaml
    model:
      validation_ds:
        use_lhotse: true
      encoder:
        _target_: nemo.collections.asr.modules.ConformerEncoder
    trainer:
      devices: 8
    ```

    ## Use instead
    ```yaml
    model:
      validation_ds:
        use_lhotse: true
        drop_last: true
      encoder:
        _target_: nemo.collections.asr.modules.ConformerEncoder
    ```
    or switch the all-reduce off and size the positional encoding for the longest input:
    `sync_max_audio_length: false` with `pos_emb_max_len >= ceil(max_duration / window_stride)`.

    ## Fix safety
    The fix sets `sync_max_audio_length: false` and raises `pos_emb_max_len` to the
    longest input in frames (when that can be computed from the config); for the second
    form it only raises `pos_emb_max_len`. It is unsafe: a larger positional encoding
    uses more memory, and inputs longer than `max_duration` (a dataset without a
    limit) would still grow the buffers per rank.

    ## References
    - NeMo `ConformerEncoder.update_max_seq_length` / `set_max_audio_length`.
    - Lhotse `CutSampler.__next__` (one batch per rank per step; `drop_last`).
    """

    code = "DDP603"
    name = "conformer-sync-max-audio-length"
    summary = "Conformer `sync_max_audio_length` with uneven forwards, or off with long inputs"
    severity = Severity.ERROR
    fix_applicability = Applicability.UNSAFE
    needles = ("ConformerEncoder", "SpectrogramConformer")
    code_facts = (RANK_ZERO_CALLS,)

    def check(self, ctx: ConfigContext) -> Iterator[Finding]:
        for doc in ctx.configs:
            world = ctx.world(doc)
            if world.single:
                continue
            for encoder in modules(doc, CONFORMER_CLASSES):
                sync = doc.value((*encoder.path, SYNC))
                if sync is ABSENT or sync is True:
                    finding = self._uneven_forwards(ctx, doc, encoder, sync is True)
                elif sync is False:
                    finding = self._outgrown_positions(ctx, doc, encoder)
                else:
                    finding = None
                if finding is not None:
                    yield finding

    def _uneven_forwards(
        self, ctx: ConfigContext, doc: ConfigDocument, encoder: Module, explicit: bool
    ) -> Finding | None:
        reasons = [
            reason
            for path, _ in dataset_sections(doc)
            if path[-1] in EVAL_SECTIONS
            for reason in [uneven_batches_reason(doc, path)]
            if reason
        ]
        reasons += [
            f"`{call.call}` runs on rank 0 only ({call.where})"
            for call in ctx.code_facts.rank_zero_calls
        ]
        if not reasons:
            return None
        at = doc.entry((*encoder.path, SYNC)) or doc.entry(encoder.path)
        assert at is not None
        state = "is true" if explicit else "is not set (default true)"
        message = (
            f"{state}: every {encoder.class_name} forward does a MAX all-reduce of the input "
            f"length, in eval too, and ranks can run different numbers of forwards: "
            f"{'; '.join(reasons)}. The rank with an extra forward waits for peers that "
            "never join (hang), or NCCL pairs it with a different collective"
        )
        default = "is true" if explicit else "defaults to true"
        summary = f"{default}, but ranks can run unequal forward counts"
        fix = self._sync_off_fix(ctx, doc, encoder)
        return ctx.finding(self, doc, at, message, fix, (*encoder.path, SYNC), summary=summary)

    def _sync_off_fix(self, ctx: ConfigContext, doc: ConfigDocument, encoder: Module) -> Fix | None:
        frames = input_frames(doc)
        if frames is None or not frames.complete:
            return None  # some input has no length limit: no size is safe
        current = doc.entry((*encoder.path, SYNC))
        pairs = [(SYNC, bool_text(doc, current, False))]
        changes: dict[tuple[str | int, ...], object] = {(*encoder.path, SYNC): False}
        message = f"Set `{SYNC}: false` (inputs reach {frames.frames} frames, within `{POS_LEN}`)"
        if self._pos_len(doc, encoder) < frames.frames:
            pairs.append((POS_LEN, str(frames.frames)))
            pos_key = (*encoder.path, POS_LEN)
            changes[pos_key] = frames.frames
            message = f"Set `{SYNC}: false` and `{POS_LEN}: {frames.frames}`"
        return ctx.checked_fix(
            doc, set_or_add_many(doc, encoder.path, pairs), changes, Applicability.UNSAFE, message
        )

    @staticmethod
    def _pos_len(doc: ConfigDocument, encoder: Module) -> float:
        value = doc.value((*encoder.path, POS_LEN))
        if value is ABSENT:
            return DEFAULT_POS_EMB_MAX_LEN
        return _number(value) or math.inf  # unknown: never claim it is too small

    def _outgrown_positions(
        self, ctx: ConfigContext, doc: ConfigDocument, encoder: Module
    ) -> Finding | None:
        frames = input_frames(doc)
        limit = self._pos_len(doc, encoder)
        if frames is None or frames.frames <= limit:
            return None
        at = doc.entry((*encoder.path, SYNC))
        assert at is not None
        fix = ctx.checked_fix(
            doc,
            set_or_add_many(doc, encoder.path, [(POS_LEN, str(frames.frames))]),
            {(*encoder.path, POS_LEN): frames.frames},
            Applicability.UNSAFE,
            f"Raise `{POS_LEN}` to {frames.frames}",
        )
        message = (
            f"is false while inputs reach {frames.describe()}, above `{POS_LEN}: "
            f"{limit:g}`: each rank extends its positional-encoding buffer to its own "
            "longest input, so the ranks' buffers differ"
        )
        summary = f"is false; inputs reach {frames.frames} frames > `{POS_LEN}`"
        return ctx.finding(self, doc, at, message, fix, summary=summary)
