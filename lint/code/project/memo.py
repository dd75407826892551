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

#: The cache key of the summary digests by content hash (a ``cache.LayeredEntry``).
DIGESTS_KEY = f"summary-digests:{SUMMARY_VERSION}:layered"
#: The digest of a file without a summary (``ast`` cannot read it, or it is too large).
NO_SUMMARY = "-"


def summary_digest(summary: Mapping[str, Any] | None) -> str:
    """A digest of a module summary's content (the same whether it was just built or
    read back from the cache: tuples and lists, key order alike)."""
    if summary is None:
        return NO_SUMMARY
    text = json.dumps(summary, sort_keys=True, separators=(",", ":"))
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def read_digests(records: Mapping[str, Any]) -> dict[str, str]:
    """The summary digests by content hash (a ``LayeredEntry``'s records); empty when
    any is of another shape."""
    if not all(isinstance(v, str) for v in records.values()):
        return {}
    return dict(records)


def digests_to_keep(digests: Mapping[str, str], current: set[str]) -> dict[str, str]:
    """Every digest known, or those of the ``current`` content hashes when the others
    outnumber them (files edited many times since)."""
    if len(digests) > 2 * len(current) + 1000:
        return {hash_: digests[hash_] for hash_ in current}
    return dict(digests)


def facts_key(summaries: Mapping[str, str]) -> str:
    """The memo key of a project whose files (relative path) have these summary digests;
    each file's facts are an entry of their own (``file_facts_key``)."""
    digest = hashlib.blake2b(digest_size=16)
    for relative in sorted(summaries):
        digest.update(f"{relative}\0{summaries[relative]}\0".encode("utf-8", "surrogateescape"))
    return f"project-facts:{SUMMARY_VERSION}.{FACTS_VERSION}.f:{digest.hexdigest()}"


def file_facts_key(memo_key: str, relative: str) -> str:
    """The key of one file's memoized facts: a run reads those of the files it lints,
    and writes those it linked, not every file's."""
    return f"{memo_key}/{relative}"
