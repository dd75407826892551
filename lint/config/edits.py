"""Minimal text edits for YAML fixes at node positions: change one scalar, add one key
at the mapping's indentation. The file is never re-dumped (a ruamel load + dump rewrites
most real configs); ``ConfigContext.checked_fix`` re-parses the result."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ddplint.config.document import ConfigDocument, Entry, KeyPath
from ddplint.finding import Edit


def replace_value(doc: ConfigDocument, found: Entry, content: str) -> Edit | None:
    """Replace the scalar value of ``found`` (written on one line) with ``content``."""
    span = doc.value_span(found)
    if span is None:
        return None
    return Edit(*span, content)


def _first_own_key(mapping: Any) -> tuple[int, int] | None:
    data = getattr(getattr(mapping, "lc", None), "data", None) or {}
    positions = [(v[0], v[1]) for v in data.values() if v]
    return min(positions) if positions else None


def _is_document_marker(text: str) -> bool:
    return text[:3] in ("---", "...") and (len(text) == 3 or text[3] in " \t")


def _last_line_of_block(doc: ConfigDocument, first_line: int, indent: int) -> int:
    """0-based index of the last line holding content of the block mapping whose keys
    start at column ``indent`` (0-based) from line ``first_line``."""
    lines = doc.source.lines
    last = first_line
    for number in range(first_line + 1, len(lines)):
        text = lines[number].rstrip("\r\n")
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if _is_document_marker(text) or len(text) - len(text.lstrip(" ")) < indent:
            break
        last = number
    return last


def add_key(doc: ConfigDocument, path: KeyPath, key: str, content: str) -> Edit | None:
    """Add ``key: content`` to the mapping at ``path``."""
    return add_keys(doc, path, [(key, content)])


def add_keys(doc: ConfigDocument, path: KeyPath, pairs: list[tuple[str, str]]) -> Edit | None:
    """Add ``key: content`` lines to the mapping at ``path``: after its last entry for a
    block mapping, before its first key for a flow mapping. None when the mapping is
    empty or shares its first line with other syntax (``- key: ...``)."""
    mapping = doc.mapping(path)
    if not isinstance(mapping, Mapping):
        return None
    first = _first_own_key(mapping)
    if first is None:
        return None
    line, column = first
    fa = getattr(mapping, "fa", None)
    if fa is not None and fa.flow_style():
        text = "".join(f"{key}: {content}, " for key, content in pairs)
        return Edit(line + 1, column + 1, line + 1, column + 1, text)
    prefix = doc.source.line_text(line + 1)[:column]
    if prefix.strip():
        return None
    last = _last_line_of_block(doc, line, column)
    newline = doc.source.newline()
    entries = newline.join(" " * column + f"{key}: {content}" for key, content in pairs)
    lines = doc.source.lines
    if lines[last].endswith(("\n", "\r")):
        return Edit(last + 2, 1, last + 2, 1, entries + newline)
    end = len(lines[last]) + 1
    return Edit(last + 1, end, last + 1, end, newline + entries)


def set_or_add(doc: ConfigDocument, mapping_path: KeyPath, key: str, content: str) -> Edit | None:
    """Change ``key`` of the mapping at ``mapping_path`` to ``content``, adding it when
    it is not there."""
    return set_or_add_many(doc, mapping_path, [(key, content)])[0]


def set_or_add_many(
    doc: ConfigDocument, mapping_path: KeyPath, pairs: list[tuple[str, str]]
) -> list[Edit | None]:
    """``set_or_add`` for several keys of one mapping; the missing ones are added
    together by one edit."""
    edits: list[Edit | None] = []
    missing: list[tuple[str, str]] = []
    for key, content in pairs:
        found = doc.entry((*mapping_path, key))
        if found is None:
            missing.append((key, content))
        else:
            edits.append(replace_value(doc, found, content))
    if missing:
        edits.append(add_keys(doc, mapping_path, missing))
    return edits


def bool_text(doc: ConfigDocument, found: Entry | None, value: bool) -> str:
    """``true``/``false`` in the case style the file already uses at ``found``."""
    word = "true" if value else "false"
    current = doc.value_text(found) if found is not None else None
    if current and current[:1].isupper():
        return word.upper() if current.isupper() and len(current) > 1 else word.capitalize()
    return word
