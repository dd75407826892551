"""Values a program reads from the YAML config it is bound to, with the file and line
that set them: the primary config and the groups of its Hydra ``defaults:`` list
(``- data: imagenet`` mounts ``data/imagenet.yaml`` under ``data``, ``- data@train:
imagenet`` under ``train``; ``# @package _global_`` at the top of a file its entry gives
no package mounts it at the root). Plain ``${a.b}`` references resolve;
resolvers never run.

A file that is missing, unreadable or not loadable YAML is no source of values (its own
lint reports what is wrong with it); a key the files do not set is unknown.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ddplint.code_facts import Located
from ddplint.config.document import ConfigDocument, KeyPath, dotted
from ddplint.config.hydra_defaults import defaults_entries
from ddplint.config.loader import load_documents
from ddplint.config.values import ABSENT, UNKNOWN
from ddplint.source import FileTooLarge, SourceError, SourceFile, read_source_bytes

CONFIG_SUFFIXES = (".yaml", ".yml")
MAX_CONFIG_BYTES = 1024 * 1024
GLOBAL_PACKAGE = "# @package _global_"


@dataclass(frozen=True)
class ConfigValue(Located):
    """A value set in a config file at ``path:line``: ``value`` (a plain scalar, or
    UNKNOWN) and ``key``, the dotted key."""

    value: Any
    key: str


@dataclass(frozen=True)
class _Mounted:
    """A loaded config file and the key path it is mounted at."""

    document: ConfigDocument
    at: KeyPath


def config_file(folder: Path, name: str) -> Path | None:
    """``folder/name`` with its YAML suffix (given or added), when it exists."""
    candidates = [name] if name.endswith(CONFIG_SUFFIXES) else [name + s for s in CONFIG_SUFFIXES]
    return next((folder / c for c in candidates if (folder / c).is_file()), None)


def _load(path: Path, shown: str) -> ConfigDocument | None:
    try:
        source = SourceFile.decode(shown, read_source_bytes(path, MAX_CONFIG_BYTES))
        roots = load_documents(source.text)
    except (OSError, FileTooLarge, SourceError):
        return None
    if len(roots) != 1 or not isinstance(roots[0], Mapping):
        return None
    return ConfigDocument(roots[0], 0, source)


class BoundConfig:
    """The config a program runs with: the primary file, then its defaults groups
    (the primary's own keys win, as Hydra's ``_self_`` last)."""

    def __init__(self, primary: Path, shown: str) -> None:
        self._mounted: list[_Mounted] = []
        document = _load(primary, shown)
        if document is None:
            return
        self._mounted.append(_Mounted(document, ()))
        self._mounted.extend(self._groups(document, primary.parent, Path(shown).parent))

    @property
    def loaded(self) -> bool:
        return bool(self._mounted)

    @staticmethod
    def _groups(document: ConfigDocument, folder: Path, shown: Path) -> list[_Mounted]:
        found: list[_Mounted] = []
        for entry in defaults_entries(document):
            if not entry.group or entry.option is None:
                continue
            path = config_file(folder / entry.group, entry.option)
            if path is None:
                continue
            loaded = _load(path, (shown / entry.group / path.name).as_posix())
            if loaded is None:
                continue
            packaged = entry.at != tuple(entry.group.split("/"))
            is_global = loaded.source.text.lstrip().startswith(GLOBAL_PACKAGE)
            found.append(_Mounted(loaded, () if is_global and not packaged else entry.at))
        return found

    def value(self, keys: tuple[str, ...]) -> ConfigValue | None:
        """The value at ``keys`` and where it is set; None when no file sets it."""
        for mounted in self._mounted:
            if keys[: len(mounted.at)] != mounted.at:
                continue
            inner = keys[len(mounted.at) :]
            entry = mounted.document.entry(inner) if inner else None
            if entry is None or entry.key_position is None:
                continue
            value = mounted.document.value(inner)
            if value is ABSENT:
                continue
            if isinstance(value, (Mapping, list)):
                value = UNKNOWN
            return ConfigValue(
                path=mounted.document.source.path,
                line=entry.key_position[0],
                value=value,
                key=dotted(keys),
            )
        return None
