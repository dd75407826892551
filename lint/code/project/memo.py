"""The key of the project-facts memo: what a file's project facts depend on, cheaply.

A file's project facts (``ProjectIndex.facts_for``) are a function of the project's
module paths and their summaries, and a summary is a function of the file's bytes. So
the memo is keyed by every path and a digest of its summary, not of its bytes: an edit
that changes no summary (a comment, a docstring, a line inside a function that moves
no line the summary records) finds the facts the last run memoized, without reading the
kept links or solving the fixpoints. The summary digest of each content hash is kept in
one small cache entry (``DIGESTS_KEY``), so an unchanged file costs no summary and no
digest; only the files whose bytes are new are summarised (from the summary cache, or
built).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from ddplint.code.project.encoding import FACTS_VERSION, SUMMARY_VERSION

#: The cache key of the summary digests by content hash.
DIGESTS_KEY = f"summary-digests:{SUMMARY_VERSION}"
#: The digest of a file without a summary (``ast`` cannot read it, or it is too large).
NO_SUMMARY = "-"


def summary_digest(summary: Mapping[str, Any] | None) -> str:
    """A digest of a module summary's content (the same whether it was just built or
    read back from the cache: tuples and lists, key order alike)."""
    if summary is None:
        return NO_SUMMARY
    text = json.dumps(summary, sort_keys=True, separators=(",", ":"))
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def read_digests(entry: Any) -> dict[str, str]:
    """The summary digests a cache entry holds by content hash; empty when absent or of
    another shape."""
    digests = entry.get("digests") if isinstance(entry, dict) else None
    if not isinstance(digests, dict):
        return {}
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in digests.items()):
        return {}
    return digests


def digests_entry(digests: Mapping[str, str], current: set[str]) -> dict[str, Any]:
    """The entry to keep: every digest known, or those of the ``current`` content hashes
    when the others outnumber them (files edited many times since)."""
    if len(digests) > 2 * len(current) + 1000:
        digests = {hash_: digests[hash_] for hash_ in current}
    return {"digests": dict(digests)}


def facts_key(summaries: Mapping[str, str]) -> str:
    """The memo key of a project whose files (relative path) have these summary digests."""
    digest = hashlib.blake2b(digest_size=16)
    for relative in sorted(summaries):
        digest.update(f"{relative}\0{summaries[relative]}\0".encode("utf-8", "surrogateescape"))
    return f"project-facts:{SUMMARY_VERSION}.{FACTS_VERSION}.s:{digest.hexdigest()}"
