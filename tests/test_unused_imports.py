"""Imports a fix leaves unused (``ddplint.code.edits.ast_unused_imports``): removed with
the code that held their only uses, kept when anything else still names them."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_unused_imports import orphaned_ast_import_edits
from ddplint.fix import apply_edits
from ddplint.settings import LintOptions
from ddplint.source import SourceFile

ROOT = Path(__file__).resolve().parent.parent


def _without_timeout(text: str) -> str:
    """The text with every ``timeout=`` argument's imports that only it used removed
    (the argument itself stays: only the import edits are applied)."""
    source = SourceFile.decode("example.py", text.encode())
    ctx = CodeContext(source, LintOptions(selected=(), project_root="."))
    assert ctx.ast_module is not None
    removed = [
        keyword
        for keyword in ast.walk(ctx.ast_module)
        if isinstance(keyword, ast.keyword) and keyword.arg == "timeout"
    ]
    return apply_edits(ctx.source, set(orphaned_ast_import_edits(ctx, removed).values()))


BODY = "\n\ndef f():\n    barrier(timeout=timedelta(1))\n"


@pytest.mark.parametrize(
    ("imports", "after"),
    [
        ("from datetime import timedelta\n", "\ndef f():\n"),
        ("import os\nfrom datetime import timedelta\n", "import os\n\n\ndef f():\n"),
        ("from datetime import date, timedelta\n", "from datetime import date\n\n\ndef f():\n"),
        (
            "from datetime import (\n    timedelta,\n    date,\n)\n",
            "from datetime import (\n    date,\n)\n\n\ndef f():\n",
        ),
        (
            '"""Mentions timedelta in prose."""\n\nfrom datetime import timedelta\n',
            '"""Mentions timedelta in prose."""\n\n\ndef f():\n',
        ),
    ],
)
def test_an_import_only_the_removed_code_uses_goes(imports: str, after: str) -> None:
    assert _without_timeout(imports + BODY) == after + "    barrier(timeout=timedelta(1))\n"


@pytest.mark.parametrize(
    "text",
    [
        "from datetime import timedelta\nT = timedelta(2)\n",  # used elsewhere
        "from datetime import timedelta\n__all__ = ['timedelta']\n",  # re-exported
        "from datetime import timedelta\nx: 'timedelta'\n",  # a string annotation
        "from datetime import timedelta\ndef timedelta_user(timedelta=None): ...\n",
        "try:\n    from datetime import timedelta\nexcept ImportError:\n    pass\n",
    ],
)
def test_an_import_something_else_names_stays(text: str) -> None:
    assert _without_timeout(text + BODY) == text + BODY


def test_ddp301_fixes_leave_no_unused_import() -> None:
    """ruff's F401 passes on every fixed DDP301 fixture (it failed before the fix removed
    the orphaned `timedelta` import)."""
    fixed = sorted(str(p) for p in (ROOT / "fixtures" / "rules" / "DDP301").glob("*.fixed.py"))
    assert len(fixed) >= 4
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--no-cache",
            "--isolated",
            "--select",
            "F401",
            *fixed,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
