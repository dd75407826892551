"""Style is kept by tools: ruff (lint + format) and mypy, as configured in pyproject.toml."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ["lint", "rules", "tests", "bench"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)


@pytest.mark.skipif(
    shutil.which("ruff") is None and not Path(sys.prefix, "bin", "ruff").exists(),
    reason="ruff not installed",
)
def test_ruff_check() -> None:
    result = _run(sys.executable, "-m", "ruff", "check", *SOURCES)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format() -> None:
    result = _run(sys.executable, "-m", "ruff", "format", "--check", *SOURCES)
    assert result.returncode == 0, result.stdout + result.stderr


def _import_tree(folder: Path) -> Path:
    """A tree in which the folders lint/ and rules/ stand under their import name
    ``ddplint`` (as setup.py maps them), made of links, for mypy to follow."""
    package = folder / "ddplint"
    package.mkdir()
    for entry in (ROOT / "lint").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    (package / "rules").symlink_to(ROOT / "rules")
    return folder


def test_mypy(tmp_path: Path) -> None:
    tree = _import_tree(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "-p", "ddplint", "--cache-dir", str(ROOT / ".mypy_cache")],
        cwd=tree,
        env={**os.environ, "MYPYPATH": str(tree)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


#: The engine's modules, each importing only those before it (``lint/engine/``).
ENGINE_FLOORS = (
    "selection",
    "suppressions",
    "triage",
    "per_file",
    "pool",
    "run_setup",
    "project_model",
    "run",
)


def _ddplint_imports(path: Path) -> set[str]:
    """Every ``ddplint.*`` module a file imports, at the top, in functions or for types."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.startswith("ddplint.")}


def test_engine_modules_import_only_downward() -> None:
    package = ROOT / "lint" / "engine"
    assert sorted(p.stem for p in package.glob("*.py") if p.stem != "__init__") == sorted(
        ENGINE_FLOORS
    )
    for floor, name in enumerate(ENGINE_FLOORS):
        engine = {
            module.split(".")[2]
            for module in _ddplint_imports(package / f"{name}.py")
            if module.startswith("ddplint.engine.")
        }
        above = engine - set(ENGINE_FLOORS[:floor])
        assert not above, f"engine/{name}.py imports {sorted(above)} from its floor or above"


def test_results_and_report_formats_do_not_import_the_engine() -> None:
    files = [ROOT / "lint" / "results.py", *sorted((ROOT / "lint" / "report").glob("*.py"))]
    for path in files:
        engine = {m for m in _ddplint_imports(path) if m.split(".")[:2] == ["ddplint", "engine"]}
        assert not engine, f"{path.relative_to(ROOT)} imports {sorted(engine)}"
    loaded = _run(
        sys.executable,
        "-c",
        "import sys, ddplint.report, ddplint.baseline; "
        "print(sorted(m for m in sys.modules if m.startswith(('ddplint.engine', "
        "'ddplint.fixer'))))",
    )
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == "[]", loaded.stdout
