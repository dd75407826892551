"""The project's Python files for the project model, each read only when its bytes are
needed: a file whose stat (modification and change times, size, inode) is what it was
when an earlier run read it keeps that run's content hash unread, as git's index does.

A stat is recorded only when it was taken before the read, the size read agrees with
it, and both times are older than ``RACY_MARGIN_NS`` (git's "racily clean" rule: a file
written again within the clock's granularity could keep its times). Any later write
moves the change time, which no tool sets back; so a record that still matches
describes the same bytes. A file read later than its record and found to differ from
its hash raises ``SourceChanged`` (the caller reads everything again).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ddplint.cache import content_hash
from ddplint.source import FileTooLarge

#: Times newer than this when a stat was taken are not recorded (nanoseconds).
RACY_MARGIN_NS = 2_000_000_000

#: A recorded stat: (mtime_ns, ctime_ns, size, inode, device).
Stamp = tuple[int, int, int, int, int]


class SourceChanged(Exception):
    """A file read after its stat was trusted is not what its record says."""


def stamp_of(found: os.stat_result) -> Stamp:
    return (found.st_mtime_ns, found.st_ctime_ns, found.st_size, found.st_ino, found.st_dev)


def settled(stamp: Stamp, now_ns: int | None = None) -> bool:
    """Whether a stamp taken at ``now_ns`` may be recorded (its times are old enough)."""
    now_ns = time.time_ns() if now_ns is None else now_ns
    return max(stamp[0], stamp[1]) < now_ns - RACY_MARGIN_NS


def stats_key(root: str) -> str:
    """The key of the root's stat records (a ``cache.LayeredEntry``; 2: base and layer)."""
    return f"source-stats:2:{root}"


def read_stats(records: Mapping[str, Any]) -> dict[str, tuple[Stamp, str]]:
    """The recorded stamps and content hashes by relative path (a ``LayeredEntry``'s
    records); empty when any is of another shape."""
    found: dict[str, tuple[Stamp, str]] = {}
    for relative, value in records.items():
        if type(value) is not list or len(value) != 6:
            return {}
        mtime, ctime, size, inode, device, hash_ = value
        numbers = (mtime, ctime, size, inode, device)
        if type(hash_) is not str or any(type(n) is not int for n in numbers):
            return {}  # (``type``, not ``isinstance``: a bool is no number here)
        found[relative] = (numbers, hash_)
    return found


def stats_records(records: Mapping[str, tuple[Stamp, str]]) -> dict[str, list[Any]]:
    """The records as a ``LayeredEntry`` keeps them (``read_stats`` reads them back)."""
    return {relative: [*stamp, hash_] for relative, (stamp, hash_) in records.items()}


class ProjectSources(Mapping[str, bytes]):
    """The project's Python files by relative path (``hashes``: every file's content
    hash), their bytes read when first asked for (``read``) where a trusted stat gave
    the hash unread; ``records``: the stamps to keep for the next run; ``parses``: the
    files ``ast`` is known to read (their summaries were built)."""

    def __init__(self, read: Callable[[str], bytes]) -> None:
        self.hashes: dict[str, str] = {}
        self.records: dict[str, tuple[Stamp, str]] = {}
        self.parses: frozenset[str] = frozenset()
        self._raw: dict[str, bytes] = {}
        self._read = read

    def add(self, relative: str, raw: bytes, stamp: Stamp | None = None) -> None:
        """A file read now; ``stamp``: its stat taken before the read (recorded when
        settled and of the size read)."""
        self._raw[relative] = raw
        self.hashes[relative] = content_hash(raw)
        if stamp is not None and stamp[2] == len(raw) and settled(stamp):
            self.records[relative] = (stamp, self.hashes[relative])

    def add_unread(self, relative: str, stamp: Stamp, hash_: str) -> None:
        """A file whose stat matches its record: its hash is the record's."""
        self.hashes[relative] = hash_
        self.records[relative] = (stamp, hash_)

    def __getitem__(self, relative: str) -> bytes:
        raw = self._raw.get(relative)
        if raw is None:
            if relative not in self.hashes:
                raise KeyError(relative)
            try:
                raw = self._read(relative)
            except (OSError, FileTooLarge) as exc:
                raise SourceChanged(relative) from exc
            if content_hash(raw) != self.hashes[relative]:
                raise SourceChanged(relative)
            self._raw[relative] = raw
        return raw

    def __contains__(self, relative: object) -> bool:
        return relative in self.hashes

    def __iter__(self) -> Iterator[str]:
        return iter(self.hashes)

    def __len__(self) -> int:
        return len(self.hashes)
