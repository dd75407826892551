"""``ast_import_edit``: the import a fix built from ``ast`` positions needs (reusing what
the file imports, else a line where the file keeps its imports), and the expression that
names the imported class."""

from __future__ import annotations

import pytest

from ddplint.code.context import CodeContext
from ddplint.code.edits.ast_edits import ast_import_edit
from ddplint.fix import apply_edits
from ddplint.settings import LintOptions
from ddplint.source import SourceFile

OPTIONS = LintOptions(selected=(), project_root=".")


def answer(text: str) -> tuple[str, str | None] | None:
    """The spelling and the file after the import edit (None: no edit), or None when
    neither spelling can be imported."""
    ctx = CodeContext(SourceFile.decode("m.py", text.encode("utf-8")), OPTIONS)
    found = ast_import_edit(ctx, "datetime", "timedelta")
    if found is None:
        return None
    spelling, edit = found
    return spelling, None if edit is None else apply_edits(ctx.source, [edit])


CASES = [
    (
        "import os\nimport sys\n\nx = 1\n",
        ("timedelta", "import os\nimport sys\nfrom datetime import timedelta\n\nx = 1\n"),
    ),
    (
        '"""Doc."""\n\nx = 1\n',
        ("timedelta", '"""Doc."""\nfrom datetime import timedelta\n\nx = 1\n'),
    ),
    (
        '"""Doc."""\nfrom __future__ import annotations\n\nx = 1\n',
        (
            "timedelta",
            '"""Doc."""\nfrom __future__ import annotations\n'
            "from datetime import timedelta\n\nx = 1\n",
        ),
    ),
    (
        "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\nx = 1\n",
        (
            "timedelta",
            "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n"
            "from datetime import timedelta\nx = 1\n",
        ),
    ),
    (
        "from datetime import datetime\nimport os\n",
        ("timedelta", "from datetime import datetime, timedelta\nimport os\n"),
    ),
    (
        "from datetime import (\n    date,\n    datetime,\n)\n",
        ("timedelta", "from datetime import (\n    date,\n    datetime, timedelta,\n)\n"),
    ),
    (
        "import os\nx = 1\nimport late\nfrom datetime import date\n",
        (
            "timedelta",
            "import os\nfrom datetime import timedelta\n"
            "x = 1\nimport late\nfrom datetime import date\n",
        ),
    ),
    ("import os", ("timedelta", "import os\nfrom datetime import timedelta")),
    ("", ("timedelta", "from datetime import timedelta\n")),
    (
        "import os\r\n\r\nx = 1\r\n",
        ("timedelta", "import os\r\nfrom datetime import timedelta\r\n\r\nx = 1\r\n"),
    ),
    ("from datetime import timedelta\n", ("timedelta", None)),
    ("import os\nfrom datetime import date, timedelta as timedelta\n", ("timedelta", None)),
    (
        "import os\n\ndef f():\n    from datetime import timedelta\n",
        (
            "timedelta",
            "import os\nfrom datetime import timedelta\n"
            "\ndef f():\n    from datetime import timedelta\n",
        ),
    ),
    ("from datetime import timedelta as td\n", ("td", None)),
    ("import datetime as dt\n", ("dt.timedelta", None)),
    ("import datetime\n", ("datetime.timedelta", None)),
    (
        "try:\n    import apex\nexcept ImportError:\n    apex = None\n",
        (
            "timedelta",
            "from datetime import timedelta\ntry:\n"
            "    import apex\nexcept ImportError:\n    apex = None\n",
        ),
    ),
    (
        "from mylib import timedelta\n",
        ("datetime.timedelta", "from mylib import timedelta\nimport datetime\n"),
    ),
    (
        "def timedelta(x):\n    return x\n",
        ("datetime.timedelta", "import datetime\ndef timedelta(x):\n    return x\n"),
    ),
    ("timedelta = None\n", ("datetime.timedelta", "import datetime\ntimedelta = None\n")),
    ("from mylib import timedelta\nimport datetime as dt\n", ("dt.timedelta", None)),
    ("from mylib import timedelta\ndatetime = 3\n", None),
    # Above the decorator (LibCST's insertion went between decorator and ``def``).
    (
        "# header\n\n@decorated\ndef f():\n    pass\n",
        (
            "timedelta",
            "# header\n\nfrom datetime import timedelta\n@decorated\ndef f():\n    pass\n",
        ),
    ),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_import_edit(text: str, expected: tuple[str, str | None] | None) -> None:
    assert answer(text) == expected
    if expected is not None and expected[1] is not None:
        assert answer(expected[1]) == (expected[0], None), "a second call finds the import"
