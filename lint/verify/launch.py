"""Start the ranks with PyTorch's own launcher (``python -m torch.distributed.run``) and
stop them: torchrun runs in a session of its own and starts every rank in its own
session too, so stopping kills each rank's process group (its DataLoader workers
included) and then the launcher's. At the end, any process of the run that left its
group (a daemonised child) is found by its environment or by ancestry (the verifier is
the run's subreaper, see ``reaper``) and killed, and the run's temporary folder
(``TMPDIR`` of the launcher and the ranks) is removed."""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from ddplint.verify import layout, reaper

BOOTSTRAP = str(Path(__file__).with_name("bootstrap.py"))
#: Longest temporary folder given to the ranks as ``TMPDIR``: multiprocessing puts Unix
#: sockets below it (``pymp-XXXXXXXX/listener-XXXXXXXX``), and their paths must stay
#: under 108 bytes. A longer one is not given (the user's ``TMPDIR`` stays).
MAX_SCRATCH_PATH = 64


@dataclass(frozen=True)
class LaunchSpec:
    """Everything needed to start one verify run."""

    entry: str
    args: tuple[str, ...] = ()
    nproc_per_node: int = 2
    nnodes: str | None = None
    node_rank: int | None = None
    rdzv_backend: str = "c10d"
    rdzv_endpoint: str | None = None
    rdzv_id: str | None = None
    backend: str = "auto"  # auto, gloo or nccl
    timeout: float = 60.0
    checksum: bool = False
    run_dir: str = ""
    show_output: bool = False
    python: str = field(default_factory=lambda: sys.executable)

    @property
    def standalone(self) -> bool:
        return self.rdzv_endpoint is None and self.nnodes in (None, "1", "1:1")

    @property
    def pg_timeout(self) -> float:
        """The process-group timeout: past the hang window, so the verifier's own stack
        dump comes first and the flight recorder (NCCL) dumps next."""
        return self.timeout + max(5.0, self.timeout / 2)

    @property
    def log_path(self) -> str | None:
        """Where the launcher's and ranks' output goes (None: to the terminal)."""
        return None if self.show_output else layout.launcher_log(self.run_dir, self.node_rank)

    @property
    def sample_interval(self) -> float:
        return min(1.0, max(0.1, self.timeout / 10))


def torchrun_command(spec: LaunchSpec, log_dir: str | None = None) -> list[str]:
    """``python -m torch.distributed.run ...``; torchrun's own files go to ``log_dir``
    (by default it makes a ``torchelastic_*`` folder in the temporary folder and leaves
    it there)."""
    command = [
        spec.python,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        str(spec.nproc_per_node),
    ]
    if spec.standalone:
        command.append("--standalone")  # c10d rendezvous on a free local port
    else:
        command += ["--nnodes", spec.nnodes or "1", "--rdzv-backend", spec.rdzv_backend]
        if spec.rdzv_endpoint:
            command += ["--rdzv-endpoint", spec.rdzv_endpoint]
        if spec.rdzv_id:
            command += ["--rdzv-id", spec.rdzv_id]
        if spec.node_rank is not None:
            command += ["--node-rank", str(spec.node_rank)]
    if log_dir is not None:
        command += ["--log-dir", log_dir]
    command += ["--max-restarts", "0", BOOTSTRAP, spec.entry, *spec.args]
    return command


def rank_environment(spec: LaunchSpec, scratch: str | None = None) -> dict[str, str]:
    """The launcher's and ranks' environment; ``scratch`` becomes their temporary folder
    (multiprocessing's folders, left behind by a killed rank, go with it) when its path
    is short enough (``MAX_SCRATCH_PATH``)."""
    env = dict(os.environ)
    if scratch is not None and len(scratch) <= MAX_SCRATCH_PATH:
        with contextlib.suppress(KeyError, OSError):  # no user name in some containers
            # torch.compile's cache stays where it is by default, across runs
            default = os.path.join(tempfile.gettempdir(), f"torchinductor_{getpass.getuser()}")
            env.setdefault("TORCHINDUCTOR_CACHE_DIR", default)
        env.update({"TMPDIR": scratch, "TMP": scratch, "TEMP": scratch})
    env.update(
        {
            layout.ENV_DIR: spec.run_dir,
            layout.ENV_PG_TIMEOUT: str(spec.pg_timeout),
            layout.ENV_BACKEND: spec.backend,
            layout.ENV_FORCE_BACKEND: "1" if spec.backend != "auto" else "0",
            layout.ENV_CHECKSUM: "1" if spec.checksum else "0",
            layout.ENV_INTERVAL: str(spec.sample_interval),
            layout.ENV_VERIFIER_PID: str(os.getpid()),
        }
    )
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


@dataclass
class Launched:
    process: subprocess.Popen[bytes]
    started: float  # monotonic
    log: IO[bytes] | None
    started_wall: float = 0.0
    scratch: str = ""
    #: Children the verifier had before the launch: never swept.
    spare: tuple[int, ...] = ()
    subreaper: bool = False


def start(spec: LaunchSpec) -> Launched:
    os.makedirs(spec.run_dir, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="ddplint-tmp-")
    log = open(spec.log_path, "wb") if spec.log_path else None  # noqa: SIM115
    spare = tuple(reaper.descendants(os.getpid()))
    subreaper = reaper.set_subreaper(True)
    process = subprocess.Popen(
        torchrun_command(spec, log_dir=scratch),
        env=rank_environment(spec, scratch),
        stdin=subprocess.DEVNULL,
        # Shown output goes to stderr: stdout carries the report (JSON for programs).
        stdout=log if log else _stderr_fd(),
        stderr=subprocess.STDOUT if log else None,
        start_new_session=True,
    )
    return Launched(process, time.monotonic(), log, time.time(), scratch, spare, subreaper)


def _stderr_fd() -> int | None:
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # a captured stream without a descriptor
        return None


def _kill_group(leader: int) -> None:
    """SIGKILL the process group ``leader`` leads; a plain kill if it leads none."""
    try:
        if os.getpgid(leader) == leader:
            os.killpg(leader, signal.SIGKILL)
        else:
            os.kill(leader, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def stop(launched: Launched, rank_pids: list[int]) -> None:
    """Kill every rank (with its children) and the launcher; reap the launcher."""
    for pid in rank_pids:
        _kill_group(pid)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(launched.process.pid, signal.SIGKILL)
    launched.process.wait()
    if launched.log is not None:
        launched.log.close()


def release_groups(rank_pids: list[int]) -> None:
    """After a normal end: kill what a rank left behind in its process group."""
    for pid in rank_pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


def clean_up(launched: Launched, run_dir: str) -> list[reaper.Leftover]:
    """After the run: kill what is left of it anywhere (the launcher, a rank, a child
    that left its rank's process group or cleared its environment), reap the launcher,
    remove the temporary folder. Returns what had to be killed."""
    if launched.process.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(launched.process.pid, signal.SIGKILL)
        launched.process.wait()
    leftovers = reaper.sweep(run_dir, launched.spare)
    if launched.subreaper:
        reaper.set_subreaper(False)
    if launched.log is not None:
        launched.log.close()
    if launched.scratch:
        shutil.rmtree(launched.scratch, ignore_errors=True)
    return leftovers
