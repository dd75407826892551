"""DDP614: an accelerate launch config whose process count contradicts its own launcher,
machines or GPU list (preview)."""

from __future__ import annotations

from collections.abc import Iterator

from ddplint.config.accelerate import MULTI_DEVICE, PROCESS_PER_DEVICE, AccelerateLayout, layout
from ddplint.config.context import ConfigContext
from ddplint.config.document import ConfigDocument
from ddplint.config.values import ABSENT
from ddplint.finding import Finding, Severity
from ddplint.rule import ConfigRule


class AccelerateProcessLayout(ConfigRule):
    """
    ## What it does
    Flags an accelerate config file (`compute_environment`, `distributed_type`,
    `num_processes`, ... as `accelerate config` writes it) that contradicts itself:

    - `distributed_type: NO` with `num_processes` above 1;
    - `num_processes` (the total over all machines) not a multiple of `num_machines`;
    - on one machine, `gpu_ids` listing fewer GPUs than `num_processes` with a
      one-process-per-GPU `distributed_type` (`MULTI_GPU`, `FSDP`, `DEEPSPEED`, ...), or
      a single id with a `MULTI_*` type.

    Values that are not plain (`all`, interpolations) are not judged. Preview (opt-in):
    no blind measurement exists for it yet.

    ## Why is this bad?
    - With `distributed_type: NO`, `accelerate launch --config_file` uses its simple
      launcher: one process, whatever `num_processes` says (unless the command line
      adds `--multi_gpu`). A run meant for many GPUs trains on one, silently; a file
      meant for one GPU carries a number nothing reads.
    - Each machine starts `num_processes // num_machines` processes (torchrun's
      `--nproc_per_node`, DeepSpeed's `--num_gpus`): `num_processes: 12` on
      `num_machines: 8` starts 8 processes, not 12, silently.
    - `gpu_ids` becomes `CUDA_VISIBLE_DEVICES`: the processes whose local rank has no
      listed GPU fail to select a device (`invalid device ordinal`) at start; with one
      id and `MULTI_*`, `accelerate launch` refuses (`Less than two GPU ids were
      configured`).

    ## Example
    ```yaml
    compute_environment: LOCAL_MACHINE
    distributed_type: MULTI_GPU
    gpu_ids: 0,1
    num_machines: 1
    num_processes: 4
    ```

    ## Use instead
    ```yaml
    compute_environment: LOCAL_MACHINE
    distributed_type: MULTI_GPU
    gpu_ids: 0,1,2,3
    num_machines: 1
    num_processes: 4
    ```

    ## Fix safety
    No automatic fix: the number of processes or the list of GPUs may be the side that
    is wrong.

    ## References
    - accelerate docs, "Launching your Accelerate scripts" and the `accelerate launch`
      CLI reference (`--num_processes` is the total over all machines).
    - accelerate `commands/launch.py` (`_validate_launch_command`, `launch_command`)
      and `utils/launch.py` (`prepare_multi_gpu_env`, `prepare_deepspeed_cmd_env`).
    - huggingface/trl PR 3637 ("fixing num_processes": `single_gpu.yaml`, NO with 8);
      huggingface/accelerate issue 1316 (one GPU id); RUCAIBox/TextBox issue 343.
    """

    code = "DDP614"
    name = "accelerate-process-layout"
    summary = "accelerate config: `num_processes` contradicts the launcher, machines or GPUs"
    severity = Severity.ERROR
    default_enabled = False
    reads_json = True
    needles = ("distributed_type",)
    also_needles = ("num_processes",)

    def check(self, ctx: ConfigContext) -> Iterator[Finding]:
        for doc in ctx.accelerate_configs:
            found = layout(doc)
            if found.num_processes is None:
                continue
            yield from self._single_process(ctx, doc, found)
            yield from self._uneven_machines(ctx, doc, found)
            yield from self._too_few_gpus(ctx, doc, found)

    def _single_process(
        self, ctx: ConfigContext, doc: ConfigDocument, found: AccelerateLayout
    ) -> Iterator[Finding]:
        processes = found.num_processes or 0
        if found.distributed_type != "NO" or processes <= 1:
            return
        if doc.value(("mpirun_hostfile",)) not in (ABSENT, None):
            return  # MPI starts the CPU processes
        at = doc.entry(("num_processes",))
        assert at is not None
        message = (
            f"is {processes} while `distributed_type` is NO: `accelerate launch` uses its "
            "simple launcher, starts one process and never reads this value (unless the "
            f"command line adds `--multi_gpu`); if {processes} processes are meant, set a "
            "multi-process `distributed_type` (`MULTI_GPU`, ...)"
        )
        summary = f"is {processes}, but `distributed_type: NO` starts one process"
        yield ctx.finding(self, doc, at, message, summary=summary)

    def _uneven_machines(
        self, ctx: ConfigContext, doc: ConfigDocument, found: AccelerateLayout
    ) -> Iterator[Finding]:
        processes, machines = found.num_processes or 0, found.num_machines
        if found.distributed_type not in PROCESS_PER_DEVICE or machines is None or machines < 2:
            return
        if processes % machines == 0:
            return
        per_machine = processes // machines
        at = doc.entry(("num_processes",))
        assert at is not None
        message = (
            f"is {processes}, not a multiple of `num_machines` {machines}: each machine "
            f"starts {processes} // {machines} = {per_machine} processes, "
            f"{per_machine * machines} in all (`num_processes` is the total over all machines)"
        )
        summary = f"is {processes}, but {machines} machines start {per_machine * machines}"
        yield ctx.finding(self, doc, at, message, summary=summary)

    def _too_few_gpus(
        self, ctx: ConfigContext, doc: ConfigDocument, found: AccelerateLayout
    ) -> Iterator[Finding]:
        processes, ids = found.num_processes or 0, found.gpu_ids
        if found.distributed_type not in PROCESS_PER_DEVICE or ids is None:
            return
        refused = len(ids) < 2 and found.distributed_type in MULTI_DEVICE
        if found.num_machines != 1 or (len(ids) >= processes and not refused):
            return
        at = doc.entry(("gpu_ids",))
        assert at is not None
        listed = ",".join(ids)
        if refused:
            message = (
                f"lists one GPU ({listed}) with `distributed_type` {found.distributed_type}: "
                "`accelerate launch` refuses it (`Less than two GPU ids were configured`)"
            )
            summary = f"lists one GPU with `distributed_type` {found.distributed_type}"
        else:
            message = (
                f"lists {len(ids)} GPUs ({listed}) for `num_processes` {processes}: it becomes "
                f"`CUDA_VISIBLE_DEVICES`, so the processes of local rank {len(ids)} and above "
                "have no GPU to select (`invalid device ordinal` at start)"
            )
            summary = f"lists {len(ids)} GPUs for {processes} processes"
        yield ctx.finding(self, doc, at, message, summary=summary)
