"""Import and argument edits that fixes build on, applied to real text."""

from __future__ import annotations

import ast

import libcst as cst
import pytest

from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import ast_import_edit, ast_node_text, replace_ast_node
from ddplint.finding import Edit
from ddplint.fix import apply_edits
from ddplint.settings import LintOptions
from ddplint.source import SourceFile


def _context(text: str) -> CodeContext:
    source = SourceFile.decode("example.py", text.encode())
    return CodeContext.parse(source, LintOptions(selected=(), project_root="."))


def _apply(ctx: CodeContext, edit: Edit | None) -> str:
    return apply_edits(ctx.source, [edit]) if edit is not None else ctx.source.text


@pytest.mark.parametrize(
    ("text", "expression", "after"),
    [
        (
            "from datetime import timedelta as td\nx = 1\n",
            "td",
            "from datetime import timedelta as td\nx = 1\n",
        ),
        ("import datetime as dt\n", "dt.timedelta", "import datetime as dt\n"),
        (
            '"""Doc."""\nfrom __future__ import annotations\n\nimport os\n\nx = 1\n',
            "timedelta",
            '"""Doc."""\nfrom __future__ import annotations\n\nimport os\n'
            "from datetime import timedelta\n\nx = 1\n",
        ),
        (
            "from datetime import datetime\n",
            "timedelta",
            "from datetime import datetime, timedelta\n",
        ),
        (
            "#!/usr/bin/env python\n# comment\nx = 1\n",
            "timedelta",
            "#!/usr/bin/env python\n# comment\nfrom datetime import timedelta\nx = 1\n",
        ),
        ("import os", "timedelta", "import os\nfrom datetime import timedelta"),
        (
            "timedelta = 5\nimport os\n",
            "datetime.timedelta",
            "import datetime\ntimedelta = 5\nimport os\n",
        ),
        (
            "import os\r\nx = 1\r\n",
            "timedelta",
            "import os\r\nfrom datetime import timedelta\r\nx = 1\r\n",
        ),
    ],
)
def test_import_edit(text: str, expression: str, after: str) -> None:
    ctx = _context(text)
    found = ast_import_edit(ctx, "datetime", "timedelta")
    assert found is not None
    assert found[0] == expression
    assert _apply(ctx, found[1]) == after


def test_import_edit_gives_up_when_both_names_are_taken() -> None:
    ctx = _context("from datetime import datetime\ntimedelta = 5\n")
    assert ast_import_edit(ctx, "datetime", "timedelta") is None


def _call(ctx: CodeContext) -> cst.Call:
    return ctx.index.nodes(cst.Call)[0]


@pytest.mark.parametrize(
    ("text", "after"),
    [
        ("loader(persistent_workers=True)\n", "loader(persistent_workers=False)\n"),
        # columns count characters, not the UTF-8 bytes ``ast`` counts
        (
            "x = 'é'; loader(persistent_workers=True)\n",
            "x = 'é'; loader(persistent_workers=False)\n",
        ),
        # the expression's own span: parentheses around it stay
        (
            "loader(\n    persistent_workers=(\n        True\n    ),\n)\n",
            "loader(\n    persistent_workers=(\n        False\n    ),\n)\n",
        ),
    ],
)
def test_replace_ast_node_edits_exactly_the_expression(text: str, after: str) -> None:
    ctx = _context(text)
    assert ctx.ast_module is not None
    call = next(node for node in ast.walk(ctx.ast_module) if isinstance(node, ast.Call))
    value = call.keywords[0].value
    assert ast_node_text(ctx, value) == "True"
    assert _apply(ctx, replace_ast_node(ctx, value, "False")) == after
