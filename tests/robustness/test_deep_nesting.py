"""Pathological nesting. What CPython itself refuses is a parse error; what is valid but
too deep for LibCST to parse in bounded time is skipped with a notice; everything else
is linted in full. Never a crash (LibCST's native parser overflows its stack on a few
thousand levels: a segfault), never a hang (its parse time grows with depth squared)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any

import libcst
import pytest

from bench.fuzz_cases import all_rules_options, needle_comment
from ddplint.code.syntax.safe_parse import MAX_NESTING_COST
from ddplint.deep_stack import call_with_deep_stack
from ddplint.engine import POOL_THRESHOLD, lint_source

from .support import HAZARD, deadline, run_cli

OPTIONS = all_rules_options()
HEADER = needle_comment("code") + "\n"  # every rule runs: the file is really parsed

HOSTILE = {
    "parentheses-5000": "x = " + "(" * 5000 + "1" + ")" * 5000,
    "nested-lists-3000": "x = " + "[" * 3000 + "]" * 3000,
    "nested-calls-2000": "x = " + "f(" * 2000 + ")" * 2000,
    "sum-of-100k-terms": "x = " + "+".join(["a"] * 100_000),
    "attribute-chain-5000": "x = a" + ".b" * 5000,
    "lambdas-5000": "x = " + "lambda: " * 5000 + "1",
    "unary-minus-100k": "x = " + "-" * 100_000 + "a",
    "and-chain-50k": "x = " + " and ".join(["a"] * 50_000),
    "dotted-import-10k": "import " + ".".join(["a"] * 10_000),
    "40-calls-150-deep": "\n".join("x = " + "f(" * 150 + ")" * 150 for _ in range(40)),
    "invalid-and-deep": "def f(:\nx = a" + ".b" * 100_000,
}


@pytest.mark.parametrize("body", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_nesting_is_one_error_or_notice(body: str) -> None:
    with deadline():
        outcome = lint_source("deep.py", (HEADER + body + "\n").encode(), OPTIONS)
    assert not outcome.internal_error and not outcome.parsed and not outcome.findings
    reports = [e.message for e in outcome.errors] + outcome.notices
    assert len(reports) == 1, reports
    (report,) = reports
    assert report.startswith(
        ("cannot parse: ", "skipped: expressions nested too deeply to parse in bounded time")
    )


def test_cpython_limits_are_reported_where_they_are_hit() -> None:
    outcome = lint_source("deep.py", (HEADER + HOSTILE["parentheses-5000"]).encode(), OPTIONS)
    (error,) = outcome.errors
    assert (error.message, error.line, error.column) == (
        "cannot parse: too many nested parentheses",
        2,
        205,
    )


def test_the_skip_notice_names_the_deepest_statement() -> None:
    body = "ok = 1\n" + HOSTILE["40-calls-150-deep"]
    outcome = lint_source("deep.py", (HEADER + body).encode(), OPTIONS)
    (notice,) = outcome.notices
    assert notice == (
        "skipped: expressions nested too deeply to parse in bounded time (line 3 nests 152 "
        f"levels; nesting cost above the limit of {MAX_NESTING_COST:,})"
    )


def test_the_nesting_budget_is_the_documented_one() -> None:
    """A 500-term sum nests 501 levels (cost 251,001): one is linted, two are skipped."""
    statement = "y = " + "+".join(["x"] * 500) + "\n"
    one = HAZARD.replace("        return x\n", f"        {statement}        return x\n")
    outcome = lint_source("one.py", one.encode(), OPTIONS)
    assert outcome.parsed and [f.rule for f in outcome.findings] == ["DDP101"]
    two = one.replace(statement, statement * 2)
    assert lint_source("two.py", two.encode(), OPTIONS).notices != []
    assert 501**2 <= MAX_NESTING_COST < 2 * 501**2


DEEP_BUT_ADMITTED = {
    "sum-of-700-terms": "+".join(["x"] * 700),
    "calls-199-deep": "f(" * 199 + ")" * 199,
    "lists-199-deep": "[" * 199 + "]" * 199,
    "subscripts-700": "x" + "[0]" * 700,
    "lambdas-700": "lambda: " * 700 + "1",
}


@pytest.mark.parametrize("expression", DEEP_BUT_ADMITTED.values(), ids=DEEP_BUT_ADMITTED.keys())
def test_deep_code_within_the_limits_is_linted_in_full(expression: str) -> None:
    """Positions of findings come from LibCST's recursive printer: with Python's default
    recursion limit these trees would fail; on the deep stack they are linted."""
    source = HAZARD.replace("        return x\n", f"        y = {expression}\n        return y\n")
    with deadline():
        outcome = lint_source("deep.py", source.encode(), OPTIONS)
    assert outcome.errors == [] and outcome.notices == []
    assert [(f.rule, f.line, f.column) for f in outcome.findings] == [("DDP101", 7, 9)]


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="this Python parses 3.12 syntax itself")
def test_syntax_newer_than_this_python_gets_one_notice() -> None:
    """Python's own parser rejects ``type X = ...`` before 3.12; LibCST reads it, so the
    rules that read LibCST still run, and the analysis core's (DDP101 among them) are
    left out with one notice that names them and says why."""
    source = "type Batch = list[int]\n" + HAZARD
    outcome = lint_source("new.py", source.encode(), OPTIONS)
    assert outcome.errors == [] and outcome.findings == []
    (notice,) = outcome.notices
    assert "DDP101" in notice and "the analysis core reads code with the parser" in notice


@pytest.mark.slow
def test_hostile_files_in_the_process_pool(project: Path) -> None:
    for number in range(POOL_THRESHOLD):
        (project / f"net_{number:02}.py").write_text(HAZARD)
    for name, body in HOSTILE.items():
        (project / f"{name}.py").write_text(HEADER + body + "\n")
    with deadline():
        run = run_cli("check", "--no-cache", "-j", "2")
    assert run.code == 2 and "Traceback" not in run.err
    assert run.out.count(": DDP101 ") == POOL_THRESHOLD
    reported = {line.split(":")[0] for line in run.err.splitlines() if "error:" in line}
    reported |= {
        line.split(": ")[2].split(":")[0] for line in run.err.splitlines() if "notice:" in line
    }
    # What CPython refuses is always reported; a deep file it reads is linted on its
    # ``ast`` in full, and gets a notice only where a rule left to run needs LibCST.
    refused = {f"{name}.py" for name, body in HOSTILE.items() if not _cpython_reads(body)}
    assert refused <= reported <= {f"{name}.py" for name in HOSTILE}


def _cpython_reads(body: str) -> bool:
    """Whether CPython's parser reads the file on the deep stack the engine lints on."""
    try:
        call_with_deep_stack(ast.parse, HEADER + body + "\n")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def test_a_generated_table_is_skipped_before_any_parse(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """M8: a 2 MB table literal under ``max-file-size`` is skipped from a cheap count of
    its syntax units, before ``ast`` or LibCST (the project model's summary included)
    sees it: parsing it to decide cost 25 s and 1 GB."""
    (project / "table.py").write_text(
        "import torch\nTABLE = [" + "1," * 1_000_000 + "]\ntorch.cuda.synchronize()\n"
    )
    parse = ast.parse

    def not_the_table(source: str | bytes, *args: Any, **kwargs: Any) -> ast.Module:
        if "TABLE = [1,1," in str(source[:100]):
            raise AssertionError("the generated table was parsed")
        return parse(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", not_the_table)
    monkeypatch.setattr(libcst, "parse_module", not_the_table)
    result = run_cli("check", "--no-cache", "--jobs", "1", "table.py")
    assert result.code == 0, result.err
    assert "table.py: skipped: too large to analyse in bounded memory" in result.err
