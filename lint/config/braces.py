"""How many paths a brace pattern expands to (``audio_{0..511}.tar`` -> 512), following
the ``braceexpand`` package that NeMo uses, without expanding anything."""

from __future__ import annotations

import re

_RANGE = re.compile(r"^(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?$")
#: Above this, a pattern is not worth counting (and a count is not needed).
MAX_COUNT = 10**9


def _matching(text: str, start: int) -> int | None:
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    return None


def _split_top(body: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in body:
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += char == "{"
        depth -= char == "}"
        current += char
    parts.append(current)
    return parts


def _range_count(body: str) -> int | None:
    match = _RANGE.match(body)
    if match is None:
        return None
    first, last, step = match.groups()
    if first.lstrip("-").isdigit() != last.lstrip("-").isdigit():
        return None
    low, high = (int(first), int(last)) if first.lstrip("-").isdigit() else (ord(first), ord(last))
    stride = abs(int(step)) if step else 1
    return abs(high - low) // (stride or 1) + 1


def count_expansions(pattern: str, depth: int = 0) -> int:
    """Number of strings ``braceexpand(pattern)`` yields."""
    if depth > 20:
        return 1
    total = 1
    i = 0
    while i < len(pattern):
        if pattern[i] != "{":
            i += 1
            continue
        end = _matching(pattern, i)
        if end is None:
            break  # an unmatched brace is literal text
        body = pattern[i + 1 : end]
        ranged = _range_count(body)
        if ranged is not None:
            total *= ranged
        else:
            parts = _split_top(body)
            if len(parts) == 1:
                i += 1  # ``{x}`` is literal text; braces inside it may still expand
                continue
            total *= sum(count_expansions(p, depth + 1) for p in parts)
        total = min(total, MAX_COUNT)
        i = end + 1
    return total
