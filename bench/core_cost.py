"""The analysis core's cost per phase on a tree, paired with ruff on the same tree (a
script, not a test).

    python bench/core_cost.py TREE [--findings OUT.json]

For every ``.py`` file: CPython's ``ast`` parse, then the core's module analysis and
its question ``where_ranks_part`` (DDP219), each timed in CPU seconds of this process;
then ``ruff check`` over the same tree (its CPU from ``resource``). A file that takes
longer than ``SLOW_SECONDS`` in the analysis is named on stderr (a walk the budgets do
not bound is a bug). ``--findings`` writes each finding (path, line, message) for
reading.
"""

from __future__ import annotations

import argparse
import ast
import json
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path

from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.questions import where_ranks_part
from ddplint.rules.code.ddp219_ranks_part_before_collective import parting_message

SLOW_SECONDS = 1.0


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(tree: Path) -> tuple[dict[str, float], list[dict[str, object]]]:
    """CPU seconds per phase over the tree, and the core's findings."""
    totals = {"files": 0.0, "parse": 0.0, "analysis": 0.0}
    findings: list[dict[str, object]] = []
    for path in sorted(tree.rglob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        totals["files"] += 1
        started = time.process_time()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                module = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        parsed = time.process_time()
        try:
            partings = where_ranks_part(ModuleAnalysis(module))
        except RecursionError:
            continue
        analysed = time.process_time()
        totals["parse"] += parsed - started
        totals["analysis"] += analysed - parsed
        if analysed - parsed > SLOW_SECONDS:
            print(f"slow: {analysed - parsed:.1f}s {path}", file=sys.stderr)
        for parting in partings:
            line = getattr(parting.cause, "lineno", 0)
            findings.append({"path": str(path), "line": line, "message": parting_message(parting)})
    before = _children_cpu()
    subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--quiet", "--exit-zero", str(tree)],
        capture_output=True,
        check=False,
    )
    totals["ruff"] = _children_cpu() - before
    return totals, findings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--findings", type=Path)
    args = parser.parse_args()
    totals, findings = measure(args.tree)
    files = max(totals["files"], 1.0)
    core = totals["parse"] + totals["analysis"]
    print(f"files: {int(totals['files'])}, findings: {len(findings)}")
    for phase in ("parse", "analysis"):
        print(f"{phase}: {totals[phase]:.2f} s CPU ({1000 * totals[phase] / files:.2f} ms a file)")
    print(f"core: {core:.2f} s CPU; ruff: {totals['ruff']:.2f} s CPU", end="")
    print(f" ({core / totals['ruff']:.1f}x ruff)" if totals["ruff"] > 0 else "")
    if args.findings is not None:
        args.findings.write_text(json.dumps(findings, indent=1))


if __name__ == "__main__":
    main()
