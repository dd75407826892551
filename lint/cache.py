"""Content-hash cache: findings per file content, keyed by file bytes, tool version and
settings, so an unchanged tree re-lints almost instantly."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

MAX_ENTRIES = 200_000


def content_hash(raw: bytes) -> str:
    return hashlib.blake2b(raw, digest_size=16).hexdigest()


class ResultCache:
    """One JSON file per settings fingerprint under the cache folder."""

    def __init__(self, directory: Path, fingerprint: str) -> None:
        self.directory = directory
        self.file = directory / f"results-{fingerprint}.json"
        self.entries: dict[str, dict[str, Any]] = {}
        self._dirty = False
        try:
            data = json.loads(self.file.read_text(encoding="utf-8"))
            if isinstance(data, dict) and isinstance(data.get("entries"), dict):
                self.entries = data["entries"]
        except (OSError, ValueError):
            self.entries = {}  # no cache yet, or a damaged one: start afresh

    def get(self, key: str) -> dict[str, Any] | None:
        return self.entries.get(key)

    def put(self, key: str, value: dict[str, Any]) -> None:
        self.entries[key] = value
        self._dirty = True

    def save(self) -> None:
        """Write atomically; a cache that cannot be written is silently not kept."""
        if not self._dirty:
            return
        if len(self.entries) > MAX_ENTRIES:
            keep = list(self.entries.items())[-MAX_ENTRIES:]
            self.entries = dict(keep)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            ignore = self.directory / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# created by ddplint\n*\n", encoding="utf-8")
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"entries": self.entries}, handle, separators=(",", ":"))
            os.replace(tmp, self.file)
        except OSError:
            return
