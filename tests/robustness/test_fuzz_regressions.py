"""Inputs the fuzzers found problems with, kept as regression tests (each names the
fuzzer that found it and what went wrong)."""

from __future__ import annotations

from bench.fuzz_cases import all_rules_options, problems_with
from ddplint.engine import lint_source
from ddplint.fix import apply_edits
from ddplint.source import SourceFile

OPTIONS = all_rules_options()


def test_fix_removing_the_last_line_stays_inside_the_file() -> None:
    """test_fuzz_properties (composed modules): removing a statement on the last line of
    a file that ends with a newline gave an edit ending at column 30 of a 28-column line
    (past the line end) instead of at the end of the file."""
    raw = (
        b"import torch as T\nimport torch.distributed as dist\nimport torch.nn as nn\n"
        b"from time import perf_counter\n\nclass Net(nn.Module):\n    def forward(self, x):\n"
        b"        torch.cuda.synchronize()\n        x = self.body(x)\n"
        b"        T.cuda.synchronize()\n"
    )  # work between the syncs: a sync right after another waits for nothing new
    outcome = lint_source("composed.py", raw, OPTIONS)
    assert problems_with("composed.py", raw, outcome, OPTIONS) == []
    last = outcome.findings[-1]
    assert last.fix is not None
    (edit,) = last.fix.edits
    assert (edit.line, edit.column, edit.end_line, edit.end_column) == (10, 1, 11, 1)
    source = SourceFile.decode("composed.py", raw)
    assert apply_edits(source, last.fix.edits) == raw.decode().removesuffix(
        "        T.cuda.synchronize()\n"
    )


def test_coding_declaration_in_a_file_with_lone_cr_line_ends() -> None:
    """bench/fuzz.py (composed modules, 92 of 3,333): a latin-1 file whose lines end in a
    lone \\r was "bad encoding declaration: invalid or missing encoding declaration".
    Python runs it: its tokenizer ends lines at \\r, BytesIO.readline does not, so the
    whole file was read as line 1 and checked as UTF-8."""
    text = "# -*- coding: latin-1 -*-\r" + "\r".join(
        ["import torch", "from torch import nn", "class Net(nn.Module):",
         "    def forward(self, x):", "        y = 'café'; torch.cuda.synchronize()",
         "        return x", ""]
    )  # fmt: skip
    raw = text.encode("latin-1")
    outcome = lint_source("legacy.py", raw, OPTIONS)
    assert problems_with("legacy.py", raw, outcome, OPTIONS, valid=True) == []
    assert [(f.rule, f.line, f.column) for f in outcome.findings] == [("DDP101", 6, 21)]
