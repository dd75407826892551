"""Which rules keep a tree's files in the LibCST path (a script, not a test): the input
for choosing the next rule to port onto ``ast``.

    python bench/libcst_keepers.py TREE [CHECK OPTIONS ...]

Runs ``ddplint check --no-cache -j 1`` in this process (the options after TREE are
passed on: ``--select``, ``--preview``) and records, for every Python file the text
pre-filters let through, the rules planned for it, the rules left after their ``ast``
screens (``CodeRule.may_report``) and whether LibCST parsed it. Prints per rule the
files it is planned for, planned for alone, left with after its screen, and the files
it alone keeps LibCST-parsed; then the files freed if each rule family (the
first digit of the code) answered on ``ast``. Files with project facts that inform the
rules skip the pre-filters and are counted like the others.
"""

from __future__ import annotations

import contextlib
import sys
from collections import Counter
from dataclasses import dataclass
from typing import Any

from ddplint.cli import cli
from ddplint.engine import per_file


@dataclass
class Planned:
    planned: tuple[str, ...]
    left: tuple[str, ...] = ()
    libcst: bool = False


def record(files: dict[str, Planned]) -> None:
    """Wrap the engine's parsing step to record what it planned, kept after the screens
    and parsed with LibCST."""
    parse_for = per_file._parse_for

    def recording(plan: Any, context: Any, rules: Any, outcome: Any) -> Any:
        kept = parse_for(plan, context, rules, outcome)
        if context is not None and plan.kind == "code":
            files[context.source.path] = Planned(
                tuple(entry.code for entry in plan.rules),
                tuple(rule.code for rule in kept),
                "module" in vars(context),
            )
        return kept

    per_file._parse_for = recording


def report(files: dict[str, Planned]) -> None:
    planned, left, alone, kept_alone = (
        Counter[str](),
        Counter[str](),
        Counter[str](),
        Counter[str](),
    )
    for entry in files.values():
        planned.update(entry.planned)
        left.update(entry.left)
        if len(entry.planned) == 1:
            alone[entry.planned[0]] += 1
        if entry.libcst and len(entry.left) == 1:
            kept_alone[entry.left[0]] += 1
    parsed = sum(entry.libcst for entry in files.values())
    print(f"files planned: {len(files)}; parsed with LibCST: {parsed}")
    print("| rule | planned | planned alone | after its screen | keeps LibCST alone |")
    print("|---|---:|---:|---:|---:|")
    for code in sorted(planned):
        counts = (planned[code], alone[code], left[code], kept_alone[code])
        print(f"| {code} | " + " | ".join(map(str, counts)) + " |")
    families = sorted({code[:4] for code in planned})
    for family in families:
        freed = sum(
            1
            for entry in files.values()
            if entry.libcst and all(code.startswith(family) for code in entry.left)
        )
        print(f"{family}xx on ast would free {freed} more files")


def main() -> None:
    files: dict[str, Planned] = {}
    record(files)
    with contextlib.suppress(SystemExit):
        cli(["check", "--no-cache", "-j", "1", "--exit-zero", "-q", *sys.argv[1:]])
    report(files)


if __name__ == "__main__":
    main()
