"""What a launch script allocates for each training command it runs: ``#SBATCH`` lines
(nodes, tasks and GPUs per node) and the ``srun`` / ``torchrun`` command lines under
them, with the line of every value and the config each command names.

A small, tolerant reader, not a shell: line continuations are joined, each logical line
is split with ``shlex``; a line it cannot split is skipped. A value spelled with a
variable (``--nnodes=$NNODES``) or a range (``--nodes=2-4``) is unknown, and an unknown
value on the command line hides the ``#SBATCH`` one (nothing is said from it). sbatch
reads ``#SBATCH`` lines up to the first command, as here.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

#: A value that is spelled but cannot be known (a variable, a range).
UNKNOWN_VALUE = "unknown"

#: ``#SBATCH`` / ``srun`` options, by what they allocate.
NODE_OPTIONS = ("--nodes", "-N")
TASK_OPTIONS = ("--ntasks-per-node",)
GPU_OPTIONS = ("--gpus-per-node", "--gres")
#: ``torchrun`` (``python -m torch.distributed.run`` / ``.launch``) options.
NPROC_OPTIONS = ("--nproc_per_node", "--nproc-per-node")
NNODES_OPTIONS = ("--nnodes",)
#: Options that name the config a command runs with (Hydra, LightningCLI, argparse).
CONFIG_NAME_OPTIONS = ("--config-name", "--config_name", "-cn")
CONFIG_PATH_OPTIONS = ("--config-path", "--config_path", "-cp")
TORCHRUN_MODULES = frozenset({"torch.distributed.run", "torch.distributed.launch"})
#: Keys a Hydra override on the command line may set (``trainer.devices=8``).
OVERRIDE = re.compile(r"^[+~]{0,2}([A-Za-z_][\w.]*)=")
#: ... or a LightningCLI option (``--trainer.devices 8``, ``--trainer.devices=8``).
CLI_OVERRIDE = re.compile(r"^--([A-Za-z_]\w*\.[\w.]+)(?:=|$)")
_SBATCH = re.compile(r"^#SBATCH\s+(.*)$")


@dataclass(frozen=True)
class Stated:
    """One allocated quantity: ``value`` (an int, or ``UNKNOWN_VALUE``) and the line
    and text that state it."""

    value: int | str
    line: int
    text: str

    @property
    def known(self) -> int | None:
        return self.value if isinstance(self.value, int) else None


@dataclass(frozen=True)
class Launch:
    """One command that starts training: what it allocates and which config it names.

    ``launcher`` is ``torchrun``, ``srun`` or ``python``; ``batch`` whether the script
    is an sbatch job (has ``#SBATCH`` lines). ``config_words`` are the command's words
    that may name a config file, ``config_name`` / ``config_path`` Hydra's options, and
    ``overrides`` the keys it sets on the command line."""

    line: int
    launcher: str
    batch: bool
    allocation: Mapping[str, Stated]
    config_words: tuple[str, ...] = ()
    config_name: str | None = None
    config_path: str | None = None
    overrides: frozenset[str] = field(default_factory=frozenset)

    def to_record(self) -> dict[str, Any]:
        return {
            "line": self.line,
            "launcher": self.launcher,
            "batch": self.batch,
            "allocation": {
                k: [s.value, s.line, s.text] for k, s in sorted(self.allocation.items())
            },
            "config_words": list(self.config_words),
            "config_name": self.config_name,
            "config_path": self.config_path,
            "overrides": sorted(self.overrides),
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Launch:
        return cls(
            line=int(record["line"]),
            launcher=str(record["launcher"]),
            batch=bool(record["batch"]),
            allocation={
                k: Stated(v[0], int(v[1]), str(v[2])) for k, v in record["allocation"].items()
            },
            config_words=tuple(record.get("config_words", ())),
            config_name=record.get("config_name"),
            config_path=record.get("config_path"),
            overrides=frozenset(record.get("overrides", ())),
        )


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """(first line number, text) of each line with its ``\\`` continuations joined."""
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        if not pending:
            start = number
        if raw.rstrip().endswith("\\") and not raw.lstrip().startswith("#"):
            pending.append(raw.rstrip()[:-1])
            continue
        pending.append(raw)
        yield start, " ".join(pending)
        pending = []
    if pending:
        yield start, " ".join(pending)


def _split(text: str) -> list[str] | None:
    try:
        return shlex.split(text, comments=True)
    except ValueError:
        return None


def _count(text: str) -> int | str:
    """``8`` -> 8; ``$N``, ``2-4``, ``1:2`` -> unknown."""
    return int(text) if text.isdigit() and int(text) > 0 else UNKNOWN_VALUE


def _gpu_count(option: str, text: str) -> int | str | None:
    """GPUs per node of ``--gpus-per-node=[type:]N`` or ``--gres=gpu[:type]:N``; None
    for a ``--gres`` that asks for something else."""
    if option == "--gres":
        gpus = next((part for part in text.split(",") if part.startswith("gpu")), None)
        if gpus is None:
            return None
        text = gpus.split(":")[-1] if ":" in gpus else "1"
    else:
        text = text.split(":")[-1]
    return _count(text)


def _options(words: list[str]) -> Iterator[tuple[str, str | None]]:
    """(option, value) of each ``--opt=value`` / ``--opt value`` / ``-N2`` / ``-N 2``."""
    position = 0
    while position < len(words):
        word = words[position]
        position += 1
        if not word.startswith("-"):
            continue
        if "=" in word:
            option, _, value = word.partition("=")
            yield option, value
        elif len(word) > 2 and word[1] != "-" and word[:2] in ("-N",):
            yield word[:2], word[2:]
        elif position < len(words) and not words[position].startswith("-"):
            yield word, words[position]
            position += 1
        else:
            yield word, None


def _allocated(words: list[str], line: int, text: str) -> dict[str, Stated]:
    """What the options of one ``#SBATCH`` line or ``srun`` command allocate."""
    found: dict[str, Stated] = {}
    for option, value in _options(words):
        if value is None:
            continue
        if option in NODE_OPTIONS:
            found["nodes"] = Stated(_count(value), line, text)
        elif option in TASK_OPTIONS:
            found["tasks_per_node"] = Stated(_count(value), line, text)
        elif option in GPU_OPTIONS:
            count = _gpu_count(option, value)
            if count is not None:
                found["gpus_per_node"] = Stated(count, line, text)
    return found


def _torchrun_start(words: list[str]) -> int | None:
    """Where a ``torchrun`` / ``python -m torch.distributed.run`` command starts."""
    for position, word in enumerate(words):
        name = word.rsplit("/", 1)[-1]
        if name == "torchrun":
            return position
        if word == "-m" and position + 1 < len(words) and words[position + 1] in TORCHRUN_MODULES:
            return position
    return None


def _runs_python(words: list[str]) -> bool:
    return any(w.rsplit("/", 1)[-1].startswith("python") or w.endswith(".py") for w in words)


def _launch(
    words: list[str], line: int, text: str, batch: bool, script: dict[str, Stated]
) -> Launch | None:
    """The launch a command line is, or None when it starts no Python training."""
    srun = next((i for i, w in enumerate(words) if w.rsplit("/", 1)[-1] == "srun"), None)
    torchrun = _torchrun_start(words)
    if torchrun is None and not _runs_python(words):
        return None
    allocation = dict(script)
    if srun is not None:
        end = torchrun if torchrun is not None and torchrun > srun else len(words)
        allocation.update(_allocated(words[srun + 1 : end], line, text))
    launcher = "srun" if srun is not None else "python"
    if torchrun is not None:
        launcher = "torchrun"
        for option, value in _options(words[torchrun + 1 :]):
            if value is None:
                continue
            if option in NPROC_OPTIONS:
                allocation["nproc_per_node"] = Stated(_count(value), line, text)
            elif option in NNODES_OPTIONS:
                allocation["nnodes"] = Stated(_count(value), line, text)
        if "--standalone" in words[torchrun + 1 :]:
            allocation["nnodes"] = Stated(1, line, text)
    options = dict(_options(words))
    return Launch(
        line=line,
        launcher=launcher,
        batch=batch,
        allocation=allocation,
        config_words=tuple(w.partition("=")[2] or w for w in words if "." in w or "/" in w),
        config_name=next((options[o] for o in CONFIG_NAME_OPTIONS if options.get(o)), None),
        config_path=next((options[o] for o in CONFIG_PATH_OPTIONS if options.get(o)), None),
        overrides=frozenset(
            m.group(1) for w in words if (m := OVERRIDE.match(w) or CLI_OVERRIDE.match(w))
        ),
    )


def launches(text: str) -> list[Launch]:
    """Every training command of a launch script, in order."""
    script: dict[str, Stated] = {}
    batch = False
    in_header = True
    found: list[Launch] = []
    for line, logical in _logical_lines(text):
        stripped = logical.strip()
        directive = _SBATCH.match(stripped)
        if directive is not None:
            if in_header:
                batch = True
                options = _split(directive.group(1)) or []
                script.update(_allocated(options, line, stripped))
            continue
        if not stripped or stripped.startswith("#"):
            continue
        in_header = False
        words = _split(stripped)
        if not words:
            continue
        launch = _launch(words, line, stripped, batch, script)
        if launch is not None:
            found.append(launch)
    return found
