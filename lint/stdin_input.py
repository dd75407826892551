"""``ddplint check -``: lint (or fix) the text on stdin as the file ``--stdin-filename``
names (ruff's form, as editors' lint and format-on-save integrations pipe a buffer)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from ddplint.cache import ResultCache
from ddplint.discover import display_path, file_target
from ddplint.engine.run import lint_buffers
from ddplint.engine.run_setup import cache_directory
from ddplint.results import RunResult
from ddplint.settings import LintOptions, Settings

if TYPE_CHECKING:
    from ddplint.fixer import FileFix

#: The name the text is linted as when ``--stdin-filename`` is not given.
DEFAULT_STDIN_NAME = "stdin.py"


def reads_stdin(paths: tuple[str, ...], stdin_filename: str | None) -> bool:
    """``-`` alone, or no path with ``--stdin-filename``."""
    return paths == ("-",) or (not paths and stdin_filename is not None)


@dataclass(frozen=True)
class StdinText:
    """The text read from stdin and the file it stands in for."""

    path: Path
    raw: bytes

    @classmethod
    def read(cls, stream: BinaryIO, filename: str | None) -> StdinText:
        return cls(Path(filename or DEFAULT_STDIN_NAME).absolute(), stream.read())

    def lint(self, settings: Settings, options: LintOptions, use_cache: bool) -> RunResult:
        """One run with the text standing in for its file (the project's other files
        are read from disk, as the language server does), with the project's cache."""
        cache = ResultCache(cache_directory(settings), options.fingerprint()) if use_cache else None
        result = lint_buffers({self.path: self.raw}, settings, options, cache)
        if cache is not None:
            cache.save()
        return result

    def fix(self, settings: Settings, options: LintOptions, unsafe: bool) -> FileFix:
        """The fix loop on the text (nothing is written: the caller prints the result).
        Raises SourceError when the text cannot be decoded."""
        relative = file_target(self.path, settings).relative
        from ddplint.fixer import fix_source, options_for_path  # only a fix needs it

        file_options = options_for_path(settings, options, relative)
        return fix_source(display_path(self.path), self.raw, file_options, unsafe)
