"""Rank side: wrap torch.distributed's collectives so each rank logs every collective it
issues (op, reduce op, root, group, tensor shapes and dtypes, the user's call site) to
its trace file, one flushed JSON line per record.

Frameworks (Lightning, accelerate, DDP) reach the collectives through
``torch.distributed`` / ``distributed_c10d`` attributes, so patching those modules (and
rebinding names already imported elsewhere) covers them without per-framework code.
DDP's gradient all-reduce runs in the C++ reducer; it becomes visible by registering
DDP's own Python ``allreduce_hook`` (same arithmetic) when the user registered no hook.
Standard library and torch only: this module runs inside the user's processes.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import os
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from .frames import Frame, FrameFilter

#: Collectives of ``torch.distributed`` that every member of a group must call, in order.
COLLECTIVES = (
    "all_reduce",
    "all_reduce_coalesced",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_coalesced",
    "all_gather_object",
    "all_gather_single",  # torch 2.13+: FSDP2 (fully_shard) all-gathers through it
    "_all_gather_base",
    "all_to_all",
    "all_to_all_single",
    "barrier",
    "monitored_barrier",
    "broadcast",
    "broadcast_object_list",
    "gather",
    "gather_object",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "reduce_scatter_single",  # torch 2.13+: FSDP2's gradient reduce-scatter
    "_reduce_scatter_base",
    "scatter",
    "scatter_object_list",
    "new_group",
    "new_subgroups",
    "new_subgroups_by_enumeration",
)
#: C++ functions that DDP calls through ``torch.distributed`` (no Python signature).
NATIVE_COLLECTIVES: dict[str, tuple[str, ...]] = {
    "_broadcast_coalesced": ("group", "tensors", "buffer_size", "src"),
    "_verify_params_across_processes": ("group", "tensors", "logger"),
}
#: Arguments naming the root rank of a rooted collective.
ROOT_ARGUMENTS = ("src", "dst", "group_src", "group_dst")
#: Arguments holding Python objects (their types legitimately differ across ranks).
OBJECT_ARGUMENTS = frozenset(
    {
        "object_list",
        "obj",
        "object_gather_list",
        "scatter_object_input_list",
        "scatter_object_output_list",
    }
)
MAX_STACK = 16
#: Framework frames kept per collective (the ones nearest to it).
MAX_FRAMEWORK_STACK = 10
#: torch's own wrappers around every collective: never worth naming.
PLUMBING_FILES = ("distributed_c10d.py", "c10d_logger.py", "_functional_collectives.py")


class TraceWriter:
    """Appends JSON records to one rank's trace file; each line is flushed at once, so
    a rank that hangs or is killed still leaves everything it recorded."""

    def __init__(self, path: str) -> None:
        self._file = open(path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, default=str)
        with self._lock:
            self._file.write(line + "\n")


def _reduce_op_name(value: Any) -> str:
    name = getattr(value, "name", None)
    if isinstance(name, str):
        return name
    return str(value).rsplit(".", 1)[-1]


def _tensor_spec(value: Any) -> dict[str, Any] | None:
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is None or dtype is None:
        return None
    return {"shape": list(shape), "dtype": str(dtype).removeprefix("torch.")}


class Recorder:
    """Numbers and records the collectives of one rank; nested calls (a collective that
    torch implements with other collectives) are recorded once, as the outer call."""

    def __init__(self, writer: TraceWriter, frames: FrameFilter) -> None:
        self.writer = writer
        self.frames = frames
        self.main_thread = threading.main_thread().ident
        self._seq = 0
        self._seq_lock = threading.Lock()
        self._local = threading.local()
        #: thread id -> the synchronous collective it is inside (read by the stall watch).
        self.open_calls: dict[int, dict[str, Any]] = {}

    # -- state --------------------------------------------------------------------
    def _depth(self) -> int:
        return int(getattr(self._local, "depth", 0))

    @contextmanager
    def _nested(self) -> Iterator[None]:
        self._local.depth = self._depth() + 1
        try:
            yield
        finally:
            self._local.depth -= 1

    @contextmanager
    def label(self, text: str) -> Iterator[None]:
        """Tag the collectives issued inside (e.g. DDP's gradient all-reduce)."""
        previous = getattr(self._local, "label", None)
        self._local.label = text
        try:
            yield
        finally:
            self._local.label = previous

    # -- call sites ---------------------------------------------------------------
    def _stack(self) -> tuple[list[Frame], str | None, list[str]]:
        """User frames (innermost first), the framework function the user called, and
        the framework frames that issued the collective (innermost first)."""
        frame: types.FrameType | None = sys._getframe(2)
        frames, via, issuers = self._user_frames(frame)
        if not frames and threading.get_ident() != self.main_thread:
            # A backward hook on an autograd device thread: the user's frames are those
            # of the main thread, which is blocked in loss.backward().
            main = sys._current_frames().get(self.main_thread or 0)
            frames, via, _ = self._user_frames(main)
        return frames, via, issuers

    def _user_frames(
        self, frame: types.FrameType | None
    ) -> tuple[list[Frame], str | None, list[str]]:
        frames: list[Frame] = []
        callee: types.FrameType | None = None
        via: str | None = None
        issuers: list[str] = []
        while frame is not None and len(frames) < MAX_STACK:
            code = frame.f_code
            if self.frames.is_user(code.co_filename):
                if not frames and callee is not None:
                    via = self._describe_callee(callee)
                frames.append(Frame(code.co_filename, frame.f_lineno or 0, _qualname(code)))
            elif not frames and not self.frames.is_verifier(code.co_filename):
                callee = frame
                if len(issuers) < MAX_FRAMEWORK_STACK and not code.co_filename.endswith(
                    PLUMBING_FILES
                ):
                    issuers.append(self._describe(frame))
            frame = frame.f_back
        if issuers and issuers[-1] == via:  # named as "via" already
            issuers.pop()
        return frames, via, issuers

    def _describe(self, frame: types.FrameType) -> str:
        name = self.frames.display_name(frame.f_code.co_filename)
        return f"{name}:{frame.f_lineno} in {_qualname(frame.f_code)}"

    def _describe_callee(self, frame: types.FrameType) -> str | None:
        name = self.frames.display_name(frame.f_code.co_filename)
        if name.startswith(("torch/distributed/", "torch\\distributed\\")):
            return None  # the user called torch.distributed directly
        return self._describe(frame)

    # -- records ------------------------------------------------------------------
    def begin(self, op: str, arguments: dict[str, Any], asynchronous: bool) -> int:
        with self._seq_lock:
            self._seq += 1
            seq = self._seq
        frames, via, issuers = self._stack()
        record: dict[str, Any] = {"kind": "call", "seq": seq, "op": op, "t": time.time()}
        record.update(describe_arguments(arguments))
        record["async"] = asynchronous
        if threading.get_ident() != self.main_thread:
            record["thread"] = threading.current_thread().name
        label = getattr(self._local, "label", None)
        if label:
            record["label"] = label
        if via:
            record["via"] = via
        if issuers and via:  # a framework issued it (not the user calling torch directly)
            record["issued_by"] = issuers
        record["stack"] = [f.to_json() for f in frames]
        self.writer.write(record)
        if not asynchronous:
            self.open_calls[threading.get_ident()] = {"seq": seq, "op": op, "t": record["t"]}
        return seq

    def end(self, seq: int, asynchronous: bool, error: BaseException | None) -> None:
        """A synchronous call is done; an asynchronous one only returned (its work may
        still be pending), which bounds the c10d ops it issued in time."""
        if asynchronous:
            self.writer.write({"kind": "returned", "seq": seq, "t": time.time()})
            return
        self.open_calls.pop(threading.get_ident(), None)
        record: dict[str, Any] = {"kind": "done", "seq": seq, "t": time.time()}
        if error is not None:
            record["error"] = f"{type(error).__name__}: {error}"[:500]
        self.writer.write(record)

    def wrap(
        self, name: str, original: Callable[..., Any], parameters: tuple[str, ...] | None
    ) -> Callable[..., Any]:
        signature = _signature(original) if parameters is None else None

        @functools.wraps(original)
        def recording(*args: Any, **kwargs: Any) -> Any:
            if self._depth() > 0:
                return original(*args, **kwargs)
            arguments = _bind(signature, parameters, args, kwargs)
            if arguments is None or _outside_group(arguments.get("group")):
                with self._nested():
                    return original(*args, **kwargs)
            asynchronous = bool(arguments.get("async_op", False))
            seq = self.begin(name, arguments, asynchronous)
            try:
                with self._nested():
                    result = original(*args, **kwargs)
            except BaseException as exc:
                self.end(seq, asynchronous, exc)
                raise
            self.end(seq, asynchronous, None)
            return result

        return recording


def _qualname(code: types.CodeType) -> str:
    return str(getattr(code, "co_qualname", code.co_name))


def _signature(function: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(function)
    except (TypeError, ValueError):
        return None


def _bind(
    signature: inspect.Signature | None,
    parameters: tuple[str, ...] | None,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> dict[str, Any] | None:
    """The call's arguments by name, defaults included; None when they do not bind
    (the original then raises its own TypeError)."""
    if parameters is not None:
        named = dict(zip(parameters, args, strict=False))
        named.update(kwargs)
        return named
    if signature is None:
        return {}
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return None
    bound.apply_defaults()
    return dict(bound.arguments)


def _outside_group(group: Any) -> bool:
    """A rank outside ``group`` returns at once from its collectives: nothing to pair."""
    if group is None:
        return False
    import torch.distributed.distributed_c10d as c10d

    return bool(c10d._rank_not_in_group(group))


def describe_group(group: Any) -> dict[str, Any]:
    """Name and global ranks of a process group (``None`` = the default group)."""
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d

    if not dist.is_initialized():
        return {"name": "default", "ranks": []}
    default = c10d._get_default_group()
    target = default if group is None else group
    try:
        ranks = list(dist.get_process_group_ranks(target))
    except (RuntimeError, ValueError, KeyError):
        ranks = []
    name = "default" if target is default else str(getattr(target, "group_name", "?"))
    return {"name": name, "ranks": ranks}


def describe_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """The comparable facts of one call: group, reduce op, root, tensors, objects."""
    facts: dict[str, Any] = {"group": describe_group(arguments.get("group"))}
    tensors: dict[str, Any] = {}
    objects: dict[str, int] = {}
    for name, value in arguments.items():
        if name == "op" and value is not None:
            facts["reduce_op"] = _reduce_op_name(value)
        elif name in ROOT_ARGUMENTS and isinstance(value, int):
            facts[name] = value
        elif name == "ranks" and isinstance(value, (list, tuple)):
            facts["member_ranks"] = [int(r) for r in value]
        elif name in OBJECT_ARGUMENTS:
            objects[name] = len(value) if isinstance(value, (list, tuple)) else 1
        elif name != "group":
            spec = _tensor_spec(value)
            if spec is not None:
                tensors[name] = spec
            elif isinstance(value, (list, tuple)) and value:
                specs = [_tensor_spec(v) for v in value]
                if all(s is not None for s in specs):
                    tensors[name] = specs
    if tensors:
        facts["tensors"] = tensors
    if objects:
        facts["objects"] = objects
    return facts


# -- patching -------------------------------------------------------------------------


class Instrumentation:
    """Installs the recording wrappers and remembers the models and optimizers created
    in the run (for the parameter checksum; held until exit, so they outlive ``main``)."""

    def __init__(self, recorder: Recorder, pg_timeout: float, backend: str, force: bool):
        self.recorder = recorder
        self.pg_timeout = pg_timeout
        self.backend = backend
        self.force_backend = force
        self.models: list[tuple[str, Any]] = []
        self.optimizers: list[Any] = []
        self.notes: list[str] = []

    def install(self, track_parameters: bool) -> None:
        import torch.distributed as dist
        import torch.distributed.distributed_c10d as c10d

        replacements: dict[int, Callable[..., Any]] = {}
        for name in COLLECTIVES:
            original = getattr(c10d, name, None) or getattr(dist, name, None)
            if callable(original):
                replacements[id(original)] = self.recorder.wrap(name, original, None)
        for name, parameters in NATIVE_COLLECTIVES.items():
            original = getattr(dist, name, None)
            if callable(original):
                replacements[id(original)] = self.recorder.wrap(name, original, parameters)
        init = c10d.init_process_group
        replacements[id(init)] = self._wrap_init(init)
        rebind(replacements)
        self._patch_ddp(track_parameters)
        if track_parameters:
            self._patch_optimizer()

    def _wrap_init(self, original: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(original)
        recorder = self.recorder

        @functools.wraps(original)
        def init_process_group(*args: Any, **kwargs: Any) -> Any:
            import torch.distributed as dist

            bound = signature.bind_partial(*args, **kwargs)
            requested = bound.arguments.get("backend")
            if requested is None or (self.force_backend and requested != self.backend):
                bound.arguments["backend"] = self.backend
            bound.arguments["timeout"] = timedelta(seconds=self.pg_timeout)
            result = original(*bound.args, **bound.kwargs)
            recorder.writer.write(
                {
                    "kind": "init",
                    "t": time.time(),
                    "backend": str(dist.get_backend()),
                    "requested_backend": None if requested is None else str(requested),
                    "rank": dist.get_rank(),
                    "world_size": dist.get_world_size(),
                    "timeout_s": self.pg_timeout,
                }
            )
            return result

        return init_process_group

    def _patch_ddp(self, track_parameters: bool) -> None:
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        from torch.nn.parallel import DistributedDataParallel as DDP

        recorder = self.recorder
        models = self.models

        # No annotations: DDP rejects a hook whose ``bucket`` annotation is not GradBucket.
        def gradient_hook(state, bucket):
            with recorder.label(f"DDP gradient all-reduce, bucket {bucket.index()}"):
                return default_hooks.allreduce_hook(state, bucket)

        original_init = DDP.__init__
        original_forward = DDP.forward
        original_builtin = DDP._register_builtin_comm_hook

        @functools.wraps(original_init)
        def init(ddp: Any, module: Any, *args: Any, **kwargs: Any) -> None:
            original_init(ddp, module, *args, **kwargs)
            if track_parameters:
                models.append((f"DistributedDataParallel({type(module).__name__})", module))

        @functools.wraps(original_forward)
        def forward(ddp: Any, *args: Any, **kwargs: Any) -> Any:
            state = ddp.__dict__
            if not state.get("_ddplint_hook_checked"):
                state["_ddplint_hook_checked"] = True
                # With no user hook, DDP's own Python all-reduce hook (the C++ default's
                # arithmetic) makes the gradient all-reduce visible to the trace.
                hooks = getattr(ddp, "_comm_hooks", None)
                if hooks == [] and not state.get("_ddplint_builtin_hook"):
                    ddp.register_comm_hook(ddp.process_group, gradient_hook)
            return original_forward(ddp, *args, **kwargs)

        @functools.wraps(original_builtin)
        def register_builtin(ddp: Any, *args: Any, **kwargs: Any) -> Any:
            ddp.__dict__["_ddplint_builtin_hook"] = True
            return original_builtin(ddp, *args, **kwargs)

        DDP.__init__ = init  # type: ignore[method-assign,assignment]
        DDP.forward = forward  # type: ignore[method-assign,assignment]
        DDP._register_builtin_comm_hook = register_builtin  # type: ignore[method-assign,assignment]

    def _patch_optimizer(self) -> None:
        from torch.optim import Optimizer

        original_init = Optimizer.__init__
        optimizers = self.optimizers

        @functools.wraps(original_init)
        def init(optimizer: Any, *args: Any, **kwargs: Any) -> None:
            original_init(optimizer, *args, **kwargs)
            optimizers.append(optimizer)

        Optimizer.__init__ = init  # type: ignore[method-assign,assignment]

    def checksums(self) -> list[dict[str, Any]]:
        """Hash of the parameters of each DDP-wrapped model (else each optimizer)."""
        groups: list[tuple[str, list[Any]]] = [
            (name, list(module.parameters())) for name, module in self.models
        ]
        if not groups:
            for index, optimizer in enumerate(self.optimizers):
                params = [p for g in optimizer.param_groups for p in g["params"]]
                groups.append((f"{type(optimizer).__name__}#{index}", params))
        return [parameter_checksum(name, params) for name, params in groups]


def parameter_checksum(name: str, params: list[Any]) -> dict[str, Any]:
    import torch

    digest = hashlib.sha256()
    total = 0.0
    count = 0
    with torch.no_grad():
        for param in params:
            data = param.detach().cpu().contiguous()
            digest.update(data.reshape(-1).view(torch.uint8).numpy().tobytes())
            total += float(data.double().sum())
            count += data.numel()
    return {"name": name, "sha256": digest.hexdigest(), "sum": total, "numel": count}


def rebind(replacements: dict[int, Callable[..., Any]]) -> None:
    """Replace each original function wherever a loaded module holds it (``torch.distributed``,
    ``distributed_c10d`` and any ``from torch.distributed import all_reduce``)."""
    for module in list(sys.modules.values()):
        namespace = (
            getattr(module, "__dict__", None) if isinstance(module, types.ModuleType) else None
        )
        if not namespace:
            continue
        for attribute, value in list(namespace.items()):
            replacement = replacements.get(id(value))
            if replacement is not None and attribute != "__wrapped__":
                namespace[attribute] = replacement


def choose_backend(requested: str) -> str:
    """``auto``: NCCL when every local rank can have its own GPU, else gloo."""
    if requested != "auto":
        return requested
    import torch

    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    if torch.cuda.is_available() and torch.cuda.device_count() >= local_world:
        return "nccl"
    return "gloo"
