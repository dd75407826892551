"""Settings: ``[tool.ddplint]`` in pyproject.toml merged with the command line, and
rule selection (select / extend-select / ignore with prefixes and ``ALL``, in layers:
the settings file's, then the command line's, as ruff resolves them)."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from ddplint.build_identity import build_identity
from ddplint.source import FileTooLarge, read_source_bytes

DEFAULT_MAX_FILE_SIZE = 2 * 1024 * 1024
#: The largest ``max-file-size`` accepted (1 GiB): beyond it a file is never worth reading.
MAX_FILE_SIZE_LIMIT = 1024 * 1024 * 1024
#: A settings file larger than this (1 MiB) is refused unread (``/dev/zero``, a huge file).
MAX_CONFIG_BYTES = 1024 * 1024
DEFAULT_EXCLUDE = (
    ".git",
    ".git-rewrite",
    ".hg",
    ".svn",
    ".bzr",
    ".venv",
    "venv",
    ".env",
    "env",
    ".direnv",
    ".pyenv",
    "__pycache__",
    ".mypy_cache",
    ".pytest_cache",
    ".pytype",
    ".ruff_cache",
    ".ddplint_cache",
    ".tox",
    ".nox",
    ".eggs",
    "*.egg-info",
    ".pants.d",
    "buck-out",
    "build",
    "_build",
    "dist",
    "node_modules",
    "site-packages",
    "__pypackages__",
    # Jupyter's autosaved copies of notebooks and of the files its editor opened: never
    # the code that runs, and a second report of every finding in the original.
    ".ipynb_checkpoints",
    ".vscode",
)
KNOWN_KEYS = (
    "select",
    "extend-select",
    "ignore",
    "per-file-ignores",
    "exclude",
    "extend-exclude",
    "torch-version",
    "max-file-size",
    "preview",
    "force-exclude",
)


class SettingsError(Exception):
    """A bad setting: unknown key, unknown rule code, wrong type. Exit code 2."""


@dataclass(frozen=True)
class RuleSelection:
    """One layer of rule selection: the settings file's, or the command line's.

    A layer with ``select`` starts afresh; one without it adds to and removes from what
    the layers before it enabled."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return self.select is not None or bool(self.extend_select or self.ignore)


@dataclass(frozen=True)
class Settings:
    """Everything that shapes a run, after merging the config file and the CLI."""

    project_root: Path
    config_file: Path | None = None
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    torch_version: str | None = None
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    preview: bool = False
    #: Apply the excludes to files named one by one too (the pre-commit hook's way).
    force_exclude: bool = False
    #: ``--select`` / ``--extend-select`` / ``--ignore``, applied after the file's.
    command_line: RuleSelection = RuleSelection()

    @property
    def file_selection(self) -> RuleSelection:
        """The settings file's ``select`` / ``extend-select`` / ``ignore``."""
        return RuleSelection(self.select, self.extend_select, self.ignore)

    @property
    def all_excludes(self) -> tuple[str, ...]:
        return self.exclude + self.extend_exclude


@dataclass(frozen=True)
class LintOptions:
    """What a worker needs to lint one file; picklable and part of the cache key."""

    selected: tuple[str, ...]
    project_root: str
    torch_version: str | None = None
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    #: Project-wide facts rules may read (e.g. the torch floor found in requirements).
    facts: tuple[tuple[str, str], ...] = field(default=())

    def fact(self, key: str) -> str | None:
        return dict(self.facts).get(key)

    def fingerprint(self) -> str:
        payload = json.dumps(
            [build_identity(), self.selected, self.torch_version, self.max_file_size, self.facts]
        )
        return hashlib.blake2b(payload.encode(), digest_size=12).hexdigest()


def read_toml(path: Path) -> dict[str, Any]:
    """The TOML document at ``path``; a ``SettingsError`` saying why when it cannot be had.

    Read like a linted file (no blocking on a FIFO, regular files only, at most
    ``MAX_CONFIG_BYTES``), so a settings path never hangs or exhausts the run.
    """
    try:
        raw = read_source_bytes(path, MAX_CONFIG_BYTES)
    except FileTooLarge as exc:
        raise SettingsError(
            f"cannot read {path}: {exc.size} bytes, more than a settings file may hold "
            f"({MAX_CONFIG_BYTES})"
        ) from None
    except OSError as exc:
        raise SettingsError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as exc:
        raise SettingsError(f"{path} is not valid TOML: {exc}") from None


def ddplint_table(data: Mapping[str, Any], path: Path) -> Mapping[str, Any] | None:
    """``[tool.ddplint]`` of a parsed pyproject.toml, None when it has none.

    A ``tool`` or ``tool.ddplint`` that is not a table is a ``SettingsError``.
    """
    tool = data.get("tool")
    if tool is None:
        return None
    if not isinstance(tool, dict):
        raise SettingsError(f"`tool` in {path} must be a table, got {_shown(tool)}")
    table = tool.get("ddplint")
    if table is not None and not isinstance(table, dict):
        raise SettingsError(f"`tool.ddplint` in {path} must be a table, got {_shown(table)}")
    return table


def find_config(start: Path) -> Path | None:
    """The nearest pyproject.toml with a ``[tool.ddplint]`` table, searching upward.

    A pyproject.toml met on the way that cannot be read or parsed is a ``SettingsError``
    (its settings must not silently give way to a parent's), as with ``--config``.
    """
    start = start.resolve()
    directory = start if os.path.isdir(start) else start.parent
    for candidate_dir in (directory, *directory.parents):
        candidate = candidate_dir / "pyproject.toml"
        if os.path.exists(candidate) and ddplint_table(read_toml(candidate), candidate) is not None:
            return candidate
    return None


def find_project_root(start: Path) -> Path:
    """The nearest directory with pyproject.toml or .git; where there is none, the
    working directory when ``start`` lies inside it (``check .`` and ``check a/b.py``
    from one place see one project, as ruff takes the working directory for its
    root), else ``start``'s own directory."""
    start = start.resolve()
    directory = start if os.path.isdir(start) else start.parent
    for candidate in (directory, *directory.parents):
        if os.path.exists(candidate / "pyproject.toml") or os.path.exists(candidate / ".git"):
            return candidate
    try:
        working = Path.cwd().resolve()
    except OSError:  # the working directory was removed
        return directory
    return working if directory == working or working in directory.parents else directory


def _str_list(key: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list):
        raise SettingsError(f"`{key}` must be a list of strings, got {_shown(value)}")
    if not all(isinstance(v, str) for v in value):
        raise SettingsError(f"`{key}` must be a list of strings, got {_shown(value)}")
    return tuple(value)


def load_settings(
    config_file: Path | None, start: Path, overrides: Mapping[str, Any] | None = None
) -> Settings:
    """Read ``[tool.ddplint]`` from ``config_file`` (or the nearest one above ``start``),
    with ``overrides`` (``--config KEY=VALUE``) replacing the keys they name."""
    if config_file is None:
        config_file = find_config(start)
    if config_file is None:
        root = find_project_root(start)
        if not overrides:
            return Settings(project_root=root)
        return settings_from_table(overrides, None, root, "--config")
    data = read_toml(config_file)
    table = ddplint_table(data, config_file) or {}
    if config_file.name != "pyproject.toml" and not table:
        table = data
    return settings_from_table(
        {**table, **(overrides or {})},
        config_file,
        config_file.parent.resolve(),
        f"[tool.ddplint] of {config_file}" + (" or --config" if overrides else ""),
    )


def parse_override(text: str) -> dict[str, Any]:
    """``--config "ignore = ['DDP201']"``: one TOML ``KEY = VALUE`` of ``[tool.ddplint]``."""
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(
            f"--config {text!r} is neither a file nor a TOML `KEY = VALUE` ({exc})"
        ) from None
    if len(parsed) != 1:
        raise SettingsError(f"--config {text!r} must set exactly one key, as `KEY = VALUE`")
    return parsed


def settings_from_table(
    table: Mapping[str, Any], config_file: Path | None, project_root: Path, origin: str
) -> Settings:
    """Settings from the keys of a ``[tool.ddplint]`` table; ``origin`` names it in errors."""
    unknown = sorted(set(table) - set(KNOWN_KEYS))
    if unknown:
        valid = ", ".join(KNOWN_KEYS)
        raise SettingsError(f"unknown key(s) {', '.join(unknown)} in {origin}; valid keys: {valid}")
    kwargs: dict[str, Any] = {"project_root": project_root, "config_file": config_file}
    if "select" in table:
        kwargs["select"] = _str_list("select", table["select"])
    for key in ("extend-select", "ignore", "exclude", "extend-exclude"):
        if key in table:
            kwargs[key.replace("-", "_")] = _str_list(key, table[key])
    if "per-file-ignores" in table:
        raw = table["per-file-ignores"]
        if not isinstance(raw, dict):
            raise SettingsError("`per-file-ignores` must be a table of glob = [codes]")
        kwargs["per_file_ignores"] = tuple(
            (glob, _str_list(f"per-file-ignores.{glob}", codes)) for glob, codes in raw.items()
        )
    if "torch-version" in table:
        version = table["torch-version"]
        if not isinstance(version, str) or not _looks_like_version(version):
            raise SettingsError(
                f'`torch-version` must be a version string like "2.4", got {_shown(version)}'
            )
        kwargs["torch_version"] = version
    if "max-file-size" in table:
        size = table["max-file-size"]
        if (
            not isinstance(size, int)
            or isinstance(size, bool)
            or not 0 < size <= MAX_FILE_SIZE_LIMIT
        ):
            raise SettingsError(
                f"`max-file-size` must be a number of bytes from 1 to {MAX_FILE_SIZE_LIMIT}, "
                f"got {_shown(size)}"
            )
        kwargs["max_file_size"] = size
    for key in ("preview", "force-exclude"):
        if key in table:
            if not isinstance(table[key], bool):
                raise SettingsError(f"`{key}` must be true or false")
            kwargs[key.replace("-", "_")] = table[key]
    return Settings(**kwargs)


def _shown(value: Any) -> str:
    """``repr(value)`` cut to one short line for a message."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _looks_like_version(text: str) -> bool:
    parts = text.split(".")
    return 1 <= len(parts) <= 3 and all(p.isdigit() for p in parts)


def _matches(selector: str, code: str) -> bool:
    return selector == "ALL" or code.startswith(selector)


def _specificity(selector: str) -> int:
    return 0 if selector == "ALL" else len(selector)


class RuleInfo(Protocol):
    """What selecting rules reads of a rule: a rule class, or its catalogue entry."""

    @property
    def name(self) -> str: ...

    @property
    def default_enabled(self) -> bool: ...


def validate_selectors(
    selectors: Iterable[str], rules: Mapping[str, RuleInfo], origin: str
) -> None:
    """Every selector must match at least one rule code."""
    for selector in selectors:
        if not selector.strip():
            raise SettingsError(
                f"empty rule selector in {origin}; name a rule code, a prefix of one, or ALL"
            )
        if selector != "ALL" and not any(code.startswith(selector) for code in rules):
            raise SettingsError(
                f"unknown rule selector `{selector}` in {origin}{did_you_mean(selector, rules)}; "
                f"valid codes: {', '.join(rules)} (or a prefix of one, or ALL)"
            )


def did_you_mean(text: str, rules: Mapping[str, RuleInfo]) -> str:
    """`` (did you mean DDP201?)`` for a mistyped code or a rule's name, else ``""``."""
    from difflib import get_close_matches  # a mistyped code only

    by_name = {rule.name: code for code, rule in rules.items()}
    wanted = text.strip().lower()
    if wanted in by_name:
        return f" (that is the name of {by_name[wanted]}; rules are selected by code)"
    close = _closest_codes(text.strip().upper(), list(rules))
    close = close or [by_name[name] for name in get_close_matches(wanted, list(by_name), n=1)]
    return f" (did you mean {close[0]}?)" if close else ""


def _closest_codes(typed: str, codes: list[str]) -> list[str]:
    """The code fewest typing edits away from ``typed`` (at most two), first in code
    order on a tie: ``DDP2O1`` -> ``DDP201``, ``DDP2011`` -> ``DDP201``."""
    distances = {code: _edit_distance(typed, code) for code in codes}
    best = min(distances.values(), default=3)
    return [min(c for c, d in distances.items() if d == best)] if best <= 2 else []


def _edit_distance(a: str, b: str) -> int:
    """Levenshtein distance: insertions, deletions and substitutions."""
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, 1):
        current = [i]
        for j, char_b in enumerate(b, 1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b))
            )
        previous = current
    return previous[-1]


def select_rules(settings: Settings, rules: Mapping[str, RuleInfo]) -> tuple[str, ...]:
    """Rule codes enabled by the settings: the default set, then the settings file's
    layer, then the command line's (so ``--select DDP201`` beats the file's ``ignore``).

    Within a layer the most specific matching selector decides each code (``ignore``
    wins a tie). A prefix or ``ALL`` turns on only default rules unless ``preview`` is
    set; an exact code turns on any rule.
    """
    layers = (settings.file_selection, settings.command_line)
    for layer in layers:
        validate_selectors(layer.select or (), rules, "select")
        validate_selectors(layer.extend_select, rules, "extend-select")
        validate_selectors(layer.ignore, rules, "ignore")
    for _, codes in settings.per_file_ignores:
        validate_selectors(codes, rules, "per-file-ignores")
    enabled = {code for code, rule in rules.items() if rule.default_enabled}
    for layer in layers:
        enabled = _apply_layer(layer, enabled, rules, settings.preview)
    return tuple(code for code in rules if code in enabled)


def _apply_layer(
    layer: RuleSelection, enabled: set[str], rules: Mapping[str, RuleInfo], preview: bool
) -> set[str]:
    """The codes enabled after one layer, given those enabled before it."""
    after = set()
    for code, rule in rules.items():
        best: tuple[int, bool] | None = None  # (specificity, enabled)
        if layer.select is None:
            best = (-1, code in enabled)
        for selector in (*(layer.select or ()), *layer.extend_select):
            if _matches(selector, code):
                allowed = selector == code or rule.default_enabled or preview
                candidate = (_specificity(selector), allowed)
                if allowed and (best is None or candidate[0] >= best[0]):
                    best = candidate
        for selector in layer.ignore:
            if _matches(selector, code):
                candidate = (_specificity(selector), False)
                if best is None or candidate[0] >= best[0]:
                    best = candidate
        if best is not None and best[1]:
            after.add(code)
    return after


def ignored_for_path(settings: Settings, relative_path: str) -> frozenset[str]:
    """Codes ``per-file-ignores`` switches off for this path (prefixes allowed)."""
    ignored: set[str] = set()
    name = relative_path.rsplit("/", 1)[-1]
    for glob, codes in settings.per_file_ignores:
        if fnmatch.fnmatchcase(relative_path, glob) or fnmatch.fnmatchcase(name, glob):
            ignored.update(codes)
    return frozenset(ignored)
