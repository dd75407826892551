"""Whether the configs a project ships train in fp16: DeepSpeed configs, and accelerate's
mixed precision.

A DeepSpeed engine with fp16 and dynamic loss scaling checks its gradients for overflow
in every ``step()``: the flag is all-reduced and read on the host, so the step ends with
the device queue drained. Which config a run reads is a launch argument the code does
not show (``--deepspeed_config``, a YAML key): the project's configs are read instead,
JSON files and YAML sections alike (``config.deepspeed.deepspeed_configs``). The answer
only silences a stall report, so any config that enables fp16 is enough; a project
whose DeepSpeed configs all run bf16 or fp32, or that ships none, says no.

accelerate under fp16 mixed precision steps each prepared optimizer through a
``GradScaler``, which reads its inf/NaN check on the host: ``ships_fp16_mixed_precision``
says whether a config or launch script of the project sets ``mixed_precision`` to fp16
(``mixed_precision: fp16`` in a YAML or JSON file, ``--mixed_precision fp16`` in a
shell script): an accelerate launch config decides only where the code gives the
``Accelerator`` no option of its own (an argument wins over the launch config).

The answers rest on files outside the module, so a module's cached findings must not
outlive them: ``ShippedPrecision`` keeps each answer it gave (``answers``), the engine
stores them with the module's outcome and asks ``answers_hold`` before a cached outcome
is used again. The project's configs are read once per run (``run_memo``: a language
server's next request reads the edited configs).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ddplint.config.accelerate import ACCELERATE_NEEDLES
from ddplint.config.deepspeed import DEEPSPEED_NEEDLES, FP16_KEYS, deepspeed_configs
from ddplint.config.document import ConfigDocument
from ddplint.config.loader import load_documents
from ddplint.run_memo import remembered
from ddplint.source import SourceError, SourceFile, is_json

#: The files read: JSON and YAML (and, for the launch flags, shell scripts).
_SUFFIXES = (".json", ".yaml", ".yml")
_LAUNCH_SUFFIXES = (*_SUFFIXES, ".sh")
#: ``mixed_precision: fp16``, ``"mixed_precision": "fp16"``, ``--mixed_precision fp16``,
#: ``--mixed_precision=fp16``.
_MIXED_FP16 = re.compile(rb"""mixed_precision["']?\s*[:= ]\s*["']?fp16\b""")
#: Larger files are data, not configs.
_MAX_BYTES = 256_000
#: Folders never read (environments, caches, version control).
_SKIPPED = frozenset({"node_modules", "site-packages", "__pycache__", "venv"})
_NEEDLES = tuple(needle.encode() for needle in DEEPSPEED_NEEDLES)


def ships_fp16_deepspeed(project_root: str) -> bool:
    """Whether some DeepSpeed config under ``project_root`` enables fp16."""
    return remembered(("deepspeed", project_root), lambda: _finds_fp16_deepspeed(project_root))


def _finds_fp16_deepspeed(project_root: str) -> bool:
    for path in _config_files(Path(project_root), _SUFFIXES):
        try:
            raw = path.read_bytes()
        except OSError:
            continue
        if len(raw) > _MAX_BYTES or b"fp16" not in raw or not any(n in raw for n in _NEEDLES):
            continue
        if _enables_fp16(str(path), raw):
            return True
    return False


def _enables_fp16(path: str, raw: bytes) -> bool:
    try:
        source = SourceFile.decode(path, raw)
        roots = load_documents(source.text, json=is_json(path))
    except (SourceError, UnicodeDecodeError):
        return False
    return any(
        config.enabled_section(FP16_KEYS) is not None
        for index, root in enumerate(roots)
        for config in deepspeed_configs(ConfigDocument(root, index, source))
    )


def ships_fp16_mixed_precision(project_root: str, option_given: bool) -> bool:
    """Whether a config or launch script under ``project_root`` sets
    ``mixed_precision`` to fp16: with ``option_given`` (the code hands the Accelerator
    an option of its own, which wins over the launch config), a training config or a
    script's flag; else an accelerate launch config (``distributed_type``) or a
    launch flag."""
    return remembered(
        ("mixed", project_root, option_given),
        lambda: _finds_fp16_mixed_precision(project_root, option_given),
    )


def _finds_fp16_mixed_precision(project_root: str, option_given: bool) -> bool:
    for path in _config_files(Path(project_root), _LAUNCH_SUFFIXES):
        try:
            raw = path.read_bytes()
        except OSError:
            continue
        if len(raw) > _MAX_BYTES or not _MIXED_FP16.search(raw):
            continue
        launching = path.suffix != ".sh" and any(n.encode() in raw for n in ACCELERATE_NEEDLES)
        if path.suffix == ".sh" or launching is not option_given:
            return True
    return False


def _config_files(root: Path, suffixes: tuple[str, ...]) -> list[Path]:
    return remembered(("config files", root, suffixes), lambda: _walk(root, suffixes))


def _walk(root: Path, suffixes: tuple[str, ...]) -> list[Path]:
    found: list[Path] = []
    for folder, folders, files in os.walk(root):
        folders[:] = sorted(f for f in folders if not f.startswith(".") and f not in _SKIPPED)
        found.extend(Path(folder, name) for name in sorted(files) if name.endswith(suffixes))
    return found


#: The questions ``ShippedPrecision`` answers, as ``answers`` names them.
_DEEPSPEED = "deepspeed"
_MIXED_GIVEN = "mixed-given"
_MIXED_LAUNCH = "mixed-launch"
_CONFIG = "config:"


class ShippedPrecision:
    """The precision a project's configs show (``analysis.device_queue`` asks it, only
    where a step may check for overflow), with each answer it gave (``answers``)."""

    def __init__(self, project_root: str, module_path: str) -> None:
        self.project_root = project_root
        self.module_path = module_path
        #: Each question asked, by name, and the answer given.
        self.answers: dict[str, bool] = {}

    def deepspeed_fp16(self) -> bool:
        return self._answered(_DEEPSPEED, ships_fp16_deepspeed(self.project_root))

    def mixed_fp16(self, option_given: bool) -> bool:
        answer = ships_fp16_mixed_precision(self.project_root, option_given)
        return self._answered(_MIXED_GIVEN if option_given else _MIXED_LAUNCH, answer)

    def config_fp16(self, written: str) -> bool:
        return self._answered(_CONFIG + written, self._reads_fp16(written))

    def _answered(self, question: str, answer: bool) -> bool:
        self.answers[question] = answer
        return answer

    def _reads_fp16(self, written: str) -> bool:
        for folder in (Path(self.project_root), Path(self.module_path).parent):
            path = folder / written
            try:
                raw = path.read_bytes() if path.is_file() else None
            except OSError:
                raw = None
            if raw is not None and len(raw) <= _MAX_BYTES:
                return _enables_fp16(str(path), raw)
        return False


def answers_hold(project_root: str, module_path: str, answers: dict[str, bool]) -> bool:
    """Whether the project's configs still give ``answers`` (a cached outcome's, named
    as ``ShippedPrecision.answers`` names them)."""
    shipped = ShippedPrecision(project_root, module_path)
    for question, answer in answers.items():
        if question == _DEEPSPEED:
            now = shipped.deepspeed_fp16()
        elif question in (_MIXED_GIVEN, _MIXED_LAUNCH):
            now = shipped.mixed_fp16(question == _MIXED_GIVEN)
        elif question.startswith(_CONFIG):
            now = shipped.config_fp16(question.removeprefix(_CONFIG))
        else:  # a question this version does not ask: the outcome is another version's
            return False
        if now is not answer:
            return False
    return True
