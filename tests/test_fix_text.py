"""Text-level pieces of fixing: the parse check and line ends of inserted text."""

from __future__ import annotations

import pytest

from ddplint.finding import Edit
from ddplint.fix import apply_edits, syntax_problem
from ddplint.source import SourceFile


@pytest.mark.parametrize(
    ("kind", "text", "problem"),
    [
        ("code", "x = 1\n", None),
        ("code", "def f(:\n", "line 1: invalid syntax"),
        ("code", "f() = 1\n", "line 1: cannot assign to function call"),
        ("config", "a: 1\n---\nb: [1, 2]\n", None),
        # The round-trip loader builds no object from a tag: not a parse problem.
        ("config", "a: !!python/object/apply:os.system [echo]\n", None),
        ("config", "a: 1\na: 2\n", 'line 2: found duplicate key "a"'),
        ("config", "a: 1\n  b: 2\n", "line 2: mapping values are not allowed here"),
        ("config", "a: [1, 2\n", "line 2: expected ',' or ']'"),
    ],
)
def test_syntax_problem(kind: str, text: str, problem: str | None) -> None:
    found = syntax_problem(kind, text)
    if problem is None:
        assert found is None
    else:
        assert found is not None and found.startswith(problem)


def test_inserted_line_ends_follow_a_crlf_file() -> None:
    source = SourceFile.decode("a.py", b"import os\r\nx = 1\r\n")
    edit = Edit(2, 1, 2, 1, "import sys\nimport re\r\n")
    assert apply_edits(source, [edit]) == "import os\r\nimport sys\r\nimport re\r\nx = 1\r\n"
    lf = SourceFile.decode("a.py", b"import os\nx = 1\n")
    assert apply_edits(lf, [edit]) == "import os\nimport sys\nimport re\nx = 1\n"
