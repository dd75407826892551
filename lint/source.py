"""Reading a file once: bytes, encoding, BOM, line endings and line offsets."""

from __future__ import annotations

import codecs
import errno
import os
import re
import stat
import tokenize
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

PYTHON_SUFFIXES = (".py",)
YAML_SUFFIXES = (".yaml", ".yml")
#: JSON is linted as configuration (YAML 1.2 reads it), for the rules that read JSON.
JSON_SUFFIXES = (".json",)

_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_RAW_LINE_RE = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


class SourceError(Exception):
    """Bad input: the file cannot be decoded or loaded. The message says why; line and
    column (1-based) say where, when known."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


class FileTooLarge(Exception):
    """A file above the size limit: skipped unread."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


def read_source_bytes(path: Path, max_size: int, *, follow_links: bool = True) -> bytes:
    """The bytes of the regular file at ``path``.

    Opened without blocking and checked after opening, so a FIFO or device put where a
    file was listed fails at once instead of hanging the run. Raises ``OSError`` (a
    missing, unreadable or non-regular file, or a symbolic link when not
    ``follow_links``) and ``FileTooLarge`` (more than ``max_size`` bytes: nothing read).
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if info.st_size > max_size:
            raise FileTooLarge(info.st_size)
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        data = handle.read(max_size + 1)
    if len(data) > max_size:  # it grew since fstat
        raise FileTooLarge(len(data))
    return data


def _position(body: bytes, index: int, encoding: str) -> tuple[int, int]:
    """1-based line and character column of byte ``index`` of ``body``."""
    head = body[:index].removeprefix(codecs.BOM_UTF8)
    line_start = max(head.rfind(b"\n"), head.rfind(b"\r")) + 1
    line = len(split_lines(head[:line_start].decode(encoding, "replace"))) + 1
    return line, len(head[line_start:].decode(encoding, "replace")) + 1


def file_kind(path: str) -> str | None:
    """``"code"`` for Python, ``"config"`` for YAML and JSON, None for anything else."""
    lower = path.lower()
    if lower.endswith(PYTHON_SUFFIXES):
        return "code"
    if lower.endswith(YAML_SUFFIXES + JSON_SUFFIXES):
        return "config"
    return None


def is_json(path: str) -> bool:
    """A JSON file: linted only by the config rules that read JSON (``reads_json``)."""
    return path.lower().endswith(JSON_SUFFIXES)


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
            line, column = _position(raw, raw.index(b"\x00"), "utf-8")
            raise SourceError("file contains NUL bytes (binary content?)", line, column)
        bom = raw.startswith(codecs.BOM_UTF8)
        if kind == "code":
            try:
                lines = (match.group() for match in _RAW_LINE_RE.finditer(raw))
                # Lines end at a lone \r too, as for Python (BytesIO.readline would not).
                encoding, _ = tokenize.detect_encoding(lambda: next(lines, b""))
            except SyntaxError as exc:
                raise SourceError(f"bad encoding declaration: {exc}") from None
            if encoding == "utf-8-sig":
                encoding = "utf-8"
        else:
            encoding = "utf-8"
        body = raw[len(codecs.BOM_UTF8) :] if bom else raw
        try:
            text = body.decode(encoding)
        except UnicodeDecodeError as exc:
            line, column = _position(body, exc.start, encoding)
            bad = body[exc.start : exc.end].hex(" ")
            raise SourceError(
                f"cannot decode as {encoding}: {exc.reason} (byte {bad})", line, column
            ) from None
        except LookupError as exc:
            raise SourceError(f"cannot decode: {exc}") from None
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
        counts = {
            "\n": self.text.count("\n") - crlf,
            "\r\n": crlf,
            "\r": self.text.count("\r") - crlf,
        }
        return max(counts, key=lambda end: counts[end])  # ties: \n first
