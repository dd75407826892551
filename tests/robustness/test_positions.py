"""One position model (H1): every column ddplint reports or edits at is the column of the
same character in the file's text, as CPython's tokenizer counts it, also on lines that
start with a form feed (which LibCST leaves out of the code it regenerates)."""

from __future__ import annotations

import io
import subprocess
import sys
import tokenize
from pathlib import Path

import libcst as cst
from hypothesis import given, settings
from hypothesis import strategies as st

from ddplint.code.context import CodeContext
from ddplint.code.syntax.column_map import ColumnMap
from ddplint.settings import LintOptions
from ddplint.source import SourceFile

OPTIONS = LintOptions(selected=(), project_root=".")

PREFIXES = st.sampled_from(["", "\x0c", "\x0c\x0c", " \x0c", "\x0c\t"])
NAMES = st.sampled_from(["loader", "x", "ds", "é", "barrier", "persistent_workers"])
LINE_ENDS = st.sampled_from(["\n", "\r\n"])


@st.composite
def modules(draw: st.DrawFn) -> str:
    """Top-level statements with form feeds before them, inside calls and in comments."""
    end = draw(LINE_ENDS)
    lines = []
    for _ in range(draw(st.integers(1, 6))):
        target, function, argument = draw(NAMES), draw(NAMES), draw(NAMES)
        inner = draw(st.sampled_from(["", "\x0c", " \x0c "]))
        comment = draw(st.sampled_from(["", "  # \x0c note"]))
        prefix = draw(PREFIXES).replace("\t", "") if not lines else draw(PREFIXES)
        prefix = prefix.replace("\t", "")  # top level: no indentation
        lines.append(f"{prefix}{target} = {function}({inner}{argument}, k=True){comment}{end}")
    return "".join(lines)


def _tokenizer_names(text: str) -> list[tuple[int, int, str]]:
    return [
        (token.start[0], token.start[1] + 1, token.string)
        for token in tokenize.generate_tokens(io.StringIO(text).readline)
        if token.type == tokenize.NAME
    ]


def _reported_names(text: str) -> list[tuple[int, int, str]]:
    ctx = CodeContext.parse(SourceFile.decode("t.py", text.encode("utf-8")), OPTIONS)
    found = []
    for node in ctx.index.nodes(cst.Name):
        line, column, _, _ = ctx.range_of(node)
        assert ctx.node_text(node) == node.value
        found.append((line, column, node.value))
    return sorted(found)


@settings(max_examples=150, deadline=None)
@given(modules())
def test_columns_agree_with_cpython_tokenizer(text: str) -> None:
    assert _reported_names(text) == sorted(_tokenizer_names(text))


def test_form_feed_line_fix_lands_on_the_keyword(tmp_path: Path) -> None:
    """The reproducer of H1: a safe fix on a form-feed line used to write
    ``persistent_workersFalsee``."""
    train = tmp_path / "train.py"
    train.write_bytes(
        b"from torch.utils.data import DataLoader\n"
        b"\x0cloader = DataLoader(ds, persistent_workers=True)\n"
    )
    checked = subprocess.run(
        [sys.executable, "-m", "ddplint", "check", "--no-cache", "--select", "DDP404", "train.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert "train.py:2:26: DDP404" in checked.stdout, checked.stdout
    subprocess.run(
        [
            sys.executable,
            "-m",
            "ddplint",
            "check",
            "--no-cache",
            "--select",
            "DDP404",
            "--fix",
            "train.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        check=False,
    )
    assert train.read_bytes().endswith(b"\x0cloader = DataLoader(ds, persistent_workers=False)\n")


def test_unalignable_line_refuses_positions() -> None:
    columns = ColumnMap("a = 1\nb = 2\n", "a = 1\nc = 2\n")
    assert not columns.aligned
    shifted = ColumnMap("\x0cb = 2\n", "b = 2\n")
    assert shifted.aligned and shifted.column(1, 0) == 1 and shifted.column(1, 5) == 6
