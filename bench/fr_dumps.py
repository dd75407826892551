"""Synthetic flight-recorder dumps, and the time from dumps to report.

``python -m bench.fr_dumps [--ranks 2,8,64] [--entries 2000] [--repeat 3]`` writes one
pickle dump per rank in torch's layout (format 2.10: ``version``, ``pg_config``,
``entries`` with ``frames``) for a training loop that issued ``--entries`` collectives
on each rank, where rank 1 skips the last barrier, then runs ``ddplint verify-dumps`` on
them and prints the median wall and CPU seconds (the child process: reading, comparing,
linting the recorded file, the report). Also imported by the tests for small dumps.
"""

from __future__ import annotations

import argparse
import os
import pickle
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

#: The training script the synthetic stacks point at (line numbers below are its own).
SCRIPT = """\
import torch
import torch.distributed as dist


def train(steps):
    rank = dist.get_rank()
    grads = torch.ones(1024)
    for step in range(steps):
        dist.all_reduce(grads)
        if rank != 1 and step == steps - 1:
            dist.barrier()
"""
ALL_REDUCE_LINE = 9
BARRIER_LINE = 11
TORCH_FILE = "/opt/conda/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py"


def frames(script: str, line: int, op: str) -> list[dict[str, Any]]:
    """A recorded stack, innermost first: torch, the user's loop, the entry, stdlib."""
    return [
        {"filename": TORCH_FILE, "line": 3245, "name": op},
        {"filename": TORCH_FILE.replace("distributed_c10d", "c10d_logger"), "line": 83,
         "name": "wrapper"},
        {"filename": script, "line": line, "name": "train"},
        {"filename": script, "line": 14, "name": "<module>"},
        {"filename": "/opt/conda/lib/python3.11/runpy.py", "line": 88, "name": "_run_code"},
    ]  # fmt: skip


def entry(seq: int, op: str, line: int, script: str, done: bool) -> dict[str, Any]:
    return {
        "record_id": seq - 1,
        "pg_id": 0,
        "process_group": ("0", "default_pg"),
        "collective_seq_id": seq,
        "p2p_seq_id": 0,
        "op_id": seq,
        "profiling_name": f"nccl:{op}",
        "time_created_ns": 1_700_000_000_000_000_000 + seq * 1_000_000,
        "input_sizes": [[1024]] if op == "all_reduce" else [],
        "input_dtypes": ["Float"] if op == "all_reduce" else [],
        "output_sizes": [[1024]] if op == "all_reduce" else [],
        "output_dtypes": ["Float"] if op == "all_reduce" else [],
        "state": "completed" if done else "started",
        "retired": done,
        "timeout_ms": 600_000,
        "is_p2p": False,
        "frames": frames(script, line, op),
    }


def rank_dump(rank: int, world: int, entries: int, script: str) -> dict[str, Any]:
    """What rank ``rank`` of a ``world``-rank job recorded: ``entries - 1`` all-reduces
    and, except on rank 1 (which went on elsewhere), a last barrier that never completes."""
    records = [entry(seq, "all_reduce", ALL_REDUCE_LINE, script, True) for seq in range(1, entries)]
    if rank != 1:
        records.append(entry(entries, "barrier", BARRIER_LINE, script, False))
    return {
        "version": "2.10",
        "comm_lib_version": "2.21.5",
        "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": str(list(range(world)))}},
        "pg_status": {},
        "entries": records,
    }


def write_dumps(folder: Path, world: int, entries: int, script: str) -> None:
    """One ``nccl_trace_rank_N`` pickle per rank, as torch's watchdog names them."""
    folder.mkdir(parents=True, exist_ok=True)
    for rank in range(world):
        data = pickle.dumps(rank_dump(rank, world, entries, script), protocol=2)
        (folder / f"nccl_trace_rank_{rank}").write_bytes(data)


def time_report(folder: Path, root: Path) -> tuple[float, float]:
    """Wall and CPU seconds (user + system of the child) of one ``verify-dumps``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "ddplint", "verify-dumps", str(folder), "--root", str(root)],
        cwd=root,
        stdout=subprocess.DEVNULL,
        check=False,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="2,8,64")
    parser.add_argument("--entries", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fr-bench-") as scratch:
        root = Path(scratch)
        (root / "train.py").write_text(SCRIPT)
        remote = "/workspace/job/train.py"  # as the job's machine named it
        print(f"{'ranks':>5} {'entries':>8} {'MB':>7} {'wall s':>8} {'cpu s':>8}")
        for world in (int(n) for n in args.ranks.split(",")):
            folder = root / f"dumps-{world}"
            write_dumps(folder, world, args.entries, remote)
            size = sum(os.path.getsize(p) for p in folder.iterdir()) / 1e6
            runs = [time_report(folder, root) for _ in range(args.repeat)]
            wall = statistics.median(w for w, _ in runs)
            cpu = statistics.median(c for _, c in runs)
            print(f"{world:>5} {args.entries:>8} {size:>7.1f} {wall:>8.2f} {cpu:>8.2f}")


if __name__ == "__main__":
    main()
