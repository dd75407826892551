"""One verify run end to end: check the environment, launch, watch, load the traces,
compare the ranks, lint the code that ran, map the two, and keep or drop the run folder."""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from ddplint.engine.run import lint_paths
from ddplint.results import RunResult
from ddplint.settings import LintOptions, Settings
from ddplint.verify import c10d_ops, launch, watch
from ddplint.verify.compare import Comparison, RuntimeProblem, compare, runtime_problems
from ddplint.verify.dump_diagnosis import dump_split
from ddplint.verify.entry import EntryError, check_entry
from ddplint.verify.flight_recorder import dump_path
from ddplint.verify.frames import FrameFilter
from ddplint.verify.launch import LaunchSpec
from ddplint.verify.mapping import Mapping, map_findings
from ddplint.verify.reaper import UNKNOWN_COMMAND, Leftover
from ddplint.verify.scope import files_that_ran, load_execution, probe_targets, write_probes
from ddplint.verify.trace import RankTrace, load_run

EXIT_INTERRUPTED = 130
#: PyTorch's own index of CPU-only wheels: what a plain ``pip install torch`` is not.
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


class VerifyError(Exception):
    """The run could not be made (no torch, no CUDA for NCCL, no such entry): exit 2."""


@dataclass
class VerifyResult:
    spec: LaunchSpec
    watch: watch.WatchResult
    traces: dict[int, RankTrace]
    comparison: Comparison
    problems: list[RuntimeProblem]
    mapping: Mapping
    static: RunResult
    checksum_spread: list[dict[str, object]] = field(default_factory=list)
    kept: bool = True
    #: Processes of the run still alive after it ended (killed by the final sweep).
    leftovers: list[Leftover] = field(default_factory=list)
    #: Collectives only the flight recorder saw (merged into the traces).
    c10d_only: int = 0
    #: Where the ranks' own flight-recorder dumps split (``verify-dumps``'s model), when
    #: every rank left one.
    dump_comparison: Comparison | None = None

    def notes(self) -> list[str]:
        """What the reader should know to trust the report."""
        notes = []
        overridden: dict[tuple[str, str], list[str]] = {}
        for trace in self.traces.values():
            asked, used = trace.requested_backend, trace.backend
            if asked and used and asked != used:
                overridden.setdefault((asked, used), []).append(str(trace.rank))
        for (asked, used), ranks in overridden.items():
            notes.append(f"the code asked for {asked}; rank {', '.join(ranks)} ran on {used}")
        finished = all(t.exit and t.exit.status != "error" for t in self.traces.values())
        if self.spec.checksum and finished and not self.checksum_spread:
            notes.append("--checksum: no rank recorded parameters (no DDP model or optimizer seen)")
        world = max((t.world_size for t in self.traces.values()), default=0)
        absent = [r for r in range(world) if r not in self.traces]
        if absent and not self.spec.standalone:
            notes.append(
                f"ranks {', '.join(map(str, absent))} have no trace in {self.spec.run_dir}: "
                "they ran on other machines (a shared --trace-dir lets one report see them)"
            )
        if self.c10d_only:
            notes.append(
                f"{self.c10d_only} c10d op(s) (functional collectives, DTensor, C++ hooks) "
                "were seen by the flight recorder only; they are compared with the rest"
            )
        dumped = self.dump_comparison
        if dumped is not None and dumped.first is not None and self.comparison.first is None:
            notes.append(
                "the flight-recorder dumps show a split the Python-level trace did not: "
                f"{dumped.first.detail} at c10d collective #{dumped.first.position} "
                f"(ddplint verify-dumps {self.spec.run_dir})"
            )
        if self.leftovers:
            shown = "; ".join(f"pid {p.pid}: {p.command[:80]}" for p in self.leftovers[:5])
            more = f" (and {len(self.leftovers) - 5} more)" if len(self.leftovers) > 5 else ""
            notes.append(
                f"{len(self.leftovers)} process(es) of the run outlived it and were killed: "
                f"{shown}{more}"
            )
        return notes

    @property
    def outcome(self) -> str:
        """interrupted, hang, divergence, failed or params-differ, or clean."""
        if self.watch.interrupted:
            return "interrupted"
        if self.watch.hang is not None:
            return "hang"
        if self.comparison.divergences or self.comparison.call_site_mismatches:
            return "divergence"
        if any(p.kind == "error" for p in self.problems) or self.watch.returncode:
            return "failed"
        if any(not row["identical"] for row in self.checksum_spread):
            return "params-differ"
        return "clean"

    @property
    def exit_code(self) -> int:
        """0 clean, 130 interrupted (as other tools on Ctrl-C), 1 anything else."""
        return {"clean": 0, "interrupted": EXIT_INTERRUPTED}.get(self.outcome, 1)

    def timings(self) -> dict[str, float | None]:
        """Seconds after launch: all ranks started, torch ready, first collective, hang."""
        start = self.watch.launched_at

        def last(values: list[float | None]) -> float | None:
            known = [v for v in values if v is not None]
            return round(max(known) - start, 2) if known else None

        traces = self.traces.values()
        firsts = [min(c.time for c in t.calls) for t in traces if t.calls]
        hang = self.watch.hang
        return {
            "ranks_started_s": last([t.started_at for t in traces]),
            "ranks_ready_s": last([t.ready_at for t in traces]),
            "first_collective_s": round(min(firsts) - start, 2) if firsts else None,
            "hang_diagnosed_s": round(hang.detected_after, 2) if hang else None,
            "total_s": round(self.watch.elapsed, 2),
        }


def check_environment(backend: str, ranks_per_node: int) -> None:
    """torch is an optional extra; NCCL needs CUDA and a GPU for each rank of this node.
    Say how to get what is missing."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        raise VerifyError(
            "`ddplint verify` runs the ranks with torch.distributed, and torch is not "
            f"installed for {sys.executable}. Install the CPU build into that environment "
            f"with: {shlex.quote(sys.executable)} -m pip install torch --index-url "
            f"{TORCH_CPU_INDEX} (a plain `pip install torch` on Linux downloads the CUDA "
            "build, several GB; for GPUs pick the build at https://pytorch.org/get-started/locally/)"
        )
    if backend == "nccl":
        import torch

        if not torch.cuda.is_available():
            raise VerifyError(
                "--backend nccl needs CUDA, and torch.cuda.is_available() is False here "
                f"(torch {torch.__version__}); use --backend gloo (or auto) on this machine"
            )
        gpus = torch.cuda.device_count()
        if gpus < ranks_per_node:
            # Each rank takes the GPU of its local rank; NCCL also refuses two ranks of
            # one group on one GPU, so a rank past the last GPU fails at its first step.
            raise VerifyError(
                f"--backend nccl needs a GPU for each rank: {ranks_per_node} ranks per node "
                f"asked, {gpus} GPU(s) visible here; use --nproc-per-node {gpus}, or "
                "--backend gloo (auto chooses gloo here)"
            )


def run_folder(trace_dir: str, spec: LaunchSpec) -> str:
    """A new sub-folder of the user's ``--trace-dir`` for this run: nothing already there
    is read, replaced or deleted. Machines sharing the folder meet in one sub-folder
    named by the rendezvous id."""
    os.makedirs(trace_dir, exist_ok=True)
    if spec.standalone:
        return tempfile.mkdtemp(prefix=time.strftime("verify-%Y%m%d-%H%M%S-"), dir=trace_dir)
    shared = os.path.join(trace_dir, f"verify-{spec.rdzv_id or 'shared'}")
    os.makedirs(shared, exist_ok=True)
    return shared


def checksum_spread(traces: dict[int, RankTrace]) -> list[dict[str, object]]:
    """Per model: each rank's parameter hash and sum, and whether all ranks agree."""
    names: dict[str, dict[int, dict[str, object]]] = {}
    for rank, trace in traces.items():
        for row in trace.checksums:
            names.setdefault(str(row["name"]), {})[rank] = row
    spread = []
    for name, by_rank in names.items():
        sums = [float(str(r["sum"])) for r in by_rank.values()]
        spread.append(
            {
                "name": name,
                "identical": len({r["sha256"] for r in by_rank.values()}) == 1
                and len(by_rank) == len(traces),
                "sum_spread": max(sums) - min(sums),
                "ranks": {str(rank): row for rank, row in sorted(by_rank.items())},
            }
        )
    return spread


def run(spec: LaunchSpec, settings: Settings, options: LintOptions) -> VerifyResult:
    """``spec.run_dir`` is the user's ``--trace-dir`` (empty: a temporary folder)."""
    check_environment(spec.backend, spec.nproc_per_node)
    try:
        entry = check_entry(spec.entry)
    except EntryError as exc:
        raise VerifyError(str(exc)) from exc
    temporary = not spec.run_dir
    if temporary:
        spec = replace(spec, run_dir=tempfile.mkdtemp(prefix="ddplint-verify-"))
    else:
        spec = replace(spec, run_dir=run_folder(spec.run_dir, spec))
    try:
        return _run_and_analyse(spec, settings, options, entry, temporary)
    except BaseException:  # a bug of ours, or a second Ctrl-C: no folder left unnamed
        if temporary:
            shutil.rmtree(spec.run_dir, ignore_errors=True)
        raise


def _run_and_analyse(
    spec: LaunchSpec, settings: Settings, options: LintOptions, entry: Path, temporary: bool
) -> VerifyResult:
    near_entry = lint_paths([str(entry.parent)], settings, options, use_cache=False)
    probed = probe_targets(near_entry.findings, os.getcwd())
    os.makedirs(spec.run_dir, exist_ok=True)
    write_probes(spec.run_dir, probed)
    launched = launch.start(spec)
    try:
        watched = watch.watch(launched, spec)
    except BaseException:  # a bug of ours: never leave the ranks running
        launch.stop(launched, list(watch.read_rank_pids(spec.run_dir).values()))
        launch.clean_up(launched, spec.run_dir)
        raise
    # the ranks themselves, killed after a hang and re-parented while they exit, and
    # processes already exiting (no command line left) are not leftovers
    ranks = set(watched.rank_pids.values())
    leftovers = [
        left
        for left in launch.clean_up(launched, spec.run_dir)
        if left.pid not in ranks and left.command != UNKNOWN_COMMAND
    ]
    frames = FrameFilter()
    traces = load_run(spec.run_dir, frames)
    c10d_only = c10d_ops.merge(spec.run_dir, traces, frames)
    if not traces:
        raise VerifyError(
            f"no rank started (launcher exit code {watched.returncode}); "
            f"launcher output:\n{_tail(spec)}"
        )
    comparison = compare(traces, all_ranks_local=spec.standalone)
    every_rank_dumped = all(os.path.exists(dump_path(spec.run_dir, rank)) for rank in traces)
    dump_comparison = dump_split(spec.run_dir)[2] if every_rank_dumped else None
    hung = watched.hang is not None and not watched.interrupted
    problems = runtime_problems(comparison, traces, hung=hung)
    scope = sorted({str(entry), *files_that_ran(traces)})
    static = lint_paths(scope, settings, options, use_cache=False)
    execution = load_execution(spec.run_dir, traces)
    mapping = map_findings(static.findings, problems, os.getcwd(), execution)
    result = VerifyResult(
        spec,
        watched,
        traces,
        comparison,
        problems,
        mapping,
        static,
        checksum_spread(traces),
        leftovers=leftovers,
        c10d_only=c10d_only,
        dump_comparison=dump_comparison,
    )
    if temporary and result.outcome == "clean":
        shutil.rmtree(spec.run_dir, ignore_errors=True)
        result.kept = False
    return result


def _tail(spec: LaunchSpec, lines: int = 30) -> str:
    if spec.log_path is None:
        return "(printed above)"
    try:
        text = Path(spec.log_path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(not captured)"
    return "\n".join(text.splitlines()[-lines:])
