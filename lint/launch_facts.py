"""The launch scripts of a project handed to the config rules (as ``code_facts`` hands
what Python files do): every ``.sh`` / ``.slurm`` / ``.sbatch`` file below the project
root, read with ``ddplint.config.launch_scripts``, one record per training command.

The walk leaves out hidden folders and virtual environments and stops at
``MAX_SCRIPTS`` files; a script that cannot be read is left out with one notice.
"""

from __future__ import annotations

import os
from pathlib import Path

from ddplint.code_facts import LAUNCHES, Record
from ddplint.config.launch_scripts import launches
from ddplint.discover import display_path
from ddplint.source import FileTooLarge, read_source_bytes

SCRIPT_SUFFIXES = (".sh", ".bash", ".slurm", ".sbatch")
SKIPPED_FOLDERS = frozenset(
    {"node_modules", "venv", "site-packages", "__pycache__", "build", "dist"}
)
#: At most this many scripts are read, and each up to ``MAX_SCRIPT_BYTES``.
MAX_SCRIPTS = 2000
MAX_SCRIPT_BYTES = 256 * 1024


def script_paths(root: Path) -> list[Path]:
    """The launch scripts below ``root``, sorted, at most ``MAX_SCRIPTS``."""
    found: list[Path] = []
    for folder, folders, files in os.walk(root):
        folders[:] = sorted(
            f for f in folders if not f.startswith(".") and f not in SKIPPED_FOLDERS
        )
        found.extend(Path(folder, f) for f in sorted(files) if f.lower().endswith(SCRIPT_SUFFIXES))
        if len(found) >= MAX_SCRIPTS:
            break
    return found[:MAX_SCRIPTS]


def launch_facts(root: Path) -> tuple[list[tuple[str, dict[str, list[Record]]]], list[str]]:
    """(display path, {LAUNCHES: records}) per script with a training command, and a
    notice for each script that could not be read."""
    per_file: list[tuple[str, dict[str, list[Record]]]] = []
    notices: list[str] = []
    for path in script_paths(root):
        shown = display_path(path)
        try:
            raw = read_source_bytes(path, MAX_SCRIPT_BYTES)
        except FileTooLarge:
            continue  # a data dump named .sh is no launch script
        except OSError as exc:
            notices.append(f"{shown}: launch script not read ({exc.strerror or exc})")
            continue
        if b"\x00" in raw:
            continue  # binary
        text = raw.decode("utf-8", errors="replace")
        records = [launch.to_record() for launch in launches(text)]
        if records:
            per_file.append((shown, {LAUNCHES: records}))
    return per_file, notices
