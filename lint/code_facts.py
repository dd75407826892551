"""Facts the code side of a run hands to the config side (one pass over the repo).

While Python files are linted, small JSON-able records are collected from them (which
metrics are logged with ``sync_dist``, which encoder / ``transcribe`` calls run on rank 0
only). The engine merges them after the code files and gives them to the YAML rules
that declare ``code_facts``; the YAML result cache key includes their digest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: The key under which merged facts travel in ``LintOptions.facts``.
OPTIONS_KEY = "code-facts"
METRIC_LOGS = "metric-logs"
RANK_ZERO_CALLS = "rank-zero-calls"
#: Training commands of the project's launch scripts (``ddplint.launch_facts``).
LAUNCHES = "launches"

Record = dict[str, Any]


def is_test_file(path: str) -> bool:
    """Tests exercise models in odd ways; they are no evidence of how training runs."""
    parts = path.replace("\\", "/").split("/")
    name = parts[-1]
    return (
        any(part in ("tests", "test") for part in parts[:-1])
        or name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
    )


def merge(per_file: Iterable[tuple[str, Mapping[str, list[Record]]]]) -> dict[str, list[Record]]:
    """One table per kind, each record stamped with its file path, in a stable order.
    Test files are left out."""
    merged: dict[str, list[Record]] = {}
    for path, facts in per_file:
        if is_test_file(path):
            continue
        for kind, records in facts.items():
            merged.setdefault(kind, []).extend({**r, "path": path} for r in records)
    for records in merged.values():
        records.sort(key=lambda r: json.dumps(r, sort_keys=True))
    return dict(sorted(merged.items()))


def encode(merged: Mapping[str, list[Record]]) -> str:
    return json.dumps(merged, sort_keys=True, separators=(",", ":"))


def digest(encoded: str) -> str:
    return hashlib.blake2b(encoded.encode(), digest_size=8).hexdigest()


@dataclass(frozen=True)
class Located:
    """A fact found at ``path:line``."""

    path: str
    line: int

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class MetricLog(Located):
    """``self.log("val_loss", ..., sync_dist=...)``: sync_dist True/False, or None when
    it is an expression that cannot be read statically; ``rank_local``: why the logged
    value stays rank-local (``rank_zero_only=True``, a rank test), None if it does not."""

    metric: str
    sync_dist: bool | None
    rank_local: str | None = None


@dataclass(frozen=True)
class RankZeroCall(Located):
    """An encoder / ``transcribe`` call that only rank 0 reaches."""

    call: str


@dataclass(frozen=True)
class CodeFacts:
    """The merged facts, as the config rules read them."""

    metric_logs: tuple[MetricLog, ...] = ()
    rank_zero_calls: tuple[RankZeroCall, ...] = ()
    #: Launch-script records as written (``ddplint.config.launch_scripts.Launch``).
    launches: tuple[Record, ...] = ()

    @classmethod
    def decode(cls, encoded: str | None) -> CodeFacts:
        if not encoded:
            return cls()
        data = json.loads(encoded)
        return cls(
            metric_logs=tuple(
                MetricLog(
                    r["path"], r["line"], r["metric"], r.get("sync_dist"), r.get("rank_local")
                )
                for r in data.get(METRIC_LOGS, [])
            ),
            rank_zero_calls=tuple(
                RankZeroCall(r["path"], r["line"], r["call"]) for r in data.get(RANK_ZERO_CALLS, [])
            ),
            launches=tuple(data.get(LAUNCHES, [])),
        )

    def logs_of(self, metric: str) -> list[MetricLog]:
        return [log for log in self.metric_logs if log.metric == metric]
