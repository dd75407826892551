"""One YAML document: navigation by key path, positions of keys and values (through
merge keys too), and values resolved through OmegaConf when they interpolate."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ddplint.config.resolve import Resolver, has_interpolation
from ddplint.config.spans import token_end
from ddplint.config.values import ABSENT, UNKNOWN, plain_scalar
from ddplint.source import SourceFile

Key = str | int
KeyPath = tuple[Key, ...]


def dotted(path: KeyPath) -> str:
    """``model.train_ds.num_workers``; list items as ``trainer.callbacks[0]``."""
    text = ""
    for key in path:
        if isinstance(key, int) and not isinstance(key, bool):
            text += f"[{key}]"
        else:
            text += f".{key}" if text else str(key)
    return text


def _merged_maps(mapping: Any) -> list[Any]:
    merged = getattr(mapping, "merge", None) or []
    return [item[1] if isinstance(item, tuple) else item for item in merged]


def _own_keys(container: Any) -> Any:
    lc = getattr(container, "lc", None)
    return lc.data if lc is not None and lc.data is not None else {}


def _holder(container: Any, key: Key, depth: int = 0) -> Any:
    """The mapping (or sequence) that writes ``key`` itself: ``container``, or the map a
    merge key (``<<: *base``) brought it from."""
    if key in _own_keys(container) or depth > 32:
        return container
    for merged in _merged_maps(container):
        if key in merged:
            return _holder(merged, key, depth + 1)
    return container


@dataclass(frozen=True)
class Entry:
    """One key (or list item) at ``path``: ``holder`` is the container that writes it."""

    holder: Any
    key: Key
    path: KeyPath
    value: Any

    def _lc(self, index: int) -> tuple[int, int] | None:
        data = _own_keys(self.holder).get(self.key)
        if not data or len(data) <= index + 1:
            return None
        return data[index] + 1, data[index + 1] + 1

    @property
    def key_position(self) -> tuple[int, int] | None:
        """1-based (line, column) of the key (of the item, for a list)."""
        return self._lc(0)

    @property
    def value_position(self) -> tuple[int, int] | None:
        """1-based (line, column) where the value starts (None for list items)."""
        if isinstance(self.key, int) and not isinstance(self.key, bool):
            return None
        return self._lc(2)

    @property
    def in_flow(self) -> bool:
        fa = getattr(self.holder, "fa", None)
        return bool(fa is not None and fa.flow_style())


class ConfigDocument:
    """One document of a YAML stream (``index`` 0, 1, ...)."""

    def __init__(self, root: Any, index: int, source: SourceFile) -> None:
        self.root = root
        self.index = index
        self.source = source
        self._resolver = Resolver(root)

    # -- navigation -------------------------------------------------------------------
    def entry(self, path: KeyPath) -> Entry | None:
        """The entry at ``path``, or None when a key on the way is missing."""
        container: Any = self.root
        found: Entry | None = None
        for position, key in enumerate(path):
            if isinstance(container, Mapping):
                if key not in container:
                    return None
                value = container[key]
            elif isinstance(container, list) and isinstance(key, int):
                if not -len(container) <= key < len(container):
                    return None
                value = container[key]
            else:
                return None
            found = Entry(_holder(container, key), key, path[: position + 1], value)
            container = value
        return found

    def raw(self, path: KeyPath) -> Any:
        found = self.entry(path)
        return ABSENT if found is None else found.value

    def mapping(self, path: KeyPath) -> Mapping[Any, Any] | None:
        value = self.root if not path else self.raw(path)
        return value if isinstance(value, Mapping) else None

    def value(self, path: KeyPath) -> Any:
        """The value at ``path``: a plain scalar (interpolations resolved), the container
        itself for a map or list, ABSENT when missing, UNKNOWN when it cannot be known
        (``???``, a resolver, a custom tag, an interpolation that does not resolve)."""
        raw = self.raw(path)
        if raw is ABSENT or isinstance(raw, (Mapping, list)):
            return raw
        if has_interpolation(raw):
            return self._resolver.resolve(path)
        plain = plain_scalar(raw)
        return UNKNOWN if plain == "???" else plain

    def mappings(self) -> Iterator[tuple[KeyPath, Mapping[Any, Any]]]:
        """Every mapping with the first path that reaches it; a shared (aliased)
        mapping is visited once, so an alias bomb stays cheap."""
        seen: set[int] = set()
        stack: list[tuple[KeyPath, Any]] = [((), self.root)]
        while stack:
            path, node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node, Mapping):
                yield path, node
                items = list(node.items())
            elif isinstance(node, list):
                items = list(enumerate(node))
            else:
                continue
            for key, child in reversed(items):
                if isinstance(child, (Mapping, list)) and isinstance(key, (str, int)):
                    stack.append(((*path, key), child))

    # -- positions --------------------------------------------------------------------
    def key_span(self, found: Entry) -> tuple[int, int, int, int]:
        """1-based (line, column, end_line, end_column) of the key token."""
        position = found.key_position or (1, 1)
        line, column = position
        end = token_end(self.source.line_text(line), column - 1, is_key=True, flow=found.in_flow)
        return line, column, line, (end + 1) if end is not None else column + 1

    def value_span(self, found: Entry) -> tuple[int, int, int, int] | None:
        """The value token when it is a scalar written on one line."""
        position = found.value_position
        if position is None or isinstance(found.value, (Mapping, list)):
            return None
        line, column = position
        end = token_end(self.source.line_text(line), column - 1, is_key=False, flow=found.in_flow)
        if end is None:
            return None
        return line, column, line, end + 1

    def value_text(self, found: Entry) -> str | None:
        span = self.value_span(found)
        if span is None:
            return None
        return self.source.line_text(span[0])[span[1] - 1 : span[3] - 1]
