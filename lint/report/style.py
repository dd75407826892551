"""Colour for the human formats: when to use it (a terminal, ``NO_COLOR``,
``FORCE_COLOR``) and the few styles ddplint uses, as ruff's output does."""

from __future__ import annotations

import os
from typing import TextIO

import click

from ddplint.finding import Severity

SEVERITY_COLOURS = {Severity.ERROR: "red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def use_colour(stream: TextIO | None, environ: dict[str, str] | None = None) -> bool:
    """Colour on a terminal only: ``NO_COLOR`` (any value) turns it off, ``FORCE_COLOR``
    (any value) turns it on even in a pipe or a file; ``NO_COLOR`` wins."""
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (OSError, ValueError):
        return False


class Styler:
    """Wraps text in ANSI styles when colour is on; returns it unchanged otherwise."""

    def __init__(self, colour: bool) -> None:
        self.colour = colour

    def __call__(self, text: str, fg: str | None = None, bold: bool | None = None) -> str:
        return click.style(text, fg=fg, bold=bold) if self.colour else text

    def path(self, text: str) -> str:
        return self(text, bold=True)

    def code(self, text: str, severity: Severity) -> str:
        return self(text, fg=SEVERITY_COLOURS[severity], bold=True)

    def fixable(self, text: str) -> str:
        return self(text, fg="cyan")
