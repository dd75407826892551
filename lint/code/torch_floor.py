"""The oldest torch a project admits: its "torch floor".

Read once per run, in the main process, from the project's own declarations:
``pyproject.toml`` (``project.dependencies``, ``project.optional-dependencies``,
``dependency-groups``, Poetry tables), ``setup.cfg`` (``install_requires``,
``extras_require``) and ``requirements*.txt`` (also under ``requirements/``). Nothing is
imported or executed (``setup.py`` is never read). The ``torch-version`` setting wins
over all of them. When several declarations bound torch from below, the lowest bound is
the floor: the project claims to work there.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

#: ``LintOptions.facts`` key: where the torch version came from, in words.
TORCH_VERSION_SOURCE = "torch-version-source"
#: Distribution names, normalised, whose floor ``find_floor`` reads.
TORCH = frozenset({"torch", "pytorch"})  # ``pytorch`` in conda environment files
LIGHTNING = frozenset({"lightning", "pytorch-lightning"})

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$", re.S)
_CLAUSE = re.compile(r"^\s*(===|==|~=|>=|<=|!=|>|<)\s*v?([0-9][0-9A-Za-z.*+!_-]*)\s*$")
_POETRY_CLAUSE = re.compile(r"^\s*(\^|~(?!=)|===|==|~=|>=|<=|!=|>|<)?\s*v?([0-9][0-9.*]*)")
_RELEASE = re.compile(r"^([0-9]+(?:\.[0-9]+)*)")
_LOWER_BOUNDS = frozenset({">=", ">", "==", "===", "~=", "^", "~", ""})


@dataclass(frozen=True)
class TorchFloor:
    """The lowest torch version the project admits (None: unknown) and where it says so."""

    version: str | None
    source: str

    def facts(self) -> tuple[tuple[str, str], ...]:
        return ((TORCH_VERSION_SOURCE, self.source),)


def version_tuple(version: str) -> tuple[int, ...]:
    """``(2, 1, 0)`` for ``"2.1.0+cu121"``; ``()`` when there is no release number."""
    match = _RELEASE.match(version.strip().lstrip("v"))
    return tuple(int(part) for part in match.group(1).split(".")) if match else ()


def at_least(version: str, minimum: tuple[int, ...]) -> bool:
    """Whether ``version`` is ``minimum`` or newer (missing parts count as zero)."""
    have = version_tuple(version)
    width = max(len(have), len(minimum))
    return have + (0,) * (width - len(have)) >= minimum + (0,) * (width - len(minimum))


def requirement_floor(requirement: str, packages: frozenset[str] = TORCH) -> str | None:
    """The lower bound a PEP 508 requirement puts on one of ``packages``: ``"2.1"`` for
    ``torch>=2.1,<3``; ``""`` when it names the package without a lower bound; None when
    it names another package."""
    match = _NAME.match(requirement.split(";", 1)[0])
    if match is None or _normalise(match.group(1)) not in packages:
        return None
    spec = match.group(3).strip()
    if spec.startswith("@"):
        return ""
    spec = spec.strip("()")
    bounds = []
    for clause in filter(None, (c.strip() for c in spec.split(","))):
        parsed = _CLAUSE.match(clause)
        if parsed and parsed.group(1) in _LOWER_BOUNDS:
            bounds.append(parsed.group(2))
    return _highest(bounds)


#: Fact key: where the project pins Lightning below 2.1 (absent: it does not).
LIGHTNING_BEFORE_2_1 = "lightning-before-2.1"


def lightning_facts(root: Path) -> tuple[tuple[str, str], ...]:
    """Facts on the project's Lightning for the rules: Trainer.save_checkpoint only
    synchronises (ends in a barrier) from Lightning 2.1."""
    where = admits_only_below(root, LIGHTNING, (2, 1))
    return ((LIGHTNING_BEFORE_2_1, where),) if where else ()


def admits_only_below(root: Path, packages: frozenset[str], limit: tuple[int, ...]) -> str | None:
    """Where the project pins ``packages`` below ``limit`` (``pytorch-lightning==1.4.2``,
    ``lightning<2.1``), when every requirement on them that it declares does; else None."""
    pins = [
        (where, requirement)
        for where, requirement in _declared_requirements(root)
        if requirement_floor(requirement, packages) is not None
    ]
    if not pins or not all(_ceiling_below(requirement, limit) for _, requirement in pins):
        return None
    where, requirement = pins[0]
    return f"{where}: `{requirement.strip()}`"


def _ceiling_below(requirement: str, limit: tuple[int, ...]) -> bool:
    match = _NAME.match(requirement.split(";", 1)[0])
    spec = match.group(3).strip().strip("()") if match else ""
    for clause in filter(None, (c.strip() for c in spec.split(","))):
        parsed = _CLAUSE.match(clause)
        if parsed is None or "*" in parsed.group(2):
            continue
        operator, version = parsed.group(1), version_tuple(parsed.group(2))
        if operator in ("==", "===", "<=") and not at_least(parsed.group(2), limit):
            return True
        if operator == "<" and version <= limit:
            return True
        if operator == "~=" and len(version) >= 3 and version[:2] < limit[:2]:
            return True
    return False


def poetry_floor(constraint: str) -> str:
    """The lower bound of a Poetry constraint (``^2.1``, ``~2.1``, ``>=2.1,<3``,
    ``2.1.*``); ``""`` for ``*`` or no lower bound."""
    bounds = []
    for clause in re.split(r"[,\s]+(?=[\^~=<>!0-9])", constraint.split("||")[0].strip()):
        parsed = _POETRY_CLAUSE.match(clause)
        if parsed and (parsed.group(1) or "") in _LOWER_BOUNDS:
            bounds.append(parsed.group(2))
    return _highest(bounds)


def _highest(bounds: list[str]) -> str:
    cleaned = [b.rstrip(".*") for b in bounds if version_tuple(b)]
    return max(cleaned, key=version_tuple) if cleaned else ""


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def find_torch_floor(
    root: Path, setting: str | None = None, setting_origin: str | None = None
) -> TorchFloor:
    """The torch floor of the project at ``root``; ``setting`` (``torch-version``) wins."""
    if setting:
        where = f" in {setting_origin}" if setting_origin else ""
        return TorchFloor(setting, f"the `torch-version` setting{where}")
    return find_floor(root, TORCH, "torch")


def find_floor(root: Path, packages: frozenset[str], label: str) -> TorchFloor:
    """The lowest version of ``packages`` the project at ``root`` admits, from
    pyproject.toml, setup.cfg, requirements files and conda environment files."""
    found: list[tuple[str, str]] = []  # (floor or "", where)
    for where, requirement in _declared_requirements(root):
        floor = requirement_floor(requirement, packages)
        if floor is not None:
            found.append((floor, f"{where}: `{requirement.strip()}`"))
    for where, name, constraint in _poetry_constraints(root):
        if name in packages:
            found.append((poetry_floor(constraint), f'{where}: {name} = "{constraint}"'))
    bounded = [(floor, where) for floor, where in found if floor]
    if bounded:
        floor, where = min(bounded, key=lambda item: version_tuple(item[0]))
        return TorchFloor(floor, where)
    if found:
        return TorchFloor(None, f"{found[0][1]} sets no lower bound")
    return TorchFloor(None, f"no {label} requirement found")


def _declared_requirements(root: Path) -> Iterator[tuple[str, str]]:
    """(where, PEP 508 requirement) from pyproject.toml, setup.cfg, requirements files."""
    pyproject = _load_toml(root / "pyproject.toml")
    if pyproject is not None:
        project = _table(pyproject.get("project"))
        for requirement in _strings(project.get("dependencies")):
            yield "pyproject.toml [project.dependencies]", requirement
        for extra, requirements in _table(project.get("optional-dependencies")).items():
            for requirement in _strings(requirements):
                yield f"pyproject.toml [project.optional-dependencies.{extra}]", requirement
        for group, requirements in _table(pyproject.get("dependency-groups")).items():
            for requirement in _strings(requirements):
                yield f"pyproject.toml [dependency-groups.{group}]", requirement
    yield from _setup_cfg_requirements(root / "setup.cfg")
    yield from _conda_requirements(root)
    for path in _requirement_files(root):
        where = path.relative_to(root).as_posix()
        for requirement in _requirement_lines(path):
            yield where, requirement


def _poetry_constraints(root: Path) -> Iterator[tuple[str, str, str]]:
    pyproject = _load_toml(root / "pyproject.toml")
    if pyproject is None:
        return
    poetry = _table(_table(pyproject.get("tool")).get("poetry"))
    tables = [("tool.poetry.dependencies", poetry.get("dependencies"))]
    tables.append(("tool.poetry.dev-dependencies", poetry.get("dev-dependencies")))
    for group, body in _table(poetry.get("group")).items():
        tables.append((f"tool.poetry.group.{group}.dependencies", _table(body).get("dependencies")))
    for name, table in tables:
        for key, value in _table(table).items():
            specs = value if isinstance(value, list) else [value]
            for spec in specs:
                constraint = spec.get("version", "") if isinstance(spec, dict) else spec
                if isinstance(constraint, str):
                    yield f"pyproject.toml [{name}]", _normalise(key), constraint


#: A package line of a conda environment file (``- pytorch-lightning==1.4.2`` under
#: ``pip:``, or conda's own ``- pytorch-lightning=1.4.2``).
_CONDA_LINE = re.compile(r"^\s*-\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(={1,2}|>=|~=)\s*([0-9][^\s#]*)")


def _conda_requirements(root: Path) -> Iterator[tuple[str, str]]:
    """Requirements pinned in ``environment.yaml`` / ``environment.yml`` at the root."""
    for name in ("environment.yaml", "environment.yml"):
        path = root / name
        try:
            text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
        except OSError:
            continue
        for line in _lines(text):
            match = _CONDA_LINE.match(line)
            if match:
                operator = "==" if match.group(2) == "=" else match.group(2)
                yield name, f"{match.group(1)}{operator}{match.group(3)}"


def _setup_cfg_requirements(path: Path) -> Iterator[tuple[str, str]]:
    if not path.is_file():
        return
    import configparser  # (its import compiles regular expressions: only when read)

    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, configparser.Error):
        return
    if parser.has_option("options", "install_requires"):
        for line in _lines(parser.get("options", "install_requires")):
            yield "setup.cfg [options] install_requires", line
    if parser.has_section("options.extras_require"):
        for extra, value in parser.items("options.extras_require"):
            for line in _lines(value):
                yield f"setup.cfg [options.extras_require] {extra}", line


def _requirement_files(root: Path) -> list[Path]:
    """``requirements*.txt`` at the root and under ``requirements/``, each folder's
    ``requirements.txt`` first (it names the source when several files agree)."""
    files: list[Path] = []
    for folder, pattern in ((root, "requirements*.txt"), (root / "requirements", "*.txt")):
        found = sorted(folder.glob(pattern)) if folder.is_dir() else []
        files += sorted(found, key=lambda path: path.name != "requirements.txt")
    return [f for f in files if f.is_file()]


def _requirement_lines(path: Path) -> Iterator[str]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    for line in _lines(text):
        if not line.startswith(("-", "http:", "https:", "git+", "file:")):
            yield line


def _lines(text: str) -> Iterable[str]:
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip()
        if line and not line.startswith("#"):
            yield line


def _load_toml(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None


def _table(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
