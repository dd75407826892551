"""Check parsing in pieces against whole-file parses on a tree of real code.

Usage::

    python bench/incremental_parse_check.py DIR [DIR ...] [--jobs 2]

For every Python file LibCST parses, the module put together from pieces
(``ddplint.code.syntax.incremental_parse``) must equal the whole-file parse node for
node (``deep_equals``), with the same indentation, line end and code. Prints how many
files matched, fell back to a whole parse (and why), or differed (each named); exits 1
when any differed. Not a test: it reads corpora that are not in the repository.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from multiprocessing import Pool
from pathlib import Path

import libcst as cst

from ddplint.code.syntax import incremental_parse
from ddplint.code.syntax.python_ast import parse_python
from ddplint.code.syntax.safe_parse import statement_nesting

#: Files above this size are left out (LibCST's memory, not the question asked here).
LARGEST = 400_000


def check(path: str) -> tuple[str, str]:
    """(outcome, path): ``same``, ``one piece``, ``fallback``, ``differs``, ``unparsed``."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return "unparsed", path
    if len(text) > LARGEST:
        return "unparsed", path
    try:
        tree = parse_python(text)
        whole = cst.parse_module(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError, cst.ParserSyntaxError):
        return "unparsed", path
    pieces = incremental_parse.split(text, tree)
    if len(pieces) < 2:
        return "one piece", path
    parser = incremental_parse.IncrementalParser()
    list(parser.nesting(pieces, statement_nesting))
    module = parser.assemble(pieces)
    if module is None:
        return "fallback", path
    same = (
        module.deep_equals(whole)
        and module.code == whole.code
        and all(
            getattr(module, name) == getattr(whole, name)
            for name in ("default_indent", "default_newline", "has_trailing_newline")
        )
    )
    return ("same" if same else "differs"), path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    arguments = parser.parse_args()
    sys.setrecursionlimit(20_000)
    files = sorted(str(path) for folder in arguments.folders for path in Path(folder).rglob("*.py"))
    with Pool(arguments.jobs) as pool:
        outcomes = pool.map(check, files, chunksize=16)
    counts = Counter(outcome for outcome, _ in outcomes)
    print(f"{len(files)} files: " + ", ".join(f"{n} {what}" for what, n in counts.most_common()))
    for outcome, path in outcomes:
        if outcome in ("differs", "fallback"):
            print(f"{outcome}: {path}")
    return 1 if counts["differs"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
