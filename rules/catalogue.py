"""What the engine and the settings need to know of every rule without importing the
rule modules (their imports reach LibCST and the semantic layer): code, name, kind,
whether it is on by default, which code facts a YAML rule reads, each rule's
pre-filter (its words, and the cheap text test some rules narrow them by) and its
screen on the module's ``ast`` (``rules/screens.py``), so a file is parsed, and a rule
module imported, only for the rules whose pre-filter and screen it passes.
``all_rules()`` stays the source of truth: a test checks that this table says what the
rule classes say (a new rule is a module and a line here).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import NamedTuple

from ddplint.needles import (
    AGREED_CALL_NEEDLES,
    COLLECTIVE_CALL_NEEDLES,
    COLLECTIVE_NEEDLES,
    DEVICE_CHOICE_NEEDLES,
    IMPLICIT_NEEDLES,
    RANK_NEEDLES,
    holds_words,
    without_stand_ins,
)
from ddplint.rules.prefilters import (
    barrier_timeout_spelled,
    enumerate_counter_tested,
    iterable_dataset_class,
    persistent_workers_true,
    timeout_spelled,
)
from ddplint.rules.screens import (
    catches_a_data_exception,
    defines_training_step,
    has_a_loop_statement,
    logs_with_sync_dist,
    loops_over_values,
    may_create_a_group,
    may_loop_over_a_set,
    may_shard_a_list_by_rank,
)
from ddplint.settings import LintOptions
from ddplint.source import is_json


class RuleEntry(NamedTuple):
    """One rule as the catalogue knows it (the fields of ``Rule`` of the same names)."""

    code: str
    name: str
    kind: str
    default_enabled: bool
    #: Code-fact kinds a config rule reads (``ConfigRule.code_facts``).
    code_facts: tuple[str, ...] = ()
    needles: tuple[str, ...] = ()
    also_needles: tuple[str, ...] = ()
    more_needles: tuple[tuple[str, ...], ...] = ()
    required: tuple[str, ...] = ()
    #: The rule's own narrowing of its words (``ddplint.rules.prefilters``), if any.
    narrowed_by: Callable[[bytes], bool] | None = None
    #: Whether a config rule also reads ``.json`` files (``ConfigRule.reads_json``).
    reads_json: bool = False
    #: The rule's screen on the module's ``ast`` (``CodeRule.screened_by``), if any.
    screened_by: Callable[[ast.Module, LintOptions], bool] | None = None

    def prefilter(self, raw: bytes, informed: bool = False) -> bool:
        """``Rule.prefilter`` of the rule, without importing it. ``informed``: the
        project's facts about the file can stand for a rank test, a collective, a DDP
        model or a device choice, so of its word groups only those the facts cannot
        stand for are asked for (its required words and its narrowing, which test words
        of its own, always are)."""
        groups = (self.needles, self.also_needles, *self.more_needles)
        if not holds_words(raw, self.required, without_stand_ins(groups) if informed else groups):
            return False
        return self.narrowed_by is None or self.narrowed_by(raw)

    def may_report(self, tree: ast.Module | None, options: LintOptions) -> bool:
        """``CodeRule.may_report`` of the rule, without importing it: its screen asked
        of the module's ``ast`` (``tree``; None where CPython refuses the module, and
        then the rule may report)."""
        return self.screened_by is None or tree is None or self.screened_by(tree, options)

    def reads(self, path: str) -> bool:
        """``Rule.reads`` of the rule: a config rule reads JSON only when it says so."""
        return self.kind != "config" or self.reads_json or not is_json(path)


#: Every rule, in code order.
CATALOGUE: dict[str, RuleEntry] = {
    entry.code: entry
    for entry in (
        RuleEntry("DDP101", "host-sync-in-forward", "code", False, needles=("synchronize",)),
        RuleEntry(
            "DDP102",
            "host-read-in-training-step",
            "code",
            False,
            needles=(".item(", ".cpu(", ".tolist(", ".numpy(", '"cpu"', "'cpu'", "float(", "int("),
        ),
        RuleEntry("DDP103", "empty-cache-every-step", "code", False, needles=("empty_cache",)),
        RuleEntry(
            "DDP104",
            "host-sync-on-some-ranks",
            "code",
            False,
            needles=("empty_cache", ".item(", ".cpu(", ".tolist(", ".numpy(", ".to("),
        ),
        RuleEntry(
            "DDP201",
            "collective-on-some-ranks",
            "code",
            False,
            needles=RANK_NEEDLES,
            also_needles=COLLECTIVE_NEEDLES,
            more_needles=(COLLECTIVE_CALL_NEEDLES,),
        ),
        RuleEntry(
            "DDP202",
            "log-sync-dist-on-some-ranks",
            "code",
            True,
            needles=RANK_NEEDLES,
            required=("sync_dist",),
            screened_by=logs_with_sync_dist,
        ),
        RuleEntry(
            "DDP203",
            "checkpoint-save-on-some-ranks",
            "code",
            False,
            needles=RANK_NEEDLES,
            also_needles=COLLECTIVE_NEEDLES,
            more_needles=(COLLECTIVE_CALL_NEEDLES,),
        ),
        RuleEntry(
            "DDP204", "data-dependent-skip", "code", False, needles=("backward(", "training_step")
        ),
        RuleEntry(
            "DDP205",
            "training-step-returns-none",
            "code",
            True,
            needles=("training_step",),
            screened_by=defines_training_step,
        ),
        RuleEntry(
            "DDP206",
            "collective-in-exception-handler",
            "code",
            False,
            needles=COLLECTIVE_CALL_NEEDLES,
            also_needles=COLLECTIVE_NEEDLES,
        ),
        RuleEntry(
            "DDP207",
            "process-group-on-some-ranks",
            "code",
            True,
            needles=RANK_NEEDLES,
            also_needles=COLLECTIVE_NEEDLES,
            more_needles=(COLLECTIVE_CALL_NEEDLES,),
            screened_by=may_create_a_group,
        ),
        RuleEntry("DDP208", "step-on-some-ranks", "code", False, needles=(".step(",)),
        RuleEntry(
            "DDP209",
            "collectives-in-set-loop",
            "code",
            False,
            needles=COLLECTIVE_CALL_NEEDLES,
            also_needles=COLLECTIVE_NEEDLES,
            screened_by=may_loop_over_a_set,
        ),
        RuleEntry(
            "DDP210",
            "divergent-exit-before-collective",
            "code",
            False,
            needles=COLLECTIVE_NEEDLES,
            more_needles=(COLLECTIVE_CALL_NEEDLES,),
        ),
        RuleEntry(
            "DDP211",
            "decision-on-some-ranks",
            "code",
            False,
            needles=RANK_NEEDLES,
            more_needles=((*COLLECTIVE_CALL_NEEDLES, *IMPLICIT_NEEDLES),),
        ),
        RuleEntry(
            "DDP212",
            "swallowed-exception-skips-step",
            "code",
            True,
            needles=("except",),
            also_needles=("backward(", "training_step"),
            screened_by=catches_a_data_exception,
        ),
        RuleEntry(
            "DDP213",
            "ddp-forward-on-some-ranks",
            "code",
            False,
            needles=("DistributedDataParallel",),
        ),
        RuleEntry(
            "DDP214",
            "log-dir-on-some-ranks",
            "code",
            True,
            needles=("log_dir",),
            also_needles=RANK_NEEDLES,
        ),
        RuleEntry("DDP215", "should-stop-on-some-ranks", "code", True, needles=("should_stop",)),
        RuleEntry(
            "DDP216",
            "skip-decided-by-one-rank",
            "code",
            True,
            needles=("broadcast",),
            also_needles=("backward(", "training_step"),
        ),
        RuleEntry(
            "DDP217",
            "collectives-per-batch-value",
            "code",
            True,
            needles=COLLECTIVE_NEEDLES,
            more_needles=(COLLECTIVE_CALL_NEEDLES,),
            screened_by=loops_over_values,
        ),
        RuleEntry(
            "DDP218",
            "file-check-decides-collective",
            "code",
            False,
            needles=(
                "exists",
                "isfile",
                "isdir",
                "listdir",
                "scandir",
                "glob",
                "is_file",
                "is_dir",
            ),
            also_needles=COLLECTIVE_NEEDLES,
            more_needles=(COLLECTIVE_CALL_NEEDLES,),
        ),
        RuleEntry(
            "DDP219",
            "ranks-part-before-collective",
            "code",
            False,
            needles=(*COLLECTIVE_NEEDLES, *IMPLICIT_NEEDLES),
            more_needles=((*COLLECTIVE_CALL_NEEDLES, *IMPLICIT_NEEDLES, "recv", "send"),),
        ),
        RuleEntry(
            "DDP220",
            "async-handle-not-waited",
            "code",
            False,
            needles=("async_op", "isend", "irecv", "batch_isend_irecv"),
        ),
        RuleEntry(
            "DDP221",
            "collective-arguments-differ",
            "code",
            False,
            needles=("torch.distributed", "import distributed", "deepspeed"),
            more_needles=(AGREED_CALL_NEEDLES,),
        ),
        RuleEntry(
            "DDP230",
            "monitored-metric-rank-local",
            "code",
            False,
            needles=("ModelCheckpoint", "EarlyStopping"),
            more_needles=((".log(", ".log_dict("),),
        ),
        RuleEntry(
            "DDP240",
            "host-tensor-built-every-step",
            "code",
            False,
            needles=("tensor(",),
            required=("device",),
        ),
        RuleEntry(
            "DDP250",
            "find-unused-without-unused",
            "code",
            False,
            needles=("find_unused_parameters",),
        ),
        RuleEntry(
            "DDP301",
            "barrier-timeout-old-torch",
            "code",
            True,
            needles=("barrier",),
            narrowed_by=barrier_timeout_spelled,
        ),
        RuleEntry("DDP302", "monitored-barrier-nccl", "code", True, needles=("monitored_barrier",)),
        RuleEntry(
            "DDP303",
            "timeout-not-timedelta",
            "code",
            True,
            needles=(
                "init_process_group",
                "new_group",
                "new_subgroups",
                "barrier",
                "Strategy",
                "InitProcessGroupKwargs",
                "init_distributed",
            ),
            narrowed_by=timeout_spelled,
        ),
        RuleEntry(
            "DDP304",
            "timeout-not-inherited",
            "code",
            False,
            needles=("new_group", "new_subgroups", "monitored_barrier"),
            required=("init_process_group",),
        ),
        RuleEntry(
            "DDP305", "sigalrm-around-collective", "code", True, needles=("alarm", "setitimer")
        ),
        RuleEntry(
            "DDP306",
            "timeout-shorter-than-rank-zero-work",
            "code",
            False,
            needles=("timeout",),
            also_needles=("timedelta", "ddp_timeout"),
        ),
        RuleEntry(
            "DDP401",
            "last-batch-off-by-one",
            "code",
            False,
            needles=("enumerate",),
            narrowed_by=enumerate_counter_tested,
        ),
        RuleEntry(
            "DDP402",
            "sampler-without-set-epoch",
            "code",
            False,
            needles=("DistributedSampler",),
            also_needles=("DataLoader",),
            screened_by=has_a_loop_statement,
        ),
        RuleEntry(
            "DDP403",
            "uneven-batches-across-ranks",
            "code",
            True,
            needles=("IterableDataset", "IterDataPipe"),
            required=("DataLoader",),
            narrowed_by=iterable_dataset_class,
        ),
        RuleEntry(
            "DDP404",
            "dataloader-persistent-no-workers",
            "code",
            False,
            needles=("persistent_workers",),
            required=("DataLoader",),
            narrowed_by=persistent_workers_true,
        ),
        RuleEntry(
            "DDP405",
            "uneven-rank-shards",
            "code",
            False,
            needles=("rank",),
            also_needles=(
                "world",
                "replica",
                "num_processes",
                "data_parallel",
                "dp_size",
                "nranks",
            ),
            screened_by=may_shard_a_list_by_rank,
        ),
        RuleEntry(
            "DDP406",
            "persistent-workers-fixed-true",
            "code",
            False,
            needles=("persistent_workers",),
            required=("DataLoader",),
            narrowed_by=persistent_workers_true,
        ),
        RuleEntry(
            "DDP501",
            "nccl-without-device",
            "code",
            False,
            needles=("nccl", "NCCL"),
            required=("init_process_group",),
        ),
        RuleEntry(
            "DDP502",
            "branch-skips-submodule",
            "code",
            False,
            needles=("DistributedDataParallel", "DDPStrategy", "strategy="),
        ),
        RuleEntry(
            "DDP503",
            "collective-before-set-device",
            "code",
            False,
            needles=DEVICE_CHOICE_NEEDLES,
            required=("init_process_group",),
        ),
        RuleEntry(
            "DDP601",
            "persistent-workers-without-workers",
            "config",
            True,
            needles=("persistent_workers",),
        ),
        RuleEntry(
            "DDP602",
            "batchnorm-without-sync",
            "config",
            True,
            needles=("ConformerEncoder", "SpectrogramConformer", "SqueezeformerEncoder"),
        ),
        RuleEntry(
            "DDP603",
            "conformer-sync-max-audio-length",
            "config",
            True,
            code_facts=("rank-zero-calls",),
            needles=("ConformerEncoder", "SpectrogramConformer"),
        ),
        RuleEntry("DDP604", "tarred-shards-not-divisible", "config", True, needles=("is_tarred",)),
        RuleEntry(
            "DDP605",
            "checkpoint-name-unsynced-metric",
            "config",
            True,
            code_facts=("metric-logs",),
            needles=("checkpoint_callback_params", "ModelCheckpoint"),
        ),
        RuleEntry("DDP606", "sync-batchnorm-on-cpu", "config", True, needles=("sync_batchnorm",)),
        RuleEntry(
            "DDP607",
            "sampler-uneven-or-duplicated",
            "config",
            True,
            needles=("use_distributed_sampler", "replace_sampler_ddp", "Sampler"),
        ),
        RuleEntry(
            "DDP608",
            "trainer-disagrees-with-allocation",
            "config",
            False,
            needles=("nodes", "tasks_per_node", "gpus_per_node"),
        ),
        RuleEntry("DDP609", "sync-bn-single-process-config", "config", True, needles=("SyncBN",)),
        RuleEntry(
            "DDP610",
            "sync-bn-single-process-py-config",
            "code",
            True,
            needles=("SyncBN",),
            also_needles=("launcher", "gpu_ids"),
        ),
        RuleEntry(
            "DDP611",
            "deepspeed-batch-size-mismatch",
            "config",
            False,
            needles=("train_micro_batch_size_per_gpu", "zero_optimization"),
            also_needles=("train_batch_size",),
            reads_json=True,
        ),
        RuleEntry(
            "DDP612",
            "deepspeed-fp16-and-bf16",
            "config",
            False,
            needles=("fp16",),
            also_needles=("bf16", "bfloat16"),
            required=("enabled",),
            reads_json=True,
        ),
        RuleEntry(
            "DDP613",
            "deepspeed-zero-option-ignored",
            "config",
            False,
            needles=("zero_optimization",),
            reads_json=True,
        ),
        RuleEntry(
            "DDP614",
            "accelerate-process-layout",
            "config",
            False,
            needles=("distributed_type",),
            also_needles=("num_processes",),
            reads_json=True,
        ),
        RuleEntry(
            "DDP615", "lhotse-with-distributed-sampler", "config", False, needles=("use_lhotse",)
        ),
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
