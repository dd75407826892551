"""Style is kept by tools: ruff (lint + format) and mypy, as configured in pyproject.toml."""

from __future__ import annotations

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
