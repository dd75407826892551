"""`ddplint verify-dumps` on real flight-recorder dumps (issue 28): real gloo jobs of 2
and 3 ranks (`fixtures/verify/dumps/`) run with torch's flight recorder on, hang or
mismatch, and leave torch's own dumps (pickle and JSON); the report must name the line
and the static finding. A `ddplint verify` run folder reads the same way. (NCCL dumps are
pickles of the same format; no GPU was at hand to make one.)"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
JOBS = ROOT / "fixtures" / "verify" / "dumps"
JOB_LIMIT = 120  # seconds for one job's ranks on a 2-core machine
REPORT_LIMIT = 120


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run_job(program: str, world: int, out: Path) -> Path:
    """Start ``world`` ranks of ``program`` (plain processes, gloo, env:// rendezvous)
    and wait for every one; the folder holding their dumps."""
    port = free_port()
    ranks = []
    for rank in range(world):
        env = {
            **os.environ,
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
            "RANK": str(rank),
            "WORLD_SIZE": str(world),
            "TORCH_FR_BUFFER_SIZE": "2000",
            "DDPLINT_DUMP_DIR": str(out),
            "DDPLINT_DUMP_TIMEOUT": "3",
        }
        ranks.append(
            subprocess.Popen(
                [sys.executable, str(JOBS / program)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
    try:
        for process in ranks:
            process.communicate(timeout=JOB_LIMIT)
    finally:
        for process in ranks:
            if process.poll() is None:
                process.kill()
                process.wait()
    return out


def report(folder: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ddplint", "verify-dumps", str(folder), *options],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=REPORT_LIMIT,
    )


def report_json(folder: Path) -> dict[str, Any]:
    done = report(folder, "--format", "json")
    return dict(json.loads(done.stdout))


@pytest.fixture(scope="module")
def skipped_barrier(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_job("rank0_skips_barrier.py", 3, tmp_path_factory.mktemp("skipped_barrier"))


@pytest.fixture(scope="module")
def mismatched_op(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_job("op_mismatch.py", 2, tmp_path_factory.mktemp("mismatched_op"))


@pytest.fixture(scope="module")
def clean_job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_job("clean.py", 2, tmp_path_factory.mktemp("clean_job"))


def test_a_skipped_barrier_is_traced_to_its_line_and_confirms_ddp201(
    skipped_barrier: Path,
) -> None:
    done = report(skipped_barrier / "pickle")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "3 rank dump(s) (torch pickle 2." in done.stdout
    assert (
        "First divergence at collective #2 on the default group: ranks 1, 2 issued barrier; "
        "rank 0 never did" in done.stdout
    )
    # ranks 1 and 2 share one entry when the recorder left them in the same state (racy)
    assert "barrier  at fixtures/verify/dumps/rank0_skips_barrier.py:13 in train" in done.stdout
    # rank 0 went on: its last recorded collective is the all_reduce before the barrier
    assert "rank 0  all_reduce float32[4] #1 on the default group at " in done.stdout
    # The entry's state is what the flight recorder had seen when it dumped: rank 0's
    # all_reduce has completed unless the dump overtook it on a loaded machine.
    assert re.search(
        r"rank0_skips_barrier\.py:11 in train \[(completed|started|scheduled|not completed|)\]",
        done.stdout,
    ), done.stdout
    assert (
        "confirmed by the dump  fixtures/verify/dumps/rank0_skips_barrier.py:12:5 DDP201"
        in done.stdout
    )
    assert "Result: divergence (exit code 1)" in done.stdout


def test_the_same_hang_in_json(skipped_barrier: Path) -> None:
    data = report_json(skipped_barrier / "pickle")
    assert data["outcome"] == "divergence"
    (divergence,) = data["divergences"]
    assert (divergence["kind"], divergence["position"]) == ("missing", 2)
    confirmed = [f for f in data["findings"] if f["status"] == "confirmed_by_dump"]
    # One finding per parting: DDP201 at the root cause (the rank test).
    assert [(f["rule"], f["line"]) for f in confirmed] == [("DDP201", 12)]
    assert all(f["evidence"]["line"] == 13 for f in confirmed)
    assert [d["rank"] for d in data["dumps"]] == [0, 1, 2]


def test_torch_json_dumps_find_the_split_but_hold_no_stacks(skipped_barrier: Path) -> None:
    done = report(skipped_barrier / "json")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "(torch JSON 2." in done.stdout
    assert "ranks 1, 2 issued barrier; rank 0 never did" in done.stdout
    assert "hold no Python stacks (torch's JSON dumps never do" in done.stdout
    assert "confirmed by the dump" not in done.stdout


def test_a_mismatched_op_names_both_lines(mismatched_op: Path) -> None:
    done = report(mismatched_op / "pickle")
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        "First divergence at collective #2 on the default group: "
        "rank 0: all_reduce, rank 1: broadcast" in done.stdout
    )
    assert "rank 0  all_reduce float32[4]  at fixtures/verify/dumps/op_mismatch.py:13" in (
        done.stdout
    )
    assert "rank 1  broadcast float32[4]  at fixtures/verify/dumps/op_mismatch.py:15" in (
        done.stdout
    )
    confirmed = [line for line in done.stdout.splitlines() if "confirmed by the dump" in line]
    # The arms issue different collectives: DDP219 reports it at the rank test.
    assert any("op_mismatch.py:12:5 DDP219" in line for line in confirmed), done.stdout


def test_a_clean_job_reports_no_divergence(clean_job: Path) -> None:
    done = report(clean_job / "pickle")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No divergence" in done.stdout
    assert "Result: clean (exit code 0)" in done.stdout


def test_dumps_a_verify_run_leaves_read_the_same_way(tmp_path: Path) -> None:
    """One model of where ranks diverged: the rank-N.c10d.json of a `ddplint verify`
    run folder gives the same split and the same finding as the verify report."""
    verified = subprocess.run(
        [
            sys.executable,
            "-m",
            "ddplint",
            "verify",
            "fixtures/verify/nan_guard_rank0_barrier.py",
            "--timeout",
            "5",
            "--trace-dir",
            str(tmp_path),
            "--format",
            "json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    run = json.loads(verified.stdout)
    (run_dir,) = tmp_path.iterdir()
    assert sorted(p.name for p in run_dir.glob("rank-*.c10d.json")) == [
        "rank-0.c10d.json",
        "rank-1.c10d.json",
    ]
    done = report(run_dir)
    assert done.returncode == 1, done.stdout + done.stderr
    dumped = report_json(run_dir)["divergences"][0]
    assert run["flight_recorder_divergence"] == dumped  # verify asks the same model
    assert (dumped["kind"], dumped["position"]) == ("op", 2)
    assert [r["call"]["op"] for r in dumped["ranks"]] == ["barrier", "all_reduce"]
    assert "(ddplint JSON 2; gloo)" in done.stdout
    assert "problem:" not in done.stdout  # traces, stacks and logs are no dumps: skipped
    assert (
        "confirmed by the dump  fixtures/verify/nan_guard_rank0_barrier.py:19:9 DDP201"
        in done.stdout
    )
