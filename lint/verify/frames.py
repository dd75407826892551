"""Which stack frames are the user's: everything outside torch, the training frameworks,
the standard library and the verifier itself. Standard library only (runs inside ranks)."""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import sysconfig
from dataclasses import dataclass

#: Packages whose frames are skipped when naming a collective's call site.
FRAMEWORK_PACKAGES = (
    "torch",
    "lightning",
    "pytorch_lightning",
    "lightning_fabric",
    "lightning_utilities",
    "torchmetrics",
    "accelerate",
    "deepspeed",
    "transformers",
)
VERIFY_DIR = os.path.dirname(os.path.abspath(__file__))
#: Paths of installed packages and of a standard library, on any machine.
_LIBRARY_PATH = re.compile(
    r"[/\\](?:site|dist)-packages[/\\]|[/\\]lib[/\\]python\d+(?:\.\d+)?[/\\]"
)


@dataclass(frozen=True)
class Frame:
    """One Python frame: absolute file, 1-based line, function name."""

    file: str
    line: int
    function: str

    def to_json(self) -> dict[str, object]:
        return {"file": self.file, "line": self.line, "function": self.function}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Frame:
        return cls(str(data["file"]), int(str(data["line"])), str(data.get("function", "")))

    def short(self) -> str:
        return f"{os.path.basename(self.file)}:{self.line}"


def _package_dirs(names: tuple[str, ...]) -> tuple[str, ...]:
    dirs: list[str] = []
    for name in names:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.submodule_search_locations:
            dirs.extend(os.path.realpath(d) for d in spec.submodule_search_locations)
    return tuple(dirs)


class FrameFilter:
    """Tells user frames from framework, standard-library and verifier frames."""

    def __init__(self, packages: tuple[str, ...] = FRAMEWORK_PACKAGES) -> None:
        self._verifier = os.path.realpath(VERIFY_DIR) + os.sep
        self._skipped = (*(d + os.sep for d in _package_dirs(packages)), self._verifier)
        self._stdlib = os.path.realpath(sysconfig.get_paths()["stdlib"]) + os.sep
        self._cache: dict[str, bool] = {}
        self._verifier_cache: dict[str, bool] = {}

    def is_verifier(self, filename: str) -> bool:
        known = self._verifier_cache.get(filename)
        if known is None:
            known = self._verifier_cache[filename] = os.path.realpath(filename).startswith(
                self._verifier
            )
        return known

    def is_user(self, filename: str) -> bool:
        known = self._cache.get(filename)
        if known is None:
            known = self._classify(filename)
            self._cache[filename] = known
        return known

    def _classify(self, filename: str) -> bool:
        if filename.startswith("<"):  # <frozen importlib._bootstrap>, <string>
            return False
        path = os.path.realpath(filename)
        if path.startswith(self._skipped):
            return False
        installed = f"{os.sep}site-packages{os.sep}" in path or "dist-packages" in path
        return installed or not path.startswith(self._stdlib)

    def is_project(self, filename: str) -> bool:
        """A user file that is not an installed package (the code the user works on)."""
        if not self.is_user(filename):
            return False
        path = os.path.realpath(filename)
        return f"{os.sep}site-packages{os.sep}" not in path and "dist-packages" not in path

    @staticmethod
    @functools.lru_cache(maxsize=4096)
    def display_name(filename: str) -> str:
        """``lightning/pytorch/core/module.py`` for an installed file, else the path."""
        path = os.path.realpath(filename)
        for marker in (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}"):
            if marker in path:
                return path.split(marker, 1)[1]
        return path


class RecordedFrameFilter(FrameFilter):
    """For stacks recorded on another machine (a flight-recorder dump): its torch and
    standard library are not this machine's, so every installed package and standard
    library is told by the shape of its path (``site-packages``, ``lib/python3.11``)."""

    def _classify(self, filename: str) -> bool:
        return not _LIBRARY_PATH.search(filename) and super()._classify(filename)
