"""Map LibCST positions onto the file's own text.

LibCST computes positions on the code it regenerates, and that code is not always the
file's text: a form feed at the start of a code line (and other whitespace Python skips
there) is dropped, so every column on that line would be one short, and a fix would land
one character to the left. ``ColumnMap`` aligns the regenerated lines with the real ones,
character by character, allowing only skipped whitespace to differ. Where a line cannot be
aligned, its positions are unknown and fixes on it are refused (``aligned`` is False).
"""

from __future__ import annotations

import libcst as cst

from ddplint.source import split_lines

#: Whitespace Python's tokenizer skips; LibCST may leave it out of the code it regenerates
#: (a form feed at the start of a line, and the spaces before it).
SKIPPED_WHITESPACE = frozenset(" \t\x0c\x0b")


def regenerated_code(module: cst.Module, text: str) -> str:
    """``module.code``, the code LibCST regenerates; ``text`` itself, without regenerating
    it, when it holds none of the whitespace LibCST may drop (LibCST keeps the rest)."""
    if "\x0c" in text or "\x0b" in text:
        return module.code
    return text


class ColumnMap:
    """Columns of LibCST's regenerated code translated to columns of the real text."""

    def __init__(self, real_text: str, generated_text: str) -> None:
        self.identical = real_text == generated_text
        self._maps: dict[int, list[int] | None] = {}
        if self.identical:
            return
        real_lines = split_lines(real_text)
        generated_lines = split_lines(generated_text)
        if len(real_lines) != len(generated_lines):
            self._line_count_differs = True
            return
        self._line_count_differs = False
        for number, (real, generated) in enumerate(
            zip(real_lines, generated_lines, strict=True), start=1
        ):
            real, generated = real.rstrip("\r\n"), generated.rstrip("\r\n")
            if real != generated:
                self._maps[number] = _align(real, generated)

    @property
    def aligned(self) -> bool:
        """Every position can be translated exactly."""
        if self.identical:
            return True
        return not self._line_count_differs and all(m is not None for m in self._maps.values())

    def column(self, line: int, column: int) -> int:
        """The 0-based column in the real text of a 0-based ``column`` of LibCST's code
        (unchanged where the line could not be aligned: see ``aligned``)."""
        if self.identical:
            return column
        mapping = self._maps.get(line)
        if mapping is None or column >= len(mapping):
            shift = mapping[-1] - (len(mapping) - 1) if mapping else 0
            return column + shift
        return mapping[column]


def _align(real: str, generated: str) -> list[int] | None:
    """For each column of ``generated`` (and one past its end), the column of the same
    character in ``real``; None when the two differ by more than skipped whitespace."""
    mapping: list[int] = []
    j = 0
    for character in generated:
        while j < len(real) and real[j] != character and real[j] in SKIPPED_WHITESPACE:
            j += 1
        if j >= len(real) or real[j] != character:
            return None
        mapping.append(j)
        j += 1
    rest = real[j:]
    if rest.strip("".join(SKIPPED_WHITESPACE)):
        return None
    mapping.append(j)
    return mapping
