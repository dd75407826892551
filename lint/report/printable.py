"""Text from the file system made safe to print: control characters, undecodable
bytes of file names and bidirectional overrides become visible escapes, so a file name
cannot move the cursor, colour the terminal, split a log line or forge a CI command."""

from __future__ import annotations

import json
import unicodedata
from typing import Any

#: Bidirectional embedding, override and isolate controls ("Trojan source" reordering).
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _escaped(char: str) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte os.fsdecode could not decode (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if unicodedata.category(char) in ("Cc", "Cs") or char in _BIDI_CONTROLS:
        return char.encode("unicode_escape").decode("ascii")
    return char


def printable(text: str) -> str:
    """``text`` with every control character, lone surrogate and bidi control escaped
    (``\\n``, ``\\x1b``, ``\\xff``, ``\\u202e``); other text unchanged."""
    if text.isprintable():
        return text
    return "".join(_escaped(char) for char in text)


def json_document(document: Any) -> str:
    """``document`` as indented JSON that is valid UTF-8: a file name's undecodable byte
    (a lone surrogate) is written as its ``\\udcXX`` escape, which JSON readers accept."""
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
