"""``ast_import_edit``: the import a fix built from ``ast`` positions needs, the same
spelling and edit as the LibCST layer's ``import_edit``."""

from __future__ import annotations

import pytest

from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import ast_import_edit
from ddplint.code.edits.imports import import_edit
from ddplint.fix import apply_edits
from ddplint.settings import LintOptions
from ddplint.source import SourceFile

OPTIONS = LintOptions(selected=(), project_root=".")

TEXTS = [
    "import os\nimport sys\n\nx = 1\n",
    '"""Doc."""\n\nx = 1\n',
    '"""Doc."""\nfrom __future__ import annotations\n\nx = 1\n',
    "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\nx = 1\n",
    "from datetime import datetime\nimport os\n",
    "from datetime import (\n    date,\n    datetime,\n)\n",
    "import os\nx = 1\nimport late\nfrom datetime import date\n",
    "import os",
    "",
    "import os\r\n\r\nx = 1\r\n",
    "from datetime import timedelta\n",
    "import os\nfrom datetime import date, timedelta as timedelta\n",
    "import os\n\ndef f():\n    from datetime import timedelta\n",
    "from datetime import timedelta as td\n",
    "import datetime as dt\n",
    "import datetime\n",
    "try:\n    import apex\nexcept ImportError:\n    apex = None\n",
    "from mylib import timedelta\n",
    "def timedelta(x):\n    return x\n",
    "timedelta = None\n",
    "from mylib import timedelta\nimport datetime as dt\n",
    "from mylib import timedelta\ndatetime = 3\n",
]


def answer(text: str, libcst: bool) -> tuple[str, str | None] | None:
    """The spelling and the file after the import edit (None: no edit), or None when
    neither spelling can be imported."""
    ctx = CodeContext.parse(SourceFile.decode("m.py", text.encode("utf-8")), OPTIONS)
    found = (import_edit if libcst else ast_import_edit)(ctx, "datetime", "timedelta")
    if found is None:
        return None
    spelling, edit = found
    return spelling, None if edit is None else apply_edits(ctx.source, [edit])


@pytest.mark.parametrize("text", TEXTS)
def test_same_edit_as_the_libcst_layer(text: str) -> None:
    assert answer(text, libcst=False) == answer(text, libcst=True)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("import datetime as dt\n", ("dt.timedelta", None)),
        ("from datetime import timedelta as td\n", ("td", None)),
        (
            "from datetime import datetime\nimport os\n",
            ("timedelta", "from datetime import datetime, timedelta\nimport os\n"),
        ),
        (
            "from mylib import timedelta\n",
            ("datetime.timedelta", "from mylib import timedelta\nimport datetime\n"),
        ),
        ("from mylib import timedelta\ndatetime = 3\n", None),
        # Above the decorator (the LibCST layer puts it between decorator and ``def``).
        (
            "# header\n\n@decorated\ndef f():\n    pass\n",
            (
                "timedelta",
                "# header\n\nfrom datetime import timedelta\n@decorated\ndef f():\n    pass\n",
            ),
        ),
    ],
)
def test_spellings(text: str, expected: tuple[str, str | None] | None) -> None:
    assert answer(text, libcst=False) == expected
