"""Where a YAML scalar token ends on its line: ruamel gives start positions only."""

from __future__ import annotations


def _quoted_end(line: str, start: int) -> int | None:
    quote = line[start]
    i = start + 1
    while i < len(line):
        char = line[i]
        if quote == "'" and char == "'":
            if i + 1 < len(line) and line[i + 1] == "'":
                i += 2
                continue
            return i + 1
        if quote == '"' and char == "\\":
            i += 2
            continue
        if quote == '"' and char == '"':
            return i + 1
        i += 1
    return None


def token_end(line: str, start: int, *, is_key: bool, flow: bool) -> int | None:
    """0-based end (exclusive) of the scalar starting at ``start`` of ``line`` (no line
    end), or None when it does not end on this line (a multi-line scalar)."""
    if start >= len(line):
        return None
    if line[start] in "'\"":
        return _quoted_end(line, start)
    if line[start] in "|>":
        return None  # a block scalar: its text starts on the next line
    end = len(line)
    i = start
    while i < len(line):
        char = line[i]
        if char == "#" and i > start and line[i - 1] in " \t":
            end = i
            break
        if char == ":" and (is_key or flow) and (i + 1 == len(line) or line[i + 1] in " \t,]}"):
            end = i
            break
        if flow and char in ",]}":
            end = i
            break
        i += 1
    text = line[start:end].rstrip()
    return start + len(text) if text else None
