"""Recall of ddplint on public commits that fixed a distributed-training hazard (a script,
not a test).

    python bench/fix_commit_corpus.py [--mirror DIR] [--work DIR] [--half develop|blind|all]
                                      [--show-cases] [--out results.json] [--jobs N]
                                      [--in-tree]

The cases are listed in ``bench/corpora/fix_commits.json`` (never the code). For each one
the file is re-created from a fetched snapshot (``fetch github:OWNER/NAME`` puts its git
directory under the mirror folder, ``OWNER+NAME/repo``): ``before`` is the file at the fix
commit's parent, ``after`` the file at the fix commit. Each file is linted alone in an
empty folder, once with the default rules and once with ``--select ALL --preview``.
With ``--in-tree`` the file is linted by name inside the whole tree of its commit
(its source and config files, written from ``git ls-tree``), made a new empty
repository as a user's checkout is (without one, or a ``pyproject.toml`` at its top,
the project root would be the file's own folder and the model would miss its callers),
so the project model sees the other modules: the facts that cross modules (an object,
a helper, the caller's rank) count there, as in a user's run.

Scoring (as in ``../shared/realworld/README.md``): a case is *found* when a finding sits
on ``line`` or on one of ``alt_lines`` of ``before``; it is *fixed* when, in addition, the
``after`` file has no finding of the same rule at the place those lines moved to.

The split is by repository (``assign_halves``, seed ``SPLIT_SEED``) and is recorded in
the ``half`` field of every case. Develop on ``develop`` only; ``blind`` is run to judge,
and its cases are printed one by one only with ``--show-cases --half blind``.
"""

from __future__ import annotations

import argparse
import difflib
import json
import random
import subprocess
import sys
import tempfile
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CASES = HERE / "corpora" / "fix_commits.json"
#: Seed of the repository split recorded in the ``half`` field (drawn 2026-11-26).
SPLIT_SEED = 20261126
MODES = {"default": [], "preview": ["--select", "ALL", "--preview"]}

Case = dict[str, Any]
#: What ``--in-tree`` takes of a tree (snapshots may lack large data files).
TREE_FILES = (".py", ".yaml", ".yml", ".toml", ".cfg")


def assign_halves(repositories: list[str], seed: int = SPLIT_SEED) -> dict[str, str]:
    """Split repositories in two halves (develop gets the extra one when odd)."""
    ordered = sorted(set(repositories))
    random.Random(seed).shuffle(ordered)
    cut = (len(ordered) + 1) // 2
    return {repo: ("develop" if i < cut else "blind") for i, repo in enumerate(ordered)}


def git_dir(mirror: Path, repo: str) -> Path:
    """The git directory of a fetched snapshot (bare, or a work tree's ``.git``)."""
    folder = mirror / repo.replace("/", "+") / "repo"
    return folder / ".git" if (folder / ".git").is_dir() else folder


def file_at(gd: Path, commit: str, path: str) -> str | None:
    """The text of PATH at COMMIT, or None when the snapshot lacks it."""
    done = subprocess.run(
        ["git", "--git-dir", str(gd), "show", f"{commit}:{path}"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout if done.returncode == 0 else None


def lint_alone(text: str, name: str, mode: str, work: Path) -> list[tuple[str, int]]:
    """(rule, line) of every finding on TEXT saved as NAME alone in a new empty folder."""
    folder = Path(tempfile.mkdtemp(dir=work))
    (folder / name).write_text(text)
    command = [sys.executable, "-m", "ddplint", "check", name, "--no-cache"]
    command += ["--format", "json", "--exit-zero", *MODES[mode]]
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False)
    try:
        report = json.loads(done.stdout)
    except ValueError:
        return []
    findings = report["findings"] if isinstance(report, dict) else report
    return [(str(f["rule"]), int(f["line"])) for f in findings]


def write_tree(gd: Path, commit: str, folder: Path) -> None:
    """Write the source and config files of the tree at COMMIT under FOLDER."""
    listing = subprocess.run(
        ["git", "--git-dir", str(gd), "ls-tree", "-r", "-z", commit],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    wanted = []
    for entry in filter(None, listing.split("\0")):
        meta, path = entry.split("\t", 1)
        if meta.split()[1] == "blob" and path.endswith(TREE_FILES):
            wanted.append((meta.split()[2], path))
    objects = "".join(f"{sha}\n" for sha, _ in wanted).encode()
    out = subprocess.run(
        ["git", "--git-dir", str(gd), "cat-file", "--batch"],
        input=objects,
        capture_output=True,
        check=False,
    ).stdout
    at = 0
    for _, path in wanted:
        header_end = out.index(b"\n", at)
        header = out[at:header_end].split()
        if header[1] == b"missing":
            at = header_end + 1
            continue
        size = int(header[2])
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(out[header_end + 1 : header_end + 1 + size])
        at = header_end + 1 + size + 1


def lint_in_tree(gd: Path, commit: str, path: str, mode: str, work: Path) -> list[tuple[str, int]]:
    """(rule, line) of every finding on PATH linted by name in the whole tree at COMMIT."""
    folder = Path(tempfile.mkdtemp(dir=work))
    write_tree(gd, commit, folder)
    # A checkout: without a repository (or a pyproject.toml at the top) the project
    # root would be the file's own folder, and the model would miss its callers.
    subprocess.run(["git", "init", "-q", str(folder)], check=False)
    command = [sys.executable, "-m", "ddplint", "check", path, "--no-cache"]
    command += ["--format", "json", "--exit-zero", *MODES[mode]]
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False)
    subprocess.run(["rm", "-rf", str(folder)], check=False)
    try:
        report = json.loads(done.stdout)
    except ValueError:
        return []
    findings = report["findings"] if isinstance(report, dict) else report
    return [(str(f["rule"]), int(f["line"])) for f in findings if f["path"].endswith(path)]


def moved_lines(before: str, after: str, lines: list[int]) -> set[int]:
    """Where LINES of BEFORE sit in AFTER: the same line when unchanged, else the whole
    replacement (or the line the deletion left) of the changed block."""
    a, b = before.splitlines(), after.splitlines()
    places: set[int] = set()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        for line in lines:
            if not i1 < line <= i2 and not (i1 == i2 == line - 1):
                continue
            if tag == "equal":
                places.add(j1 + (line - 1 - i1) + 1)
            else:
                places.update(range(j1 + 1, max(j2, j1 + 1) + 1))
    return places


def score(case: Case, mirror: Path, work: Path, in_tree: bool = False) -> dict[str, Any]:
    """Re-create BEFORE/AFTER of CASE and score both modes (the file alone, or IN_TREE)."""
    gd = git_dir(mirror, case["repo"])
    before = file_at(gd, case["parent"], case["path"])
    after = file_at(gd, case["commit"], case["path"])
    result: dict[str, Any] = {"dir": case["dir"], "family": case["family"], "half": case["half"]}
    if before is None:
        result["error"] = f"no snapshot of {case['repo']} (fetch github:{case['repo']})"
        return result
    name = "before" + Path(case["path"]).suffix
    hazard = [case["line"], *case["alt_lines"]]
    for mode in MODES:
        if in_tree:
            found = lint_in_tree(gd, case["parent"], case["path"], mode, work)
        else:
            found = lint_alone(before, name, mode, work)
        rules = sorted({rule for rule, line in found if line in hazard})
        still: list[str] = []
        if rules and after is not None:
            places = moved_lines(before, after, hazard)
            if in_tree:
                later = lint_in_tree(gd, case["commit"], case["path"], mode, work)
            else:
                later = lint_alone(after, "after" + Path(case["path"]).suffix, mode, work)
            still = sorted({rule for rule, line in later if rule in rules and line in places})
        result[mode] = {"rules": rules, "still_after": still, "findings": len(found)}
    return result


def print_recall(results: list[dict[str, Any]]) -> None:
    """Recall per hazard family and half, both modes (found / found and gone after)."""
    table: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        if "error" not in r:
            table[(r["half"], r["family"])].append(r)
            table[(r["half"], "ALL")].append(r)
    print(f"{'half':<8} {'family':<11} {'n':>3}  {'default':>13}  {'preview':>13}")

    def order(key: tuple[str, str]) -> tuple[str, bool, str]:
        return key[0], key[1] == "ALL", key[1]

    for half, family in sorted(table, key=order):
        rows = table[(half, family)]
        cells = []
        for mode in MODES:
            found = sum(1 for r in rows if r[mode]["rules"])
            fixed = sum(1 for r in rows if r[mode]["rules"] and not r[mode]["still_after"])
            cells.append(f"{found:>2} ({fixed:>2} gone)")
        print(f"{half:<8} {family:<11} {len(rows):>3}  {cells[0]:>13}  {cells[1]:>13}")


def case_mark(result: dict[str, Any], mode: str) -> str:
    """One mode's outcome for one case: the rules found, and those still there after."""
    found = result[mode]
    mark = f"{mode}={','.join(found['rules']) or '-'}"
    if found["still_after"]:
        mark += f" (still after: {','.join(found['still_after'])})"
    return mark


def main() -> None:
    """Parse arguments, score the chosen half, print the recall table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--work", type=Path, default=None, help="scratch folder (outside the repo)")
    parser.add_argument("--half", choices=["develop", "blind", "all"], default="all")
    parser.add_argument("--show-cases", action="store_true", help="one line per case of --half")
    parser.add_argument("--out", type=Path, default=None, help="write per-case results (JSON)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--in-tree", action="store_true", help="lint each file in its whole tree")
    args = parser.parse_args()
    cases: list[Case] = json.loads(CASES.read_text())
    chosen = [c for c in cases if args.half in ("all", c["half"])]
    work = args.work or Path(tempfile.mkdtemp(prefix="fix-commits-"))
    work.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(lambda c: score(c, args.mirror, work, args.in_tree), chosen))
    for r in results:
        if "error" in r:
            print(f"skipped {r['dir']}: {r['error']}", file=sys.stderr)
    print_recall(results)
    if args.show_cases and args.half != "all":
        for r in results:
            if "error" not in r:
                marks = "  ".join(case_mark(r, mode) for mode in MODES)
                print(f"{r['dir']:<36} {r['family']:<10} {marks}")
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
