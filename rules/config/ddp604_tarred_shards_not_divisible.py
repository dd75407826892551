"""DDP604: tarred shards that do not divide evenly over the ranks."""

from __future__ import annotations

from collections.abc import Iterator

from ddplint.config.context import ConfigContext
from ddplint.config.nemo import dataset_sections, is_lhotse, is_tarred, shard_counts, shard_strategy
from ddplint.finding import Finding, Severity
from ddplint.rule import ConfigRule

SHARD_PATHS = "tarred_audio_filepaths"


def _problem(shards: int, ranks: int) -> str | None:
    if shards < ranks:
        return (
            f"{shards} shards for {ranks} ranks: `scatter` gives every rank "
            f"{shards} // {ranks} = 0 shards, so the dataset is empty"
        )
    if shards % ranks:
        return (
            f"{shards} shards over {ranks} ranks: each rank reads {shards // ranks}, and "
            f"{shards % ranks} shards are never read (silent data loss)"
        )
    return None


class TarredShardsNotDivisible(ConfigRule):
    """
    ## What it does
    Flags a NeMo tarred dataset (`is_tarred: true`, not Lhotse) with the `scatter` shard
    strategy (`tarred_shard_strategy`, the default) whose number of shards is not a
    multiple of the world size (`trainer.devices` x `trainer.num_nodes`, when both are
    known). Shards are counted as NeMo counts them: a brace pattern
    (`audio__OP_0..511_CL_.tar` or `audio_{0..511}.tar`), a comma-separated string, a
    list, or a list of lists (one per bucket).

    ## Why is this bad?
    NeMo's `expand_sharded_filepaths` gives each rank `N // W` consecutive shards. The
    `N % W` left over are never read, and with fewer shards than ranks every rank gets
    none and the dataset is empty. Both were reproduced with NeMo's own function. Ranks
    then also run out of data at different steps, which desynchronises collectives.

    ## Example
    ```yaml
    model:
      train_ds:
        is_tarred: true
        tarred_audio_filepaths: /data/audio__OP_0..99_CL_.tar   # 100 shards
    trainer:
      devices: 8
      num_nodes: 2                                               # 16 ranks
    ```

    ## Use instead
    Reshard to a multiple of the world size (e.g. 128 shards for 16 ranks), or set
    `tarred_shard_strategy: replicate` so that every rank reads every shard.

    ## Fix safety
    No automatic fix: the data has to be resharded, or the strategy changed on purpose.

    ## References
    - NeMo `nemo.collections.asr.data.audio_to_text.expand_sharded_filepaths`.
    """

    code = "DDP604"
    name = "tarred-shards-not-divisible"
    summary = "Tarred shard count not divisible by devices x num_nodes (scatter)"
    severity = Severity.WARNING
    needles = ("is_tarred",)

    def check(self, ctx: ConfigContext) -> Iterator[Finding]:
        for doc in ctx.configs:
            ranks = ctx.world(doc).processes
            if ranks is None or ranks <= 1:
                continue
            for section, _ in dataset_sections(doc):
                if not is_tarred(doc, section) or is_lhotse(doc, section):
                    continue
                if shard_strategy(doc, section) != "scatter":
                    continue
                counts = shard_counts(doc.value((*section, SHARD_PATHS)))
                if not counts:
                    continue
                problems = [
                    f"bucket {i}: {p}" if len(counts) > 1 else p
                    for i, count in enumerate(counts)
                    for p in [_problem(count, ranks)]
                    if p
                ]
                if not problems:
                    continue
                found = doc.entry((*section, SHARD_PATHS))
                assert found is not None
                message = (
                    f"has {'; '.join(problems)} ({ctx.world(doc).describe}). Reshard to a "
                    "multiple of the world size, or set `tarred_shard_strategy: replicate`"
                )
                shown = ", ".join(str(count) for count in counts)
                summary = f"has {shown} shards, not a multiple of {ranks} ranks"
                yield ctx.finding(self, doc, found, message, summary=summary)
