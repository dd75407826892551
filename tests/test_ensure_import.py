"""``ensure_import``: the import a fix needs, added once, where the file keeps its imports."""

from __future__ import annotations

import pytest

from ddplint.code.context import CodeContext
from ddplint.code.edits.edits import ImportConflict, can_import, ensure_import
from ddplint.fix import apply_edits
from ddplint.settings import LintOptions
from ddplint.source import SourceFile

OPTIONS = LintOptions(selected=(), project_root=".")


def context(text: str) -> CodeContext:
    return CodeContext.parse(SourceFile.decode("m.py", text.encode("utf-8")), OPTIONS)


def with_import(text: str, module: str = "datetime", name: str = "timedelta") -> str | None:
    """The file after ``ensure_import``, or None when it returned no edit."""
    ctx = context(text)
    edit = ensure_import(ctx, module, name)
    return None if edit is None else apply_edits(ctx.source, [edit])


@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param(
            "import os\nimport sys\n\nx = 1\n",
            "import os\nimport sys\nfrom datetime import timedelta\n\nx = 1\n",
            id="after-last-import",
        ),
        pytest.param(
            '"""Doc."""\n\nx = 1\n',
            '"""Doc."""\nfrom datetime import timedelta\n\nx = 1\n',
            id="after-docstring",
        ),
        pytest.param(
            '"""Doc."""\nfrom __future__ import annotations\n\nx = 1\n',
            '"""Doc."""\nfrom __future__ import annotations\nfrom datetime import timedelta\n'
            "\nx = 1\n",
            id="after-future",
        ),
        pytest.param(
            "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\nx = 1\n",
            "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\nfrom datetime import timedelta\n"
            "x = 1\n",
            id="below-shebang-and-coding",
        ),
        pytest.param(
            "from datetime import datetime\nimport os\n",
            "from datetime import datetime, timedelta\nimport os\n",
            id="joins-existing-from-import",
        ),
        pytest.param(
            "from datetime import (\n    date,\n    datetime,\n)\n",
            "from datetime import (\n    date,\n    datetime, timedelta,\n)\n",
            id="joins-parenthesised",
        ),
        pytest.param(
            "import os\nx = 1\nimport late\n",
            "import os\nfrom datetime import timedelta\nx = 1\nimport late\n",
            id="leading-block-only",
        ),
        pytest.param(
            "import os", "import os\nfrom datetime import timedelta", id="no-final-newline"
        ),
        pytest.param("", "from datetime import timedelta\n", id="empty-file"),
        pytest.param(
            "import os\r\n\r\nx = 1\r\n",
            "import os\r\nfrom datetime import timedelta\r\n\r\nx = 1\r\n",
            id="crlf",
        ),
    ],
)
def test_insertion(before: str, after: str) -> None:
    assert with_import(before) == after
    assert with_import(after) is None, "a second call must find the import"


@pytest.mark.parametrize(
    "text",
    [
        "from datetime import timedelta\n",
        "import os\nfrom datetime import date, timedelta as timedelta\n",
    ],
)
def test_already_imported(text: str) -> None:
    assert with_import(text) is None


def test_import_inside_a_function_does_not_count() -> None:
    function = "def f():\n    from datetime import timedelta\n"
    text = "import os\n\n" + function
    assert with_import(text) == "import os\nfrom datetime import timedelta\n\n" + function


def test_alias_does_not_bind_the_name() -> None:
    text = "from datetime import timedelta as td\n"
    assert with_import(text) == "from datetime import timedelta as td, timedelta\n"


@pytest.mark.parametrize(
    "text",
    [
        "from mylib import timedelta\n",
        "def timedelta(x):\n    return x\n",
        "timedelta = None\n",
    ],
)
def test_conflicting_name(text: str) -> None:
    ctx = context(text)
    assert not can_import(ctx, "datetime", "timedelta")
    with pytest.raises(ImportConflict):
        ensure_import(ctx, "datetime", "timedelta")
