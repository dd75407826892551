"""Rank side: what each rank does under torchrun before, around and after the user's
entry: start its trace, arm the stack dump, watch its own main thread for lack of
progress, instrument torch.distributed, run the entry, record how it ended.
Standard library and torch only: this module runs inside the user's processes."""

from __future__ import annotations

import faulthandler
import importlib
import json
import os
import runpy
import signal
import socket
import sys
import threading
import time
import traceback
import types
from typing import Any

from . import flight_recorder
from .frames import Frame, FrameFilter
from .instrument import Instrumentation, Recorder, TraceWriter, choose_backend
from .layout import (
    ENV_BACKEND,
    ENV_CHECKSUM,
    ENV_DIR,
    ENV_FORCE_BACKEND,
    ENV_INTERVAL,
    ENV_PG_TIMEOUT,
    ENV_VERIFIER_PID,
    FLIGHT_RECORDER_PREFIX,
    STACK_SIGNAL_NAME,
    flight_recorder_dir,
    stacks_file,
    status_file,
    trace_file,
)
from .probes import PROBES_NAME, LineProbe, load_targets
from .reaper import is_alive, kill_marked


class StallWatch(threading.Thread):
    """Samples where the main thread is; the status file says since when it has not
    moved and which synchronous collective it is inside, so the launcher can tell a
    hang from a long step. ``finish`` marks the rank done (its entry returned)."""

    def __init__(
        self, path: str, interval: float, recorder: Recorder, run_dir: str, rank: int
    ) -> None:
        super().__init__(name="ddplint-stall-watch", daemon=True)
        self.path = path
        self.request = os.path.join(run_dir, flight_recorder.REQUEST_NAME)
        self.dump = flight_recorder.dump_path(run_dir, rank)
        self._dumped = False
        self.interval = interval
        self.recorder = recorder
        self._lock = threading.Lock()
        self._finished = False
        self._modules = 0
        self._files: set[str] = set()

    def record_loaded_files(self) -> None:
        """Write the project files imported since the last call (the code that can
        run; installed packages are not the user's to fix)."""
        if len(sys.modules) == self._modules:
            return
        self._modules = len(sys.modules)
        try:
            modules = list(sys.modules.values())
        except RuntimeError:  # changed while copied: next time
            self._modules = 0
            return
        new = set()
        for module in modules:
            file = getattr(module, "__file__", None)
            # torch.ops and torch.classes say "_ops.py" and "_classes.py": no path at all
            if isinstance(file, str) and os.path.isabs(file) and file not in self._files:
                self._files.add(file)
                if file.endswith(".py") and self.recorder.frames.is_project(file):
                    new.add(os.path.realpath(file))
        if new:
            self.recorder.writer.write({"kind": "files", "files": sorted(new)})

    def run(self) -> None:
        main = threading.main_thread().ident or 0
        last: tuple[int, int, int] | None = None
        since = time.time()
        while True:
            position = _position(sys._current_frames().get(main))
            self.record_loaded_files()
            if not self._dumped and os.path.exists(self.request):
                self._dumped = True
                flight_recorder.dump(self.dump)
            now = time.time()
            if position != last:
                last, since = position, now
            with self._lock:
                if self._finished:
                    return
                self._write(
                    {"t": now, "still_since": since, "open": self.recorder.open_calls.get(main)}
                )
            time.sleep(self.interval)

    def finish(self) -> None:
        self.record_loaded_files()
        flight_recorder.dump(self.dump)
        with self._lock:
            self._finished = True
            now = time.time()
            self._write({"t": now, "still_since": now, "open": None, "finished": True})

    def _write(self, status: dict[str, Any]) -> None:
        temporary = self.path + ".tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(status, handle)
        os.replace(temporary, self.path)


class VerifierWatch(threading.Thread):
    """Ends the whole run when the ``ddplint verify`` process that launched it is gone
    (killed with SIGKILL, it could stop nothing): every process of the run is killed,
    this rank last."""

    def __init__(self, pid: int, run_dir: str, interval: float) -> None:
        super().__init__(name="ddplint-verifier-watch", daemon=True)
        self.pid = pid
        self.run_dir = run_dir
        self.interval = interval

    def run(self) -> None:
        while is_alive(self.pid):
            time.sleep(self.interval)
        kill_marked(self.run_dir)
        os.kill(os.getpid(), signal.SIGKILL)


def _position(frame: types.FrameType | None) -> tuple[int, int, int] | None:
    if frame is None:
        return None
    depth = 0
    outer: types.FrameType | None = frame
    while outer is not None:
        depth += 1
        outer = outer.f_back
    return (id(frame.f_code), frame.f_lasti, depth)


def run_entry(entry: str, args: list[str]) -> Any:
    """Run a script, ``module:function`` or ``module`` the way Python itself would."""
    if entry.endswith(".py") or os.path.isfile(entry):
        path = os.path.abspath(entry)
        sys.argv = [path, *args]
        sys.path.insert(0, os.path.dirname(path))
        runpy.run_path(path, run_name="__main__")
        return None
    sys.path.insert(0, os.getcwd())
    module_name, _, function_name = entry.partition(":")
    sys.argv = [module_name, *args]
    if not function_name:
        runpy.run_module(module_name, run_name="__main__", alter_sys=True)
        return None
    module = importlib.import_module(module_name)
    function = module
    for part in function_name.split("."):
        function = getattr(function, part)
    return function()  # type: ignore[operator]


NCCL_DEFAULTS = {
    # The flight recorder keeps each rank's last collectives and dumps them when the
    # watchdog sees a timeout (older torch reads the TORCH_NCCL_ spelling).
    "TORCH_FR_BUFFER_SIZE": "2000",
    "TORCH_NCCL_TRACE_BUFFER_SIZE": "2000",
    "TORCH_NCCL_DUMP_ON_TIMEOUT": "1",
    "TORCH_NCCL_ENABLE_MONITORING": "1",
    # 3 = tear the process down after the dump without aborting the communicator (the
    # default); blocking wait stays off so collectives stay asynchronous, as in training.
    "TORCH_NCCL_ASYNC_ERROR_HANDLING": "3",
}


def configure_nccl(run_dir: str, local_rank: int) -> None:
    """One GPU per rank, and the flight recorder dumping into the run folder. Runs
    before the user's code, so before any NCCL process group reads the environment."""
    import torch

    torch.cuda.set_device(local_rank)
    for name, value in NCCL_DEFAULTS.items():
        os.environ.setdefault(name, value)
    directory = flight_recorder_dir(run_dir)
    os.makedirs(directory, exist_ok=True)
    prefix = os.path.join(directory, FLIGHT_RECORDER_PREFIX)
    os.environ["TORCH_FR_DUMP_TEMP_FILE"] = prefix
    os.environ["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"] = prefix


def _error_frames(error: BaseException, frames: FrameFilter) -> list[dict[str, Any]]:
    summary = traceback.extract_tb(error.__traceback__)
    user = [Frame(f.filename, f.lineno or 0, f.name) for f in summary if frames.is_user(f.filename)]
    return [f.to_json() for f in reversed(user)]


def main(argv: list[str]) -> None:
    entry, args = argv[0], argv[1:]
    run_dir = os.environ[ENV_DIR]
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    writer = TraceWriter(trace_file(run_dir, rank))
    writer.write(
        {
            "kind": "start",
            "t": time.time(),
            "rank": rank,
            "local_rank": local_rank,
            "world_size": int(os.environ.get("WORLD_SIZE", "1")),
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "main_thread": threading.main_thread().ident,
            "entry": entry,
        }
    )
    stacks = open(stacks_file(run_dir, rank), "w", encoding="utf-8")  # noqa: SIM115
    faulthandler.enable(file=stacks, all_threads=True)
    faulthandler.register(getattr(signal, STACK_SIGNAL_NAME), file=stacks, all_threads=True)
    # torchrun terminates the other ranks when one fails: their stacks say where they were.
    faulthandler.register(signal.SIGTERM, file=stacks, all_threads=True, chain=True)
    frames = FrameFilter()
    recorder = Recorder(writer, frames)
    interval = float(os.environ.get(ENV_INTERVAL, "0.5"))
    stall_watch = StallWatch(status_file(run_dir, rank), interval, recorder, run_dir, rank)
    stall_watch.start()
    verifier = os.environ.get(ENV_VERIFIER_PID, "")
    if verifier.isdigit():
        VerifierWatch(int(verifier), run_dir, interval).start()

    checksum = os.environ.get(ENV_CHECKSUM) == "1"
    probe = LineProbe(load_targets(os.path.join(run_dir, PROBES_NAME)), writer.write)
    try:
        instrumentation = _instrument(recorder, run_dir, local_rank, checksum)
        mechanism = probe.install()
        writer.write({"kind": "probes", "mechanism": mechanism, "files": len(probe.targets)})
        _run_and_record(entry, args, writer, instrumentation, frames, checksum)
    except BaseException as exc:
        probe.stop()
        if not isinstance(exc, SystemExit):
            writer.write(_failure(exc, frames))
        raise
    finally:
        probe.stop()
        stall_watch.finish()


def _instrument(
    recorder: Recorder, run_dir: str, local_rank: int, checksum: bool
) -> Instrumentation:
    """Pick the backend, give NCCL its GPU, wrap torch.distributed."""
    flight_recorder.enable()
    backend = choose_backend(os.environ.get(ENV_BACKEND, "auto"))
    if backend == "nccl":
        configure_nccl(run_dir, local_rank)
    instrumentation = Instrumentation(
        recorder,
        pg_timeout=float(os.environ.get(ENV_PG_TIMEOUT, "1800")),
        backend=backend,
        force=os.environ.get(ENV_FORCE_BACKEND) == "1",
    )
    instrumentation.install(track_parameters=checksum)
    recorder.writer.write({"kind": "ready", "t": time.time(), "backend": backend})
    return instrumentation


def _failure(error: BaseException, frames: FrameFilter) -> dict[str, Any]:
    return {
        "kind": "exit",
        "t": time.time(),
        "status": "error",
        "code": 1,
        "error": f"{type(error).__name__}: {error}"[:2000],
        "stack": _error_frames(error, frames),
    }


def _run_and_record(
    entry: str,
    args: list[str],
    writer: TraceWriter,
    instrumentation: Instrumentation,
    frames: FrameFilter,
    checksum: bool,
) -> None:
    """Run the entry and write how it ended; exceptions and exit codes pass through
    (the caller records an exception)."""
    try:
        result = run_entry(entry, args)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if code == 0 and checksum:
            writer.write({"kind": "checksum", "models": instrumentation.checksums()})
        writer.write({"kind": "exit", "t": time.time(), "status": "exit", "code": code})
        raise
    if checksum:
        writer.write({"kind": "checksum", "models": instrumentation.checksums()})
    code = result if isinstance(result, int) and not isinstance(result, bool) else 0
    writer.write({"kind": "exit", "t": time.time(), "status": "ok", "code": code})
    if code:
        sys.exit(code)
