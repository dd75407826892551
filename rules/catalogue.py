"""What the engine and the settings need to know of every rule without importing the
rule modules (their imports reach LibCST and the semantic layer): code, name, kind,
whether it is on by default, and for the YAML rules that read code facts, which kinds
and on which words. ``all_rules()`` stays the source of truth: a test checks that this
table says what the rule classes say (a new rule is a module and a line here).
"""

from __future__ import annotations

from typing import NamedTuple


class RuleEntry(NamedTuple):
    """One rule as the catalogue knows it."""

    code: str
    name: str
    kind: str
    default_enabled: bool
    #: Code-fact kinds a config rule reads (``ConfigRule.code_facts``) ...
    code_facts: tuple[str, ...] = ()
    #: ... and its pre-filter words (``Rule.needles``), listed for such rules only.
    needles: tuple[str, ...] = ()


#: Every rule, in code order.
CATALOGUE: dict[str, RuleEntry] = {
    entry.code: entry
    for entry in (
        RuleEntry("DDP101", "host-sync-in-forward", "code", False),
        RuleEntry("DDP102", "host-read-in-training-step", "code", False),
        RuleEntry("DDP103", "empty-cache-every-step", "code", False),
        RuleEntry("DDP104", "host-sync-on-some-ranks", "code", False),
        RuleEntry("DDP201", "collective-on-some-ranks", "code", False),
        RuleEntry("DDP202", "log-sync-dist-on-some-ranks", "code", True),
        RuleEntry("DDP203", "checkpoint-save-on-some-ranks", "code", False),
        RuleEntry("DDP204", "data-dependent-skip", "code", False),
        RuleEntry("DDP205", "training-step-returns-none", "code", True),
        RuleEntry("DDP206", "collective-in-exception-handler", "code", False),
        RuleEntry("DDP207", "process-group-on-some-ranks", "code", True),
        RuleEntry("DDP208", "step-on-some-ranks", "code", False),
        RuleEntry("DDP209", "collectives-in-set-loop", "code", True),
        RuleEntry("DDP210", "divergent-exit-before-collective", "code", False),
        RuleEntry("DDP211", "decision-on-some-ranks", "code", False),
        RuleEntry("DDP212", "swallowed-exception-skips-step", "code", True),
        RuleEntry("DDP213", "ddp-forward-on-some-ranks", "code", False),
        RuleEntry("DDP214", "log-dir-on-some-ranks", "code", True),
        RuleEntry("DDP215", "should-stop-on-some-ranks", "code", True),
        RuleEntry("DDP216", "skip-decided-by-one-rank", "code", True),
        RuleEntry("DDP217", "collectives-per-batch-value", "code", True),
        RuleEntry("DDP218", "file-check-decides-collective", "code", False),
        RuleEntry("DDP219", "ranks-part-before-collective", "code", False),
        RuleEntry("DDP220", "async-handle-not-waited", "code", False),
        RuleEntry("DDP230", "monitored-metric-rank-local", "code", False),
        RuleEntry("DDP240", "host-tensor-built-every-step", "code", False),
        RuleEntry("DDP250", "find-unused-without-unused", "code", False),
        RuleEntry("DDP301", "barrier-timeout-old-torch", "code", True),
        RuleEntry("DDP302", "monitored-barrier-nccl", "code", True),
        RuleEntry("DDP303", "timeout-not-timedelta", "code", True),
        RuleEntry("DDP304", "timeout-not-inherited", "code", True),
        RuleEntry("DDP305", "sigalrm-around-collective", "code", True),
        RuleEntry("DDP306", "timeout-shorter-than-rank-zero-work", "code", True),
        RuleEntry("DDP401", "last-batch-off-by-one", "code", True),
        RuleEntry("DDP402", "sampler-without-set-epoch", "code", True),
        RuleEntry("DDP403", "uneven-batches-across-ranks", "code", True),
        RuleEntry("DDP404", "dataloader-persistent-no-workers", "code", True),
        RuleEntry("DDP405", "uneven-rank-shards", "code", True),
        RuleEntry("DDP501", "nccl-without-device", "code", False),
        RuleEntry("DDP502", "branch-skips-submodule", "code", False),
        RuleEntry("DDP503", "collective-before-set-device", "code", True),
        RuleEntry("DDP601", "persistent-workers-without-workers", "config", True),
        RuleEntry("DDP602", "batchnorm-without-sync", "config", True),
        RuleEntry(
            "DDP603",
            "conformer-sync-max-audio-length",
            "config",
            True,
            code_facts=("rank-zero-calls",),
            needles=("ConformerEncoder", "SpectrogramConformer"),
        ),
        RuleEntry("DDP604", "tarred-shards-not-divisible", "config", True),
        RuleEntry(
            "DDP605",
            "checkpoint-name-unsynced-metric",
            "config",
            True,
            code_facts=("metric-logs",),
            needles=("checkpoint_callback_params", "ModelCheckpoint"),
        ),
        RuleEntry("DDP606", "sync-batchnorm-on-cpu", "config", True),
        RuleEntry("DDP607", "sampler-uneven-or-duplicated", "config", True),
        RuleEntry("DDP608", "trainer-disagrees-with-allocation", "config", True),
        RuleEntry("DDP609", "sync-bn-single-process-config", "config", True),
        RuleEntry("DDP610", "sync-bn-single-process-py-config", "code", True),
        RuleEntry("DDP611", "deepspeed-batch-size-mismatch", "config", False),
        RuleEntry("DDP612", "deepspeed-fp16-and-bf16", "config", False),
        RuleEntry("DDP613", "deepspeed-zero-option-ignored", "config", False),
        RuleEntry("DDP614", "accelerate-process-layout", "config", False),
        RuleEntry("DDP615", "lhotse-with-distributed-sampler", "config", False),
        RuleEntry(
            "DDP616",
            "monitor-rank-local-metric",
            "config",
            False,
            code_facts=("metric-logs",),
            needles=("monitor",),
        ),
        RuleEntry(
            "DDP620",
            "trainer-disagrees-with-launch-script",
            "config",
            False,
            code_facts=("launches",),
            needles=("devices", "num_nodes"),
        ),
        RuleEntry("DDP900", "unused-suppression", "suppression", False),
    )
}
