"""Reading a file once: bytes, encoding, BOM, line endings and line offsets."""

from __future__ import annotations

import codecs
import io
import re
import tokenize
from dataclasses import dataclass, field
from functools import cached_property

PYTHON_SUFFIXES = (".py",)
YAML_SUFFIXES = (".yaml", ".yml")

_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


class SourceError(Exception):
    """Bad input: the file cannot be decoded or loaded. The message says why; line and
    column (1-based) say where, when known."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


def file_kind(path: str) -> str | None:
    """``"code"`` for Python, ``"config"`` for YAML, None for anything else."""
    lower = path.lower()
    if lower.endswith(PYTHON_SUFFIXES):
        return "code"
    if lower.endswith(YAML_SUFFIXES):
        return "config"
    return None


def split_lines(text: str) -> list[str]:
    """Split on ``\\n``, ``\\r\\n`` and ``\\r`` only (the line ends Python and YAML know),
    keeping the ends."""
    return _LINE_RE.findall(text)


@dataclass
class SourceFile:
    """A decoded file. ``text`` never holds the BOM; positions refer to ``text``."""

    path: str
    raw: bytes
    text: str
    encoding: str
    bom: bool
    kind: str
    _lines: list[str] | None = field(default=None, repr=False)

    @classmethod
    def decode(cls, path: str, raw: bytes) -> SourceFile:
        kind = file_kind(path) or "code"
        if b"\x00" in raw:
            raise SourceError("file contains NUL bytes (binary content?)")
        bom = raw.startswith(codecs.BOM_UTF8)
        if kind == "code":
            try:
                encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
            except SyntaxError as exc:
                raise SourceError(f"bad encoding declaration: {exc}") from None
            if encoding == "utf-8-sig":
                encoding = "utf-8"
        else:
            encoding = "utf-8"
        body = raw[len(codecs.BOM_UTF8) :] if bom else raw
        try:
            text = body.decode(encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            raise SourceError(f"cannot decode as {encoding}: {exc}") from None
        return cls(path=path, raw=raw, text=text, encoding=encoding, bom=bom, kind=kind)

    def encode(self, text: str) -> bytes:
        """Encode edited text the way the file was stored (same encoding, same BOM)."""
        data = text.encode(self.encoding)
        return codecs.BOM_UTF8 + data if self.bom else data

    @property
    def lines(self) -> list[str]:
        """Lines with their line ends; index 0 is line 1."""
        if self._lines is None:
            self._lines = split_lines(self.text)
        return self._lines

    @cached_property
    def line_starts(self) -> list[int]:
        """Character offset of the start of each line (index 0 is line 1)."""
        starts = [0]
        for line in self.lines:
            starts.append(starts[-1] + len(line))
        return starts

    def offset(self, line: int, column: int) -> int:
        """Character offset of a 1-based (line, column) position."""
        starts = self.line_starts
        if line - 1 >= len(starts):
            return len(self.text)
        return starts[line - 1] + column - 1

    def line_text(self, line: int) -> str:
        """Line ``line`` (1-based) without its line end; empty past the end."""
        if 1 <= line <= len(self.lines):
            return self.lines[line - 1].rstrip("\r\n")
        return ""

    def newline(self) -> str:
        """The file's dominant line end, for text a fix inserts."""
        crlf = self.text.count("\r\n")
        lf = self.text.count("\n") - crlf
        return "\r\n" if crlf > lf else "\n"
