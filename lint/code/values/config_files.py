"""Which config files a module is bound to (``ddplint.analysis.config_bindings``), as
paths on disk and as shown in output: Hydra's ``config_path`` is relative to the module's
folder; ``OmegaConf.load`` is relative to the working directory, taken to be the project
root (or, failing that, the module's folder).

``dependency_files`` is the engine's question, asked for every module on warm runs too:
the files whose contents belong in a module's cache key, found by a text scan (no parse,
no YAML), a superset of what ``bound_files`` loads.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path

from ddplint.analysis.config_bindings import ConfigBinding, config_bindings
from ddplint.code.syntax.python_ast import parse_python

#: Words a module binding a config must hold (cheap check before parsing).
BINDING_NEEDLES = (b"hydra", b"OmegaConf")
CONFIG_SUFFIXES = (".yaml", ".yml")
#: Most config files whose contents key a module's cached result.
MAX_DEPENDENCIES = 500
#: Folder levels below a Hydra config folder whose YAML files key the result.
MAX_DEPENDENCY_DEPTH = 3
_HYDRA_FOLDER = re.compile(rb"""(?:config_path\s*=\s*|hydra\.main\(\s*)["']([^"']*)["']""")
_HYDRA_NAME = re.compile(rb"config_name\s*=|hydra\.main\(\s*[\"']")
_LOADED_FILE = re.compile(rb"""OmegaConf\.load\(\s*(?:file_\s*=\s*)?["']([^"']+)["']""")


@dataclass(frozen=True)
class BoundFile:
    """A config file a binding names: ``path`` on disk, ``shown`` in messages."""

    binding: ConfigBinding
    path: Path
    shown: str


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


def _yaml_below(top: Path) -> list[Path]:
    """The YAML files in ``top`` and up to ``MAX_DEPENDENCY_DEPTH`` folders below it."""
    found: list[Path] = []
    for folder, folders, files in os.walk(top):
        depth = len(Path(folder).relative_to(top).parts)
        keep = depth < MAX_DEPENDENCY_DEPTH
        folders[:] = sorted(f for f in folders if not f.startswith(".")) if keep else []
        found.extend(Path(folder, f) for f in sorted(files) if f.endswith(CONFIG_SUFFIXES))
        if len(found) >= MAX_DEPENDENCIES:
            break
    return found


def dependency_files(raw: bytes, module_path: str, project_root: str) -> list[Path]:
    """Every file the module's config values may come from (Hydra config folders with
    their groups, ``OmegaConf.load`` files), at most ``MAX_DEPENDENCIES``."""
    if not any(needle in raw for needle in BINDING_NEEDLES):
        return []
    folder = _module_folder(module_path, project_root)
    found: list[Path] = []
    if b"hydra" in raw and _HYDRA_NAME.search(raw):
        relatives = {m.group(1).decode("utf-8", "replace") for m in _HYDRA_FOLDER.finditer(raw)}
        for relative in sorted(relatives or {""}):
            found.extend(_yaml_below(folder / relative))
    for match in _LOADED_FILE.finditer(raw):
        loaded = match.group(1).decode("utf-8", "replace")
        found.extend(p for p in (Path(project_root) / loaded, folder / loaded) if p.is_file())
    return found[:MAX_DEPENDENCIES]
