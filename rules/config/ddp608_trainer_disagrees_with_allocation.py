"""DDP608: ``trainer.num_nodes`` / ``trainer.devices`` that disagree with the cluster
allocation written in the same file."""

from __future__ import annotations

from collections.abc import Iterator

from ddplint.config.allocation import Allocated, allocation
from ddplint.config.context import ConfigContext
from ddplint.config.document import ConfigDocument, KeyPath, dotted
from ddplint.config.edits import set_or_add
from ddplint.config.training import lightning_trainer
from ddplint.config.values import ABSENT, plain_scalar
from ddplint.finding import Applicability, Finding, Fix, Severity
from ddplint.rule import ConfigRule

NODES_KEY: KeyPath = ("trainer", "num_nodes")
DEVICES_KEY: KeyPath = ("trainer", "devices")


class TrainerDisagreesWithAllocation(ConfigRule):
    """
    ## What it does
    Flags a Lightning `trainer:` whose process layout disagrees with the SLURM
    allocation the same file asks for (Hydra's submitit launcher `hydra.launcher`, or a
    top-level `slurm:` / `submitit:` / `cluster:` / `launcher:` section):

    - `trainer.num_nodes` (Lightning's default 1 when absent) differs from the allocated
      `nodes`;
    - `trainer.devices` (a number) differs from `tasks_per_node` / `ntasks_per_node`;
    - `trainer.devices` asks for more GPUs than `gpus_per_node` gives.

    Unknown values (resolvers, `auto`, `-1`) and local launchers are not compared.

    ## Why is this bad?
    Under SLURM, Lightning takes ranks from the scheduler and checks them against the
    trainer: `ValueError: You set num_nodes=1 in Lightning, but the number of nodes
    configured in SLURM --nodes=2 does not match` (likewise devices against
    `--ntasks-per-node`). The job fails at start, after waiting in the queue; with
    older versions or launchers that do not check, the process group waits for ranks
    that never come. More devices than the node's GPUs fail device selection.

    ## Example
    ```yaml
    trainer:
      devices: 8
      num_nodes: 1
    hydra:
      launcher:
        nodes: 2
        tasks_per_node: 8
        gpus_per_node: 8
    ```

    ## Use instead
    ```yaml
    trainer:
      devices: 8
      num_nodes: ${hydra:launcher.nodes}  # or 2
    ```

    ## Fix safety
    The fix sets the trainer's value to the allocation's (adding `num_nodes` when it is
    missing), where the trainer's value is a literal number. It is unsafe: the
    allocation may be the side that is wrong.

    ## References
    - Lightning `SLURMEnvironment.validate_settings`
      (`lightning/fabric/plugins/environments/slurm.py`).
    - Lightning docs: "Run on an on-prem cluster (SLURM)".
    - Hydra submitit launcher plugin documentation.
    """

    code = "DDP608"
    name = "trainer-disagrees-with-allocation"
    summary = "trainer num_nodes / devices differ from the SLURM allocation in the file"
    severity = Severity.ERROR
    default_enabled = False
    fix_applicability = Applicability.UNSAFE
    needles = ("nodes", "tasks_per_node", "gpus_per_node")

    def check(self, ctx: ConfigContext) -> Iterator[Finding]:
        for doc in ctx.configs:
            if lightning_trainer(doc.root) is None:
                continue
            allocated = allocation(doc)
            if allocated is None:
                continue
            if allocated.nodes is not None:
                yield from self._compare(ctx, doc, NODES_KEY, allocated.nodes, "nodes")
            devices = doc.value(DEVICES_KEY)
            if not isinstance(devices, int) or isinstance(devices, bool) or devices < 1:
                continue
            if allocated.tasks_per_node is not None:
                yield from self._compare(
                    ctx, doc, DEVICES_KEY, allocated.tasks_per_node, "tasks per node"
                )
            elif allocated.gpus_per_node is not None and devices > allocated.gpus_per_node.value:
                yield self._too_many_devices(ctx, doc, devices, allocated.gpus_per_node)

    def _compare(
        self,
        ctx: ConfigContext,
        doc: ConfigDocument,
        key: KeyPath,
        allocated: Allocated,
        what: str,
    ) -> Iterator[Finding]:
        value = doc.value(key)
        if value is ABSENT and key == NODES_KEY:
            value = 1  # Lightning's default
        if not isinstance(value, int) or isinstance(value, bool) or value == allocated.value:
            return
        found = doc.entry(key)
        at = found or doc.entry(allocated.path)
        assert at is not None
        stated = f"is {value}" if found is not None else f"is not set (Lightning's default {value})"
        hint = "num_nodes" if key == NODES_KEY else "devices"
        message = (
            f"{stated} while `{dotted(allocated.path)}` allocates {allocated.value} {what}: "
            "under SLURM Lightning compares the two at start and raises `ValueError: You set "
            f"{hint}={value} in Lightning, but the number of {what} configured in SLURM "
            "... does not match` (after the queue wait); launchers that do not check leave "
            "the process group waiting for ranks that never come"
        )
        summary = f"{stated}, but SLURM allocates {allocated.value} {what}"
        fix = self._fix(ctx, doc, key, allocated.value)
        yield ctx.finding(self, doc, at, message, fix, key_path=key, summary=summary)

    def _too_many_devices(
        self, ctx: ConfigContext, doc: ConfigDocument, devices: int, gpus: Allocated
    ) -> Finding:
        found = doc.entry(DEVICES_KEY)
        assert found is not None
        message = (
            f"is {devices} while `{dotted(gpus.path)}` gives each node {gpus.value} GPUs: "
            "Lightning cannot select more devices than the node has and fails at start"
        )
        summary = f"is {devices}, but each node has {gpus.value} GPUs"
        fix = self._fix(ctx, doc, DEVICES_KEY, gpus.value)
        return ctx.finding(self, doc, found, message, fix, summary=summary)

    @staticmethod
    def _fix(ctx: ConfigContext, doc: ConfigDocument, key: KeyPath, value: int) -> Fix | None:
        found = doc.entry(key)
        if found is not None and not isinstance(plain_scalar(found.value), int):
            return None  # an interpolation or a string: leave it to the author
        return ctx.checked_fix(
            doc,
            [set_or_add(doc, key[:-1], str(key[-1]), str(value))],
            {key: value},
            Applicability.UNSAFE,
            f"Set `{dotted(key)}: {value}` (the allocation's value)",
        )
