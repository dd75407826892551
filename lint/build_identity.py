"""Which ddplint code is running, for cache keys: the version, and a digest of the
package's source files (their paths, sizes and modification times), so that a checkout
whose code changes under the same version never reuses results of other code."""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
from pathlib import Path

from ddplint import __version__


@functools.cache
def build_identity() -> str:
    """``VERSION+DIGEST``: the digest covers every ``.py`` file of the ``ddplint``
    package and of its rules (which an editable install maps from another folder; the
    rules are found, not imported)."""
    rules = importlib.util.find_spec("ddplint.rules")
    found_rules = rules.submodule_search_locations if rules is not None else None
    roots = [Path(__file__).parent, *(Path(path) for path in found_rules or ())]
    return f"{__version__}+{sources_digest(roots)}"


def sources_digest(roots: list[Path]) -> str:
    """A digest of the ``.py`` files under ``roots``: what changes when any is added,
    removed, renamed, resized or written again."""
    digest = hashlib.blake2b(digest_size=8)
    for root in sorted(set(roots)):
        digest.update(f"{root.name}\n".encode())
        for path, size, modified in _source_files(root):
            digest.update(f"{path}\0{size}\0{modified}\n".encode())
    return digest.hexdigest()


def _source_files(root: Path) -> list[tuple[str, int, int]]:
    """(path from ``root``, size, modification time in ns) of each ``.py`` under it,
    byte-compiled caches left out; a file that cannot be read is left out too."""
    found: list[tuple[str, int, int]] = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [name for name in subfolders if name != "__pycache__"]
        for name in names:
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            try:
                status = os.stat(path)
            except OSError:
                continue
            found.append((os.path.relpath(path, root), status.st_size, status.st_mtime_ns))
    return sorted(found)
