"""Re-run ddplint over a corpus of repositories and print its findings per rule and
repository, so a precision review starts from a diff (a script, not a test).

    python bench/precision_corpus.py CORPUS [--out run.json] [--compare old.json]
                                            [--review review.tsv] [--jobs N]

CORPUS holds one folder per repository (``../shared/tools/precision-corpus`` makes one).
Each repository is linted as a user would at its root (``ddplint check . --no-cache``,
default rules). ``--compare`` prints the findings gained and lost against an earlier
``--out`` file; ``--review`` takes the review table (repo, rule, location, verdict
columns, as ``../shared/reports/precision-review.tsv``) and prints, per verdict, how many
reviewed findings are still reported, and the findings nobody has reviewed yet.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

#: A finding's identity across runs: repository, rule, path from the repository root, line.
Key = tuple[str, str, str, int]


def lint_repository(folder: Path, jobs: int | None) -> tuple[list[Key], float, str]:
    """The findings of the default rules on one repository, the seconds it took, and
    what ddplint said on stderr (errors, notices)."""
    command = [sys.executable, "-m", "ddplint", "check", ".", "--no-cache"]
    command += ["--format", "json", "--exit-zero"]
    if jobs:
        command += ["--jobs", str(jobs)]
    started = time.monotonic()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False)
    took = time.monotonic() - started
    try:
        report = json.loads(done.stdout)
    except ValueError:
        return [], took, done.stderr or done.stdout
    findings = report["findings"] if isinstance(report, dict) else report
    keys = [(folder.name, f["rule"], f["path"], int(f["line"])) for f in findings]
    return keys, took, done.stderr


def print_table(found: list[Key]) -> None:
    rules = sorted({k[1] for k in found})
    repositories = sorted({k[0] for k in found})
    counts = Counter((k[0], k[1]) for k in found)
    width = max([len(r) for r in repositories] + [10])
    print(f"{'repository':<{width}}  " + "  ".join(f"{r:>6}" for r in rules) + "   total")
    for repository in repositories:
        row = [counts[(repository, rule)] for rule in rules]
        cells = "  ".join(f"{n or '':>6}" for n in row)
        print(f"{repository:<{width}}  {cells}  {sum(row):>6}")
    totals = "  ".join(f"{sum(counts[(r, rule)] for r in repositories):>6}" for rule in rules)
    print(f"{'total':<{width}}  {totals}  {len(found):>6}")


def compare(found: list[Key], old_file: Path) -> None:
    old = {tuple(k) for k in json.loads(old_file.read_text())["findings"]}
    new = set(found)
    for label, keys in (("gained", new - old), ("lost", old - new)):
        print(f"\n{label} ({len(keys)}):")
        for repository, rule, path, line in sorted(keys):
            print(f"  {repository} {rule} {path}:{line}")


def against_review(found: list[Key], review_file: Path) -> None:
    with review_file.open(newline="") as stream:
        rows = list(csv.DictReader(stream, delimiter="\t"))
    reported = {(k[0], k[1], f"{k[2]}:{k[3]}") for k in found}
    reviewed = {(r["repo"], r["rule"], r["location"]): r["verdict"] for r in rows}
    verdicts = Counter((verdict, key in reported) for key, verdict in reviewed.items())
    print("\nreviewed findings (verdict: still reported / gone):")
    for verdict in sorted({v for v, _ in verdicts}):
        print(f"  {verdict:<10} {verdicts[(verdict, True)]:>4} / {verdicts[(verdict, False)]}")
    unreviewed = sorted(k for k in reported if k not in reviewed)
    print(f"\nnot in the review ({len(unreviewed)}):")
    for repository, rule, location in unreviewed:
        print(f"  {repository} {rule} {location}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--out", type=Path, help="write the findings here (JSON)")
    parser.add_argument("--compare", type=Path, help="an earlier --out file")
    parser.add_argument("--review", type=Path, help="a review table (TSV)")
    parser.add_argument("--jobs", type=int, default=None)
    args = parser.parse_args()
    found: list[Key] = []
    seconds: dict[str, float] = {}
    for folder in sorted(p for p in args.corpus.iterdir() if p.is_dir()):
        keys, took, stderr = lint_repository(folder, args.jobs)
        found += keys
        seconds[folder.name] = round(took, 1)
        errors = [line for line in stderr.splitlines() if ": error:" in line]
        print(f"{folder.name}: {len(keys)} findings, {took:.1f} s, {len(errors)} errors")
    print()
    print_table(found)
    if args.out:
        args.out.write_text(json.dumps({"findings": found, "seconds": seconds}, indent=1))
    if args.compare:
        compare(found, args.compare)
    if args.review:
        against_review(found, args.review)


if __name__ == "__main__":
    main()
