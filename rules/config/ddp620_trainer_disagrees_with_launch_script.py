"""DDP620: ``trainer.devices`` / ``trainer.num_nodes`` that disagree with the launch
script that runs the config (``#SBATCH``, ``srun``, ``torchrun``) (preview)."""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from dataclasses import dataclass

from ddplint.code_facts import LAUNCHES
from ddplint.config.context import ConfigContext
from ddplint.config.document import ConfigDocument, KeyPath, dotted
from ddplint.config.launch_scripts import Launch, Stated
from ddplint.config.training import lightning_trainer
from ddplint.config.values import ABSENT, positive_int
from ddplint.config.world_size import count_devices
from ddplint.finding import Finding, Severity
from ddplint.rule import ConfigRule

NODES_KEY: KeyPath = ("trainer", "num_nodes")
DEVICES_KEY: KeyPath = ("trainer", "devices")
CONFIG_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class LaunchSite:
    """A launch that runs this config, and the script it is written in."""

    launch: Launch
    script: str

    def where(self, stated: Stated) -> str:
        return f"`{self.script}:{stated.line}` (`{_shorten(stated.text)}`)"


def _shorten(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _count(number: int | None, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _stem(name: str) -> str:
    for suffix in CONFIG_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _normal(path: str) -> str:
    """``./conf/../conf/a.yaml`` -> ``conf/a.yaml``; leading ``../`` dropped."""
    parts = [
        p for p in posixpath.normpath(path.replace("\\", "/")).split("/") if p not in ("", ".")
    ]
    while parts and parts[0] == "..":
        parts.pop(0)
    return "/".join(parts)


def _ends_with(path: str, tail: str) -> bool:
    return bool(tail) and (path == tail or path.endswith("/" + tail))


def names_config(launch: Launch, config: str) -> bool:
    """Whether the command names the config file at ``config`` (a display path): a word
    that is its path (or the end of it), or Hydra's ``--config-name`` (with a
    ``--config-path`` that ends at its folder, when written)."""
    config = _normal(config)
    if "$" not in (launch.config_name or "$"):
        name = _stem(_normal(launch.config_name or ""))
        folder = posixpath.dirname(config)
        if _ends_with(_stem(config), name):
            path = launch.config_path
            if path is None or "$" in path or _ends_with(folder, _normal(path) or folder):
                return True
    return any(
        "$" not in word and _ends_with(config, _normal(word)) and word.endswith(CONFIG_SUFFIXES)
        for word in launch.config_words
    )


def _trainer_int(doc: ConfigDocument, key: KeyPath) -> int | None:
    value = doc.value(key)
    if key == NODES_KEY and (value is ABSENT or value is None):
        return 1  # Lightning's default
    if key == DEVICES_KEY:
        count = count_devices(value)
        return count if isinstance(count, int) else None
    return positive_int(value)


class TrainerDisagreesWithLaunchScript(ConfigRule):
    """
    ## What it does
    Flags a Lightning / NeMo `trainer:` whose process layout disagrees with a launch
    script of the repository that runs this config (names its file, or its
    `--config-name`):

    - under `torchrun` (`python -m torch.distributed.run`): `devices` x `num_nodes`
      differs from `--nproc_per_node` x `--nnodes`;
    - in an sbatch script (`#SBATCH` lines, `srun`): `num_nodes` (Lightning's default 1
      when absent) differs from `--nodes` / `-N`; `devices` differs from
      `--ntasks-per-node`; or, with no tasks per node, `devices` asks for more GPUs
      than `--gpus-per-node` / `--gres=gpu:N` gives.

    The finding sits on the config's value and cites the script's line. A value the
    command line sets (`trainer.devices=8`), a value spelled with a shell variable
    (`--nnodes=$NNODES`), `devices: auto` / `-1` and a config no script names are not
    judged. When several scripts run the config, one that agrees is enough.

    Preview (opt-in): on 44 repositories it was not built on (345 launch scripts, 667
    training commands read) no script runs a Lightning / NeMo trainer config, so it has
    not fired on code it was not built on.

    ## Why is this bad?
    Lightning checks the trainer against the launcher at start: under torchrun
    `ValueError: You set devices=8 and num_nodes=1 in Lightning, but the product (8 * 1)
    does not match the world size (16)`; under SLURM `You set num_nodes=1 in Lightning,
    but the number of nodes configured in SLURM --nodes=2 does not match` (likewise
    devices against `--ntasks-per-node`). The job fails after its queue wait; older
    versions, and launchers that do not check, leave the process group waiting for ranks
    that never come, or train on fewer GPUs than were paid for.

    ## Example
    ```yaml
    # conf/train.yaml, run by `#SBATCH --nodes=2` / `srun python train.py --config-name train`
    trainer:
      devices: 8
      num_nodes: 1
    ```

    ## Use instead
    ```yaml
    trainer:
      devices: 8
      num_nodes: 2
    ```
    or pass the allocation on the command line (`trainer.num_nodes=$SLURM_NNODES`).

    ## Fix safety
    No automatic fix: the script may be the side that is wrong.

    ## References
    - Lightning `SLURMEnvironment.validate_settings` and
      `TorchElasticEnvironment.validate_settings`
      (`lightning/fabric/plugins/environments/`).
    - Lightning-AI/pytorch-lightning issues 6206 (stuck at init: `-N 2` without
      `--ntasks-per-node`), 14078 (num_nodes and devices must match the launcher's world
      size; lists the issues it caused), 20391.
    """

    code = "DDP620"
    name = "trainer-disagrees-with-launch-script"
    summary = "trainer devices / num_nodes differ from the launch script that runs the config"
    severity = Severity.ERROR
    default_enabled = False
    needles = ("devices", "num_nodes")
    code_facts = (LAUNCHES,)

    def check(self, ctx: ConfigContext) -> Iterator[Finding]:
        sites = [
            LaunchSite(Launch.from_record(record), str(record["path"]))
            for record in ctx.code_facts.launches
        ]
        sites = [s for s in sites if names_config(s.launch, ctx.source.path)]
        if not sites:
            return
        for doc in ctx.configs:
            if lightning_trainer(doc.root) is None:
                continue
            yield from self._nodes(ctx, doc, sites)
            yield from self._devices(ctx, doc, sites)

    def _nodes(
        self, ctx: ConfigContext, doc: ConfigDocument, sites: list[LaunchSite]
    ) -> Iterator[Finding]:
        """``num_nodes`` against the nodes of sbatch / srun launches."""
        nodes = _trainer_int(doc, NODES_KEY)
        stated = [
            (site, site.launch.allocation["nodes"])
            for site in self._judged(sites, NODES_KEY)
            if site.launch.launcher != "torchrun" and "nodes" in site.launch.allocation
        ]
        if nodes is None or not stated or any(s.known in (None, nodes) for _, s in stated):
            return
        site, allocated = stated[0]
        yield self._finding(
            ctx,
            doc,
            NODES_KEY,
            nodes,
            f"allocates {_count(allocated.known, 'node')}",
            site,
            allocated,
        )

    def _devices(
        self, ctx: ConfigContext, doc: ConfigDocument, sites: list[LaunchSite]
    ) -> Iterator[Finding]:
        devices, nodes = _trainer_int(doc, DEVICES_KEY), _trainer_int(doc, NODES_KEY)
        if devices is None:
            return
        wrong: list[tuple[str, LaunchSite, Stated]] = []
        for site in self._judged(sites, DEVICES_KEY):
            verdict = _devices_verdict(site.launch, devices, nodes)
            if verdict is None:
                continue
            if verdict[0] == "":
                return  # a launch that agrees
            wrong.append((verdict[0], site, verdict[1]))
        if not wrong:
            return
        what, site, stated = wrong[0]
        per_node = site.launch.allocation.get("nproc_per_node")
        if (
            site.launch.launcher == "torchrun"
            and per_node is not None
            and per_node.known == devices
        ):
            # the devices agree: the node count is what differs
            yield self._finding(ctx, doc, NODES_KEY, nodes or 1, what, site, stated)
        else:
            yield self._finding(ctx, doc, DEVICES_KEY, devices, what, site, stated)

    @staticmethod
    def _judged(sites: list[LaunchSite], key: KeyPath) -> list[LaunchSite]:
        """The launches that leave ``key`` (and ``trainer`` itself) to the config."""
        return [
            s
            for s in sites
            if dotted(key) not in s.launch.overrides and "trainer" not in s.launch.overrides
        ]

    def _finding(
        self,
        ctx: ConfigContext,
        doc: ConfigDocument,
        key: KeyPath,
        value: int,
        what: str,
        site: LaunchSite,
        stated: Stated,
    ) -> Finding:
        found = doc.entry(key)
        at = found or doc.entry(key[:-1])
        assert at is not None
        shown = f"is {value}" if found is not None else f"is not set (Lightning's default {value})"
        message = (
            f"{shown} while the launch script {site.where(stated)} {what}: Lightning "
            "compares the two at start and raises `ValueError` (after the queue wait); "
            "launchers that do not check leave the process group waiting for ranks that "
            "never come, or train on fewer GPUs"
        )
        summary = f"{shown}, but `{site.script}:{stated.line}` {what}"
        return ctx.finding(self, doc, at, message, key_path=key, summary=summary)


def _devices_verdict(launch: Launch, devices: int, nodes: int | None) -> tuple[str, Stated] | None:
    """None when the launch says nothing comparable; ("", stated) when it agrees;
    (what it allocates, stated) when it disagrees."""
    allocation = launch.allocation
    if launch.launcher == "torchrun":
        per_node = allocation.get("nproc_per_node")
        stated_nodes = allocation.get("nnodes")
        if per_node is None or per_node.known is None or nodes is None:
            return None
        if stated_nodes is not None:
            run_nodes = stated_nodes.known
        elif "nodes" in allocation and allocation["nodes"].known != 1:
            return None  # torchrun on each node of a multi-node job, nnodes not given
        else:
            run_nodes = 1
        if run_nodes is None:
            return None
        if devices * nodes == per_node.known * run_nodes:
            return "", per_node
        return (
            f"starts {per_node.known} x {run_nodes} = {per_node.known * run_nodes} processes "
            f"(`devices` x `num_nodes` = {devices * nodes})",
            per_node,
        )
    tasks = allocation.get("tasks_per_node")
    if tasks is not None:
        if tasks.known is None:
            return None
        return (
            ("", tasks)
            if tasks.known == devices
            else (f"runs {_count(tasks.known, 'task')} per node", tasks)
        )
    gpus = allocation.get("gpus_per_node")
    if gpus is None or gpus.known is None:
        return None
    if devices <= gpus.known:
        return "", gpus
    return f"gives each node {_count(gpus.known, 'GPU')}", gpus
