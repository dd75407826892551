"""A Hydra ``defaults:`` list read as what it composes: each group entry and the key path
its config is merged at (``- data: imagenet`` at ``data``; ``- deepspeed@ds_cfg: zero2``
at ``ds_cfg``; ``server/db`` at ``server.db``; ``_global_`` and a plain config name at
the root). Nothing is loaded: the entries say where the composed values land, not what
they are.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ddplint.config.document import ConfigDocument, KeyPath

#: The entry that places the file's own keys; it composes nothing.
SELF_ENTRY = "_self_"
#: The package that mounts a config at the root.
GLOBAL = "_global_"
#: Keywords that may precede a group in an entry (``override db: mysql``).
_KEYWORDS = ("override ", "optional ")


@dataclass(frozen=True)
class DefaultsEntry:
    """One composed config: its ``group`` (``""`` for a plain config name), the
    ``option`` chosen (None when it is not a plain name: an interpolation, a list) and
    ``at``, the key path its keys are merged at."""

    group: str
    option: str | None
    at: KeyPath


def _entry(item: Any) -> DefaultsEntry | None:
    if isinstance(item, str):
        return None if item == SELF_ENTRY else DefaultsEntry("", item, ())
    if not (isinstance(item, Mapping) and len(item) == 1):
        return None
    [(key, option)] = item.items()
    if not isinstance(key, str):
        return None
    for keyword in _KEYWORDS:
        key = key.removeprefix(keyword)
    group, _, package = key.partition("@")
    group = group.strip().lstrip("+/")
    package = package.strip()
    if package == GLOBAL:
        at: KeyPath = ()
    elif package:
        at = tuple(package.split("."))
    else:
        at = tuple(group.split("/"))
    chosen = option if isinstance(option, str) and "$" not in option else None
    return DefaultsEntry(group, chosen, at)


def defaults_entries(document: ConfigDocument) -> Iterator[DefaultsEntry]:
    """The composed entries of the document's ``defaults:`` list, in order."""
    defaults = document.value(("defaults",))
    for item in defaults if isinstance(defaults, list) else []:
        entry = _entry(item)
        if entry is not None:
            yield entry


def composed_at(document: ConfigDocument, key: KeyPath) -> bool:
    """Whether Hydra merges another config at ``key`` or at one of its ancestors: a key
    the document leaves out may then be set by that config."""
    return any(entry.at == key[: len(entry.at)] for entry in defaults_entries(document))
