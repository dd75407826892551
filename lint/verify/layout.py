"""Where one verify run keeps its files, and the environment the launcher hands to each
rank. Shared by the launcher and the rank side (standard library only)."""

from __future__ import annotations

import os

ENV_DIR = "DDPLINT_VERIFY_DIR"
ENV_PG_TIMEOUT = "DDPLINT_VERIFY_PG_TIMEOUT"
ENV_BACKEND = "DDPLINT_VERIFY_BACKEND"
ENV_FORCE_BACKEND = "DDPLINT_VERIFY_FORCE_BACKEND"
ENV_CHECKSUM = "DDPLINT_VERIFY_CHECKSUM"
ENV_INTERVAL = "DDPLINT_VERIFY_INTERVAL"
#: The ``ddplint verify`` process: a rank whose verifier is gone (killed) ends the run.
ENV_VERIFIER_PID = "DDPLINT_VERIFY_PID"

#: Signal on which each rank writes all its threads' Python stacks (faulthandler).
#: Not SIGUSR1: Lightning uses that one for SLURM requeueing.
STACK_SIGNAL_NAME = "SIGUSR2"
#: Prefix of NCCL flight-recorder dumps (torch appends the rank).
FLIGHT_RECORDER_PREFIX = "nccl_trace_rank_"


def trace_file(run_dir: str, rank: int) -> str:
    return os.path.join(run_dir, f"rank-{rank}.jsonl")


def stacks_file(run_dir: str, rank: int) -> str:
    return os.path.join(run_dir, f"rank-{rank}.stacks")


def status_file(run_dir: str, rank: int) -> str:
    return os.path.join(run_dir, f"rank-{rank}.status")


def flight_recorder_dir(run_dir: str) -> str:
    return os.path.join(run_dir, "flight_recorder")


def launcher_log(run_dir: str, node_rank: int | None = None) -> str:
    """One per machine: machines sharing a trace folder each write their own."""
    suffix = "" if node_rank is None else f"-node{node_rank}"
    return os.path.join(run_dir, f"launcher{suffix}.log")
