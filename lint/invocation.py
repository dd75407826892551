"""What a command line asks for, shared by every command (check, verify, server): the
settings (the config file with the command line on top), the options workers get, and
the exit codes."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from ddplint.code.torch_floor import find_torch_floor, lightning_facts
from ddplint.rules.catalogue import CATALOGUE
from ddplint.settings import (
    LintOptions,
    RuleSelection,
    Settings,
    SettingsError,
    load_settings,
    parse_override,
    select_rules,
)

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def split_codes(values: tuple[str, ...]) -> tuple[str, ...]:
    """``--select A,B --select C`` -> (A, B, C)."""
    return tuple(
        c.strip().upper() if c.strip() != "ALL" else "ALL"
        for v in values
        for c in v.split(",")
        if c.strip()
    )


def split_config_values(values: tuple[str, ...]) -> tuple[str | None, dict[str, Any]]:
    """``--config`` values (ruff's form): a settings file (at most one), or overrides
    ``KEY = VALUE`` of ``[tool.ddplint]`` in TOML, the later winning."""
    path: str | None = None
    overrides: dict[str, Any] = {}
    for value in values:
        if os.path.exists(value):
            if path is not None:
                raise SettingsError(f"--config names two settings files: {path} and {value}")
            path = value
        elif "=" in value:
            overrides.update(parse_override(value))
        else:
            raise SettingsError(
                f"--config {value!r}: no such file, and not a `KEY = VALUE` override"
            )
    return path, overrides


def build_settings(
    paths: tuple[str, ...],
    config: str | None,
    select: tuple[str, ...],
    extend_select: tuple[str, ...],
    ignore: tuple[str, ...],
    preview: bool,
    force_exclude: bool = False,
    overrides: dict[str, Any] | None = None,
) -> Settings:
    """File settings (with ``--config`` overrides), with the command line on top: its
    rule selection is a layer of its own, after the file's (``--select`` beats the
    file's ``ignore``, as in ruff)."""
    start = Path(paths[0]) if paths else Path.cwd()
    if not os.path.exists(start):  # missing, or below a folder that cannot be read
        start = Path.cwd()
    settings = load_settings(Path(config) if config else None, start, overrides)
    changes: dict[str, object] = {}
    command_line = RuleSelection(
        split_codes(select) or None, split_codes(extend_select), split_codes(ignore)
    )
    if command_line:
        changes["command_line"] = command_line
    if preview:
        changes["preview"] = True
    if force_exclude:
        changes["force_exclude"] = True
    if changes:
        settings = replace(settings, **changes)  # type: ignore[arg-type]
    return settings


def empty_selection_warning(settings: Settings) -> str:
    """Why no rule runs: the warning printed instead of a false all-clear."""
    where = f"the settings in {settings.config_file}" if settings.config_file else "the defaults"
    return (
        f"no rule is selected (select, extend-select and ignore of {where} and the command "
        "line leave none): nothing was checked; `ddplint check --show-settings` shows them"
    )


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
