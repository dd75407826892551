"""What a command line asks for, shared by every command (check, verify, server): the
settings (the config file with the command line on top), the options workers get, and
the exit codes."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from ddplint.code.torch_floor import find_torch_floor, lightning_facts
from ddplint.rules.catalogue import CATALOGUE
from ddplint.settings import LintOptions, Settings, load_settings, select_rules

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def split_codes(values: tuple[str, ...]) -> tuple[str, ...]:
    """``--select A,B --select C`` -> (A, B, C)."""
    return tuple(
        c.strip().upper() if c.strip() != "ALL" else "ALL"
        for v in values
        for c in v.split(",")
        if c.strip()
    )


def build_settings(
    paths: tuple[str, ...],
    config: str | None,
    select: tuple[str, ...],
    extend_select: tuple[str, ...],
    ignore: tuple[str, ...],
    preview: bool,
    force_exclude: bool = False,
) -> Settings:
    """File settings, with the command line on top."""
    start = Path(paths[0]) if paths else Path.cwd()
    if not os.path.exists(start):  # missing, or below a folder that cannot be read
        start = Path.cwd()
    settings = load_settings(Path(config) if config else None, start)
    changes: dict[str, object] = {}
    if select:
        changes["select"] = split_codes(select)
    if extend_select:
        changes["extend_select"] = settings.extend_select + split_codes(extend_select)
    if ignore:
        changes["ignore"] = settings.ignore + split_codes(ignore)
    if preview:
        changes["preview"] = True
    if force_exclude:
        changes["force_exclude"] = True
    if changes:
        settings = replace(settings, **changes)  # type: ignore[arg-type]
    return settings


def build_options(settings: Settings) -> LintOptions:
    config_name = settings.config_file.name if settings.config_file else None
    floor = find_torch_floor(settings.project_root, settings.torch_version, config_name)
    return LintOptions(
        selected=select_rules(settings, CATALOGUE),
        project_root=str(settings.project_root),
        torch_version=floor.version,
        max_file_size=settings.max_file_size,
        facts=floor.facts() + lightning_facts(settings.project_root),
    )
