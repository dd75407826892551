"""Read flight-recorder dumps: one file per rank, in any of the forms torch or ddplint
writes, into one plain model (:class:`RankDump` of :class:`DumpEntry`).

Forms read: torch's pickle (``_dump_fr_trace``, the NCCL watchdog's dump on timeout,
``TORCH_FR_DUMP_TEMP_FILE`` / ``TORCH_NCCL_DEBUG_INFO_TEMP_FILE``), read with
:mod:`plain_pickle` and never unpickled; torch's JSON (``_dump_fr_trace_json``,
``_dump_nccl_trace_json``: no stacks); and the ``rank-N.c10d.json`` that
``ddplint verify``'s ranks write. Every problem with a file is one message in
:attr:`DumpSet.problems`, and the files that could be read are kept.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ddplint.verify.flight_recorder import FORMAT as DDPLINT_FORMAT
from ddplint.verify.flight_recorder import REQUEST_NAME
from ddplint.verify.frames import Frame
from ddplint.verify.plain_pickle import PickleError, UnsafePickle, load_plain
from ddplint.verify.probes import PROBES_NAME

#: The major version of torch's dump format ddplint reads ("2.x"; torch 2.13 writes 2.10).
SUPPORTED_MAJOR = "2"
#: Files of a verify run folder that are not dumps (left out without a word).
_RUN_FOLDER_FILES = re.compile(
    rf"^(rank-\d+\.(jsonl|stacks|status)|launcher.*\.log|.*\.tmp"
    rf"|{re.escape(REQUEST_NAME)}|{re.escape(PROBES_NAME)})$"
)
_RANK_SUFFIX = re.compile(r"(\d+)$")
_KNOWN_EXTENSIONS = (".c10d.json", ".json", ".pickle", ".pkl")


class DumpError(ValueError):
    """One file that is not a readable dump; the message says why."""


@dataclass(frozen=True)
class DumpEntry:
    """One collective a rank's flight recorder kept."""

    group: str  # the process group's name ("0" is the default group)
    group_desc: str  # "default_pg", or what the code named it
    seq: int  # collective_seq_id: the group's count of collectives on this rank
    op: str  # "all_reduce", "barrier", ...
    backend: str  # "gloo", "nccl", "" when unknown
    p2p: bool
    input_sizes: tuple[tuple[int, ...], ...]
    input_dtypes: tuple[str, ...]
    output_sizes: tuple[tuple[int, ...], ...]
    output_dtypes: tuple[str, ...]
    state: str  # scheduled, started, completed
    retired: bool
    time: float  # wall clock, seconds
    frames: tuple[Frame, ...] = ()  # innermost first

    @property
    def is_default_group(self) -> bool:
        return self.group_desc == "default_pg"


@dataclass(frozen=True)
class RankDump:
    rank: int
    path: str
    form: str  # "torch pickle", "torch JSON", "ddplint JSON"
    version: str
    entries: tuple[DumpEntry, ...]
    #: Members of each group, by name, where the dump names them (NCCL does; gloo not).
    group_ranks: dict[str, tuple[int, ...]] = field(default_factory=dict)
    skipped_entries: int = 0

    @property
    def has_stacks(self) -> bool:
        return any(entry.frames for entry in self.entries)


@dataclass
class DumpSet:
    dumps: dict[int, RankDump]
    problems: list[str]


def rank_from_name(path: str) -> int | None:
    """``rank-3.c10d.json``, ``nccl_trace_rank_3``, ``fr_3.pkl`` -> 3."""
    name = os.path.basename(path)
    for extension in _KNOWN_EXTENSIONS:
        if name.endswith(extension):
            name = name[: -len(extension)]
            break
    match = _RANK_SUFFIX.search(name)
    return int(match.group(1)) if match else None


def read_dump(path: str, rank: int | None = None) -> RankDump:
    """One file; :class:`DumpError` with the reason when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise DumpError(f"cannot be read ({exc.strerror or exc})") from None
    if not raw:
        raise DumpError("is empty (a rank killed while it dumped?)")
    if raw[:1] == b"\x80":
        form, data = "torch pickle", _from_pickle(raw)
    elif raw.lstrip()[:1] == b"{":
        form, data = "torch JSON", _from_json(raw)
    else:
        raise DumpError("is not a flight-recorder dump (neither a pickle nor a JSON object)")
    if not isinstance(data, dict) or not isinstance(data.get("entries", []), list):
        raise DumpError("is not a flight-recorder dump (no list of entries)")
    if data.get("format") == DDPLINT_FORMAT or ("version" not in data and _ddplint_entries(data)):
        return _ddplint_dump(path, data, rank)
    version = str(data.get("version", ""))
    if not version:
        raise DumpError("has no format version (torch's dumps carry one, e.g. '2.10')")
    if version.split(".")[0] != SUPPORTED_MAJOR:
        raise DumpError(
            f"has format version {version!r}; ddplint reads torch's {SUPPORTED_MAJOR}.x dumps"
        )
    rank = _rank(path, data, rank)
    entries, skipped = _entries(data.get("entries", []), _torch_entry)
    return RankDump(rank, path, form, version, entries, _torch_groups(data), skipped)


def _from_pickle(raw: bytes) -> Any:
    try:
        return load_plain(raw)
    except UnsafePickle as exc:
        raise DumpError(str(exc)) from None
    except PickleError as exc:
        raise DumpError(f"is a damaged pickle ({exc})") from None


def _from_json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise DumpError(f"is damaged JSON (truncated?): {exc}") from None


def _rank(path: str, data: dict[str, Any], rank: int | None) -> int:
    if rank is not None:
        return rank
    if isinstance(data.get("rank"), int):
        return int(data["rank"])
    named = rank_from_name(path)
    if named is None:
        raise DumpError("names no rank (torch puts it at the end of the file name)")
    return named


def _entries(raw: Iterable[Any], convert: Any) -> tuple[tuple[DumpEntry, ...], int]:
    entries: list[DumpEntry] = []
    skipped = 0
    for item in raw:
        try:
            entries.append(convert(item))
        except (KeyError, TypeError, ValueError, IndexError, AttributeError):
            skipped += 1
    return tuple(entries), skipped


def _sizes(value: Any) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(int(d) for d in shape) for shape in value or ())


def _frames(value: Any, file_key: str, function_key: str) -> tuple[Frame, ...]:
    return tuple(
        Frame(str(f[file_key]), int(f.get("line") or 0), str(f.get(function_key, "")))
        for f in value or ()
    )


#: Ops a backend records under another name than the call the user wrote: NCCL's
#: barrier is a one-element all-reduce, recorded as ``nccl:all_reduce_barrier``.
RECORDED_AS = {"all_reduce_barrier": "barrier"}


def _backend_and_op(profiling_name: str) -> tuple[str, str]:
    """``nccl:all_reduce_barrier`` -> ("nccl", "barrier")."""
    backend, _, op = profiling_name.rpartition(":")
    return backend, RECORDED_AS.get(op, op)


def _torch_entry(item: dict[str, Any]) -> DumpEntry:
    group = item["process_group"]
    backend, op = _backend_and_op(str(item["profiling_name"]))
    return DumpEntry(
        group=str(group[0]),
        group_desc=str(group[1]) if len(group) > 1 else "",
        seq=int(item["collective_seq_id"]),
        op=op,
        backend=backend,
        p2p=bool(item.get("is_p2p", False)),
        **_tensors_and_state(item),
        time=int(item.get("time_created_ns") or 0) / 1e9,
        frames=_frames(item.get("frames"), "filename", "name"),
    )


def _tensors_and_state(item: dict[str, Any]) -> dict[str, Any]:
    """The fields both dump formats spell alike: sizes, dtypes and the entry's state."""
    return {
        "input_sizes": _sizes(item.get("input_sizes")),
        "input_dtypes": tuple(str(d) for d in item.get("input_dtypes") or ()),
        "output_sizes": _sizes(item.get("output_sizes")),
        "output_dtypes": tuple(str(d) for d in item.get("output_dtypes") or ()),
        "state": str(item.get("state", "")),
        "retired": bool(item.get("retired", False)),
    }


def _torch_groups(data: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """``pg_config``: name -> {"ranks": "[0, 1]"} (a string in torch's dumps)."""
    groups: dict[str, tuple[int, ...]] = {}
    config = data.get("pg_config")
    for name, spec in config.items() if isinstance(config, dict) else ():
        ranks = spec.get("ranks") if isinstance(spec, dict) else None
        if isinstance(ranks, str):
            try:
                ranks = json.loads(ranks)
            except ValueError:
                continue
        if isinstance(ranks, list) and ranks and all(isinstance(r, int) for r in ranks):
            groups[str(name)] = tuple(ranks)
    return groups


def _ddplint_entries(data: dict[str, Any]) -> bool:
    entries = data.get("entries")
    return isinstance(entries, list) and all(
        isinstance(e, dict) and "pg_name" in e for e in entries[:3]
    )


def _ddplint_entry(item: dict[str, Any]) -> DumpEntry:
    backend, op = _backend_and_op(str(item["op"]))
    return DumpEntry(
        group=str(item["pg_name"]),
        group_desc=str(item.get("pg_desc", "")),
        seq=int(item["seq"]),
        op=op,
        backend=backend,
        p2p=bool(item.get("p2p", False)),
        **_tensors_and_state(item),
        time=float(item.get("t") or 0.0),
        frames=_frames(item.get("frames"), "file", "function"),
    )


def _ddplint_dump(path: str, data: dict[str, Any], rank: int | None) -> RankDump:
    entries, skipped = _entries(data.get("entries", []), _ddplint_entry)
    groups = {
        str(name): tuple(int(r) for r in ranks)
        for name, ranks in (data.get("group_ranks") or {}).items()
        if isinstance(ranks, list)
    }
    version = str(data.get("version", "1"))  # 1: before the format key
    return RankDump(
        _rank(path, data, rank), path, "ddplint JSON", version, entries, groups, skipped
    )


def read_dump_dir(folder: str) -> DumpSet:
    """Every dump in ``folder`` (not its sub-folders), by rank; one message per file
    that is not one, per rank that appears twice, and per rank number left out."""
    problems: list[str] = []
    try:
        names = sorted(os.listdir(folder))
    except OSError as exc:
        return DumpSet({}, [f"{folder}: cannot be listed ({exc.strerror or exc})"])
    dumps: dict[int, RankDump] = {}
    for name in names:
        path = os.path.join(folder, name)
        if not os.path.isfile(path) or _RUN_FOLDER_FILES.match(name):
            continue
        try:
            dump = read_dump(path)
        except DumpError as exc:
            problems.append(f"{path}: {exc}; skipped")
            continue
        if dump.skipped_entries:
            problems.append(
                f"{path}: {dump.skipped_entries} entr{'y' if dump.skipped_entries == 1 else 'ies'}"
                " without the fields of a collective were skipped"
            )
        kept = dumps.get(dump.rank)
        if kept is not None:
            better = dump if dump.has_stacks and not kept.has_stacks else kept
            other = kept if better is dump else dump
            problems.append(
                f"rank {dump.rank} has two dumps ({kept.path}, {dump.path}); {other.path} left out"
            )
            dump = better
        dumps[dump.rank] = dump
    if not dumps:
        problems.append(f"{folder}: no flight-recorder dump could be read")
    else:
        absent = sorted(set(range(max(dumps) + 1)) - set(dumps))
        if absent:
            problems.append(
                f"no dump for rank {', '.join(map(str, absent))}: those ranks are left out "
                "of the comparison"
            )
    return DumpSet(dict(sorted(dumps.items())), problems)
