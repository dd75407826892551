"""Positions between ddplint and LSP.

ddplint counts 1-based lines and 1-based columns in characters (code points) of the
decoded text. LSP counts 0-based lines and 0-based columns in the units of the position
encoding agreed at initialisation: UTF-16 code units unless the client offered UTF-32 or
UTF-8 (then a character beyond U+FFFF is 2 UTF-16 units, 1 UTF-32 unit, 4 UTF-8 bytes).
Both sides split lines on ``\\n``, ``\\r\\n`` and ``\\r`` only.
"""

from __future__ import annotations

from collections.abc import Sequence

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"
#: The encodings this server can count in, in its order of preference.
SUPPORTED = (UTF32, UTF16, UTF8)


def units(text: str, encoding: str) -> int:
    """The length of ``text`` in the units of ``encoding``."""
    if encoding == UTF32:
        return len(text)
    if encoding == UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text) + sum(1 for character in text if ord(character) > 0xFFFF)


def _strip_end(line: str) -> str:
    return line.rstrip("\r\n")


def to_lsp(lines: Sequence[str], line: int, column: int, encoding: str) -> tuple[int, int]:
    """LSP (line, character) of ddplint's 1-based (``line``, ``column``); ``lines`` are
    the text's lines (ends kept or not). A position past the last line is the text's end."""
    if line > len(lines):
        if not lines:
            return 0, 0
        last = _strip_end(lines[-1])
        if lines[-1] != last:  # the text ends with a line end: its end is an empty line
            return len(lines), 0
        return len(lines) - 1, units(last, encoding)
    text = _strip_end(lines[line - 1])
    return line - 1, units(text[: max(0, column - 1)], encoding)
