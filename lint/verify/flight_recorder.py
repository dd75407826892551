"""Rank side: torch's flight recorder as a second, complete source of collectives. It
records every c10d operation at the C++ level (gloo and NCCL), so collectives the Python
wrappers never see are there too: functional collectives (DTensor, ``torch.ops.
_c10d_functional``), and collectives issued from C++. The rank dumps it when the
verifier asks (a request file in the run folder, during a hang) and when its entry ends.
Standard library and torch only: this module runs inside the user's processes."""

from __future__ import annotations

import contextlib
import json
import os
import pickle
from collections.abc import Iterator
from typing import Any

#: Entries kept by torch (the oldest are dropped first).
BUFFER_SIZE = "2000"
#: The verifier creates this file in the run folder to ask every rank for a dump.
REQUEST_NAME = "dump-flight-recorder"
#: The ``format`` key of the dumps written here (``fr_dumps`` reads them, and torch's).
FORMAT = "ddplint-c10d"
FORMAT_VERSION = "2"


def dump_path(run_dir: str, rank: int) -> str:
    return os.path.join(run_dir, f"rank-{rank}.c10d.json")


def enable() -> None:
    """Before any process group exists: torch reads the buffer size when it makes one."""
    os.environ.setdefault("TORCH_FR_BUFFER_SIZE", BUFFER_SIZE)


def _frame(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "file": str(data.get("filename", "")),
        "line": int(data.get("line", 0) or 0),
        "function": str(data.get("name", "")),
    }


def _entry(data: dict[str, Any]) -> dict[str, Any]:
    group = data.get("process_group") or ("", "")
    return {
        "pg_name": str(group[0]),
        "pg_desc": str(group[1]) if len(group) > 1 else "",
        "seq": int(data.get("collective_seq_id", 0) or 0),
        "op": str(data.get("profiling_name", "")),
        "p2p": bool(data.get("is_p2p", False)),
        "t": int(data.get("time_created_ns", 0) or 0) / 1e9,
        "state": str(data.get("state", "")),
        "retired": bool(data.get("retired", False)),
        "input_sizes": data.get("input_sizes") or [],
        "input_dtypes": data.get("input_dtypes") or [],
        "output_sizes": data.get("output_sizes") or [],
        "output_dtypes": data.get("output_dtypes") or [],
        "frames": [_frame(f) for f in data.get("frames") or []],
    }


def _rank() -> int | None:
    import torch.distributed as dist

    return dist.get_rank() if dist.is_available() and dist.is_initialized() else None


def dump(path: str) -> bool:
    """Write the recorder's entries to ``path`` (JSON); False when torch has none."""
    with _no_stray_cache_dir():
        return _dump(path)


@contextlib.contextmanager
def _no_stray_cache_dir() -> Iterator[None]:
    """Symbolising the recorder's stacks imports torch's compiler, which creates its
    cache folder (``TORCHINDUCTOR_CACHE_DIR``) though nothing is compiled: an empty one
    it created is removed again."""
    cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    existed = cache is None or os.path.exists(cache)
    try:
        yield
    finally:
        if not existed and cache is not None:
            with contextlib.suppress(OSError):
                os.rmdir(cache)  # only when empty


def _dump(path: str) -> bool:
    recorded = _recorded()
    if recorded is None:  # an older torch, or a recorder that is off: nothing to add
        return False
    version, entries = recorded
    document = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "torch_format_version": version,
        "rank": _rank(),
        "entries": entries,
    }
    temporary = path + ".tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(document, handle)
    os.replace(temporary, path)
    return True


#: torch's dump functions (private; the first is absent before 2.6, the second in builds
#: without NCCL): the recorder of every backend, and the one NCCL's groups record into.
DUMPERS = ("_dump_fr_trace", "_dump_nccl_trace")


def _recorded() -> tuple[str, list[dict[str, Any]]] | None:
    """The entries of every recorder torch has, each once; None when there is none."""
    try:
        import torch._C._distributed_c10d as c10d
    except Exception:
        return None
    version, found = "", False
    entries: list[dict[str, Any]] = []
    seen: set[tuple[Any, ...]] = set()
    for name in DUMPERS:
        dumper = getattr(c10d, name, None)
        if dumper is None:
            continue
        try:
            raw = dumper()
            data = pickle.loads(raw) if isinstance(raw, bytes) else raw
            items = [_entry(e) for e in data.get("entries", [])]
            version = version or str(data.get("version", ""))
        except Exception:  # a recorder that is off or damaged: the other may hold entries
            continue
        found = True
        for entry in items:
            key = (entry["pg_name"], entry["seq"], entry["op"], entry["p2p"], entry["t"])
            if key not in seen:
                seen.add(key)
                entries.append(entry)
    return (version, entries) if found else None
