"""Which config files a module is bound to (``ddplint.analysis.config_bindings``), as
paths on disk and as shown in output: Hydra's ``config_path`` is relative to the module's
folder; ``OmegaConf.load`` is relative to the working directory, taken to be the project
root (or, failing that, the module's folder).

Light on purpose (``ast`` and paths, no YAML): the engine asks it for the files whose
contents belong in a module's cache key.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
from dataclasses import dataclass
from pathlib import Path

from ddplint.analysis.config_bindings import ConfigBinding, config_bindings
from ddplint.code.syntax.python_ast import parse_python

#: Words a module binding a config must hold (cheap check before parsing).
BINDING_NEEDLES = (b"hydra", b"OmegaConf")
CONFIG_SUFFIXES = (".yaml", ".yml")
#: Most config files whose contents key a module's cached result.
MAX_DEPENDENCIES = 500


@dataclass(frozen=True)
class BoundFile:
    """A config file a binding names: ``path`` on disk, ``shown`` in messages."""

    binding: ConfigBinding
    path: Path
    shown: str

    def dependencies(self) -> list[Path]:
        """The files its values may come from: for Hydra every YAML file below the
        config folder (the ``defaults:`` groups), at most ``MAX_DEPENDENCIES``; for
        ``OmegaConf.load`` the file itself."""
        if self.binding.config_name is None:
            return [self.path]
        found: list[Path] = []
        top = self.path.parent
        for folder, folders, files in os.walk(top):
            depth = len(Path(folder).relative_to(top).parts)
            folders[:] = sorted(f for f in folders if not f.startswith(".")) if depth < 3 else []
            found.extend(Path(folder, f) for f in sorted(files) if f.endswith(CONFIG_SUFFIXES))
            if len(found) >= MAX_DEPENDENCIES:
                break
        return found[:MAX_DEPENDENCIES]


def _shown(module_path: str, relative: str) -> str:
    folder = posixpath.dirname(module_path.replace("\\", "/"))
    return posixpath.normpath(posixpath.join(folder, relative))


def _existing(folder: Path, name: str) -> str | None:
    names = [name] if name.endswith(CONFIG_SUFFIXES) else [name + s for s in CONFIG_SUFFIXES]
    return next((n for n in names if (folder / n).is_file()), None)


def _module_folder(module_path: str, project_root: str) -> Path:
    """The module's folder on disk: ``module_path`` is shown relative to the working
    directory; a caller that shows it relative to the project root is served too."""
    folder = Path(module_path).parent
    if folder.is_absolute() or folder.is_dir():
        return folder
    return Path(project_root) / folder


def _bound_file(binding: ConfigBinding, module_path: str, project_root: str) -> BoundFile | None:
    module_folder = _module_folder(module_path, project_root)
    if binding.config_name is not None:
        folder = module_folder / (binding.config_path or "")
        name = _existing(folder, binding.config_name)
        if name is None:
            return None
        relative = posixpath.join(binding.config_path or "", name)
        return BoundFile(binding, folder / name, _shown(module_path, relative))
    if binding.loaded_file is None or Path(binding.loaded_file).is_absolute():
        return None
    under_root = Path(project_root) / binding.loaded_file
    if under_root.is_file():
        shown = posixpath.normpath(binding.loaded_file)
        with contextlib.suppress(ValueError):  # shown relative to the working directory
            shown = under_root.resolve().relative_to(Path.cwd().resolve()).as_posix()
        return BoundFile(binding, under_root, shown)
    beside = module_folder / binding.loaded_file
    if beside.is_file():
        return BoundFile(binding, beside, _shown(module_path, binding.loaded_file))
    return None


def bound_files(text: str, module_path: str, project_root: str) -> list[BoundFile]:
    """The config files the module at ``module_path`` (as shown, relative to the
    working directory) is bound to; none when it does not parse."""
    if not any(needle in text.encode("utf-8", "surrogateescape") for needle in BINDING_NEEDLES):
        return []
    try:
        tree = parse_python(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    found = (_bound_file(b, module_path, project_root) for b in config_bindings(tree))
    return [bound for bound in found if bound is not None]
