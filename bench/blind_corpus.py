"""The blind corpus of training repositories (issue 23): extract, lint, diff against verdicts.

    python bench/blind_corpus.py extract CORPUS [--half blind|develop|all] [--mirror DIR]
    python bench/blind_corpus.py run CORPUS [--half blind] [--out run.json] [--jobs N]
                                    [--rules all|default|CODES]
    python bench/blind_corpus.py diff run.json [--verdicts TSV] [--sample RULE:N:SEED]
    python bench/blind_corpus.py split --repos TSV --seed STRING --out TSV

Every command takes ``--corpus-set 1|2|...|21`` (default 1): which list, split and
verdicts it uses -- set 1 is ``repositories.tsv`` / ``split.tsv`` / ``verdicts-repositories.tsv``
(issue 23; its blind half retired on 2026-11-26, all 88 are ``develop`` material now),
set N from 2 on is ``repositories-N.tsv`` / ``split-N.tsv`` / ``verdicts-repositories-N.tsv``
(sets 2 and 3: a drawn blind half; sets 4 onward: every repository blind, no draw, no seed).
``--repos``, ``--split`` and ``--verdicts`` name other files.
``split`` draws a split once: the repositories sorted by ``sha256(SEED + owner/name)``,
the first half ``develop``, the rest ``blind`` (the seed strings are ``SPLIT_SEEDS``).

The repositories and their commits are ``bench/corpora/repositories.tsv``; which half each
belongs to is ``bench/corpora/split.tsv`` (drawn once, before any tuning; see
``bench/README.md`` for the rule). ``extract`` unpacks each repository at its commit from
the ``fetch`` mirrors into CORPUS/OWNER+NAME, blob by blob (a snapshot may lack blobs: the
count is printed). ``run`` lints each one with every rule, default and preview
(``--select ALL --preview``; ``--rules`` picks others), writes the findings and prints
ddplint's own errors per repository. ``diff`` matches the findings with
the recorded verdicts (``bench/corpora/verdicts-repositories.tsv``) by a key that survives
line shifts -- repository, path, rule and a hash of the flagged line's stripped text (with
an occurrence number for identical lines) -- and prints the findings nobody has judged,
the judged ones that disappeared, and precision per rule.

Never commit what ``extract`` unpacks: it is third-party code.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import random
import subprocess
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from ddplint.rules import all_rules

HERE = Path(__file__).resolve().parent
CORPORA = HERE / "corpora"
REPOSITORIES = CORPORA / "repositories.tsv"
SPLIT = CORPORA / "split.tsv"
VERDICTS = CORPORA / "verdicts-repositories.tsv"
#: The corpus sets: (repository list, split, verdicts). Set 1's blind half is retired.
CORPUS_SETS = {
    "1": (REPOSITORIES, SPLIT, VERDICTS),
    "2": (
        CORPORA / "repositories-2.tsv",
        CORPORA / "split-2.tsv",
        CORPORA / "verdicts-repositories-2.tsv",
    ),
    "3": (
        CORPORA / "repositories-3.tsv",
        CORPORA / "split-3.tsv",
        CORPORA / "verdicts-repositories-3.tsv",
    ),
    "4": (
        CORPORA / "repositories-4.tsv",
        CORPORA / "split-4.tsv",
        CORPORA / "verdicts-repositories-4.tsv",
    ),
    "5": (
        CORPORA / "repositories-5.tsv",
        CORPORA / "split-5.tsv",
        CORPORA / "verdicts-repositories-5.tsv",
    ),
    "6": (
        CORPORA / "repositories-6.tsv",
        CORPORA / "split-6.tsv",
        CORPORA / "verdicts-repositories-6.tsv",
    ),
    "7": (
        CORPORA / "repositories-7.tsv",
        CORPORA / "split-7.tsv",
        CORPORA / "verdicts-repositories-7.tsv",
    ),
    "8": (
        CORPORA / "repositories-8.tsv",
        CORPORA / "split-8.tsv",
        CORPORA / "verdicts-repositories-8.tsv",
    ),
    "9": (
        CORPORA / "repositories-9.tsv",
        CORPORA / "split-9.tsv",
        CORPORA / "verdicts-repositories-9.tsv",
    ),
    "10": (
        CORPORA / "repositories-10.tsv",
        CORPORA / "split-10.tsv",
        CORPORA / "verdicts-repositories-10.tsv",
    ),
    "11": (
        CORPORA / "repositories-11.tsv",
        CORPORA / "split-11.tsv",
        CORPORA / "verdicts-repositories-11.tsv",
    ),
    "12": (
        CORPORA / "repositories-12.tsv",
        CORPORA / "split-12.tsv",
        CORPORA / "verdicts-repositories-12.tsv",
    ),
    "13": (
        CORPORA / "repositories-13.tsv",
        CORPORA / "split-13.tsv",
        CORPORA / "verdicts-repositories-13.tsv",
    ),
    "14": (
        CORPORA / "repositories-14.tsv",
        CORPORA / "split-14.tsv",
        CORPORA / "verdicts-repositories-14.tsv",
    ),
    "15": (
        CORPORA / "repositories-15.tsv",
        CORPORA / "split-15.tsv",
        CORPORA / "verdicts-repositories-15.tsv",
    ),
    "16": (
        CORPORA / "repositories-16.tsv",
        CORPORA / "split-16.tsv",
        CORPORA / "verdicts-repositories-16.tsv",
    ),
    "17": (
        CORPORA / "repositories-17.tsv",
        CORPORA / "split-17.tsv",
        CORPORA / "verdicts-repositories-17.tsv",
    ),
    "18": (
        CORPORA / "repositories-18.tsv",
        CORPORA / "split-18.tsv",
        CORPORA / "verdicts-repositories-18.tsv",
    ),
    "19": (
        CORPORA / "repositories-19.tsv",
        CORPORA / "split-19.tsv",
        CORPORA / "verdicts-repositories-19.tsv",
    ),
    "20": (
        CORPORA / "repositories-20.tsv",
        CORPORA / "split-20.tsv",
        CORPORA / "verdicts-repositories-20.tsv",
    ),
    "21": (
        CORPORA / "repositories-21.tsv",
        CORPORA / "split-21.tsv",
        CORPORA / "verdicts-repositories-21.tsv",
    ),
}
#: The seed string of each set's split (sha256 of SEED + owner/name orders the list).
SPLIT_SEEDS = {
    "1": "ddplint-issue23-repos-1:",
    "2": "ddplint-blind-2:",
    "3": "ddplint-blind-3:",
    "4": "",
    "5": "",
    "6": "",
    "7": "",
    "8": "",
    "9": "",
    "10": "",
    "11": "",
    "12": "",
    "13": "",
    "14": "",
    "15": "",
    "16": "",
    "17": "",
    "18": "",
    "19": "",
    "20": "",
    "21": "",
}
PRECISION = HERE.parent / "lint" / "blind_precision.json"
VERDICT_COLUMNS = ["repo", "path", "line", "code", "key", "verdict", "reason"]


@dataclass(frozen=True)
class Repository:
    """One row of repositories.tsv with its half of the split."""

    name: str
    commit: str
    subdir: str
    half: str

    @property
    def folder(self) -> str:
        """The folder name under CORPUS (and under the mirror): OWNER+NAME."""
        return self.name.replace("/", "+")


def read_tsv(path: Path) -> list[list[str]]:
    """Rows of a tab-separated file, comment lines (#) and blank lines left out."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            rows.append(line.split("\t"))
    return rows


def repositories(half: str, repos: Path = REPOSITORIES, split: Path = SPLIT) -> list[Repository]:
    """The listed repositories of one half ("all" for both)."""
    halves = {row[0]: row[1] for row in read_tsv(split)}
    listed = []
    for row in read_tsv(repos):
        name, commit = row[0], row[1]
        subdir = row[5] if len(row) > 5 else ""
        which = halves[name]
        if half in ("all", which):
            listed.append(Repository(name, commit, subdir, which))
    return listed


def split_key(seed: str, name: str) -> str:
    """The sort key of a repository in a split: sha256 of the seed string and its name."""
    return hashlib.sha256((seed + name).encode()).hexdigest()


def draw_split(names: list[str], seed: str) -> list[tuple[str, str, str]]:
    """(repository, half, key) in key order: the first half (the larger one when odd)
    ``develop``, the rest ``blind``."""
    ordered = sorted(set(names), key=lambda name: split_key(seed, name))
    cut = (len(ordered) + 1) // 2
    return [
        (name, "develop" if i < cut else "blind", split_key(seed, name)[:12])
        for i, name in enumerate(ordered)
    ]


def write_split(repos: Path, seed: str, out: Path) -> None:
    """Draw the split of the listed repositories and write it in split.tsv's format."""
    rows = draw_split([row[0] for row in read_tsv(repos)], seed)
    lines = [
        f"# Blind split of {repos.name}, drawn once before any run on it: sort by "
        f"sha256({seed!r} + repo), first half develop, second half blind.",
        "# repo\thalf\tkey",
        *("\t".join(row) for row in rows),
    ]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")


def extract(repository: Repository, mirror: Path, corpus: Path) -> tuple[int, int]:
    """Unpack the repository's commit (its subdir only, if listed) blob by blob.

    Returns (files written, blobs the snapshot lacks). Symbolic links are skipped."""
    git_dir = mirror / repository.folder / "repo"
    if (git_dir / ".git").is_dir():  # a snapshot fetched with a work tree's layout
        git_dir = git_dir / ".git"
    dest = corpus / repository.folder
    prefix = repository.subdir.rstrip("/") + "/" if repository.subdir else ""
    listing = subprocess.run(
        ["git", "--git-dir", str(git_dir), "ls-tree", "-r", "-z", repository.commit],
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    wanted: list[tuple[str, str]] = []
    for entry in listing:
        if not entry:
            continue
        meta, raw_path = entry.split(b"\t", 1)
        mode, kind, sha = meta.split()
        path = raw_path.decode("utf-8", "replace")
        safe = not Path(path).is_absolute() and ".." not in path.split("/")
        if kind == b"blob" and mode != b"120000" and path.startswith(prefix) and safe:
            wanted.append((sha.decode(), path))
    reader = subprocess.Popen(
        ["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert reader.stdin is not None and reader.stdout is not None
    written = missing = 0
    for blob, path in wanted:
        reader.stdin.write(blob.encode() + b"\n")
        reader.stdin.flush()
        header = reader.stdout.readline().split()
        if len(header) < 3 or header[1] == b"missing":
            missing += 1
            continue
        data = reader.stdout.read(int(header[2]))
        reader.stdout.read(1)
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        written += 1
    reader.stdin.close()
    reader.wait()
    return written, missing


def line_key(root: Path, path: str, line: int) -> str:
    """A hash of the flagged line's stripped text (empty text if the file is unreadable)."""
    try:
        lines = (root / path).read_text(encoding="utf-8", errors="replace").splitlines()
        text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    except OSError:
        text = ""
    return hashlib.sha1(text.encode()).hexdigest()[:10]


def rule_options(rules: str) -> list[str]:
    """ddplint's options for ``--rules``: "all" (every rule, default and preview),
    "default" (the default set: no selection) or codes ("DDP219,DDP201", preview on)."""
    if rules == "all":
        return ["--select", "ALL", "--preview"]
    if rules == "default":
        return []
    return ["--select", rules, "--preview"]


def lint(
    repository: Repository, corpus: Path, jobs: int | None, rules: str = "all"
) -> list[dict[str, object]]:
    """Every finding of the selected rules (``rule_options``) on one repository, keyed."""
    root = corpus / repository.folder
    command = [
        sys.executable,
        "-m",
        "ddplint",
        "check",
        ".",
        "--no-cache",
        "--exit-zero",
        "--output-format",
        "json",
        *rule_options(rules),
    ]
    if jobs:
        command += ["--jobs", str(jobs)]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
    try:
        report = json.loads(done.stdout)
    except ValueError:
        print(f"{repository.name}: no JSON from ddplint: {done.stderr[-400:]}", file=sys.stderr)
        return []
    raw = report["findings"] if isinstance(report, dict) else report
    errors = report.get("errors") if isinstance(report, dict) else None
    if errors:
        print(f"{repository.name}: {len(errors)} errors: {errors[0]}", file=sys.stderr)
    findings: list[dict[str, object]] = []
    seen: Counter[tuple[str, str, str]] = Counter()
    for item in sorted(raw, key=lambda f: (f["path"], int(f["line"]), f["rule"])):
        path, code, line = str(item["path"]), str(item["rule"]), int(item["line"])
        text_hash = line_key(root, path, line)
        seen[(path, code, text_hash)] += 1
        number = seen[(path, code, text_hash)]
        key = text_hash if number == 1 else f"{text_hash}#{number}"
        findings.append(
            {
                "repo": repository.name,
                "path": path,
                "line": line,
                "code": code,
                "key": key,
                "message": item.get("message", ""),
            }
        )
    return findings


def identity(row: dict[str, object]) -> tuple[str, str, str, str]:
    """The key under which a finding and its verdict meet."""
    return (str(row["repo"]), str(row["path"]), str(row["code"]), str(row["key"]))


def read_verdicts(path: Path) -> dict[tuple[str, str, str, str], dict[str, str]]:
    """The recorded verdicts, by identity."""
    if not path.exists():
        return {}
    with path.open(encoding="utf-8", newline="") as handle:
        rows = csv.DictReader((line for line in handle if not line.startswith("#")), delimiter="\t")
        return {identity(dict(row)): dict(row) for row in rows}


def precision_table(judged: list[dict[str, str]]) -> list[tuple[str, int, int, int, str]]:
    """Per rule: TRUE, FALSE, DEBATABLE and TRUE/(TRUE+FALSE)."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for row in judged:
        counts[row["code"]][row["verdict"]] += 1
    table = []
    for code in sorted(counts):
        t, f, d = (counts[code][v] for v in ("TRUE", "FALSE", "DEBATABLE"))
        share = f"{100 * t / (t + f):.0f}%" if t + f else "n/a"
        table.append((code, t, f, d, share))
    return table


def write_precision(judged: list[dict[str, str]], corpus: str, description: str) -> None:
    """Put the judged figures of every rule (0 read where it found nothing) into
    ``lint/blind_precision.json`` under ``corpus`` (first in each rule's list: the newest),
    keeping every other corpus's figures."""
    data = json.loads(PRECISION.read_text(encoding="utf-8"))
    data["corpora"] = {
        corpus: description,
        **{k: v for k, v in data["corpora"].items() if k != corpus},
    }
    rules: dict[str, list[dict[str, object]]] = data["rules"]
    for code in rules:
        rules[code] = [m for m in rules[code] if m["corpus"] != corpus]
    counted = {row[0]: row[1:4] for row in precision_table(judged)}
    for code in all_rules():
        t, f, d = counted.get(code, (0, 0, 0))
        entry = {"corpus": corpus, "true": t, "false": f, "debatable": d}
        rules[code] = [entry, *rules.get(code, [])]
    data["rules"] = {code: rules[code] for code in sorted(rules) if rules[code]}
    PRECISION.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def diff(
    run: list[dict[str, object]],
    verdicts_path: Path,
    sample: str | None,
    linted: set[str] | None = None,
) -> None:
    """Print unjudged findings, vanished verdicts and precision per rule. ``linted``: the
    repositories the run linted (a repository with no finding left is one of them); by
    default those with a finding."""
    verdicts = read_verdicts(verdicts_path)
    repos_run = linted if linted is not None else {str(f["repo"]) for f in run}
    found = {identity(f): f for f in run}
    unjudged = [f for key, f in found.items() if key not in verdicts]
    vanished = [v for key, v in verdicts.items() if key not in found and v["repo"] in repos_run]
    judged = [verdicts[key] for key in found if key in verdicts]
    print(f"{len(run)} findings, {len(judged)} judged, {len(unjudged)} not yet judged")
    if sample:
        code, size, seed = sample.split(":")
        pool = [f for f in unjudged if f["code"] == code]
        random.Random(int(seed)).shuffle(pool)
        unjudged = [f for f in unjudged if f["code"] != code] + pool[: int(size)]
        print(f"sample of {code}: {min(int(size), len(pool))} of {len(pool)} (seed {seed})")
    for f in sorted(unjudged, key=lambda f: (str(f["code"]), str(f["repo"]), str(f["path"]))):
        print(
            f"NEW\t{f['repo']}\t{f['path']}\t{f['line']}\t{f['code']}\t{f['key']}\t{f['message']}"
        )
    for v in vanished:
        print(f"GONE\t{v['repo']}\t{v['path']}\t{v['line']}\t{v['code']}\t{v['verdict']}")
    print("rule      TRUE  FALSE  DEBATABLE  precision")
    for code, t, false, d, share in precision_table(judged):
        print(f"{code:<8} {t:>5} {false:>6} {d:>10}  {share:>9}")


def linted_repositories(args: argparse.Namespace) -> set[str] | None:
    """The repositories a run linted, from the parts it kept beside its JSON (one per
    repository, an empty one included); None where the parts are gone."""
    parts = args.run.with_name(args.run.name + ".parts")
    if not parts.is_dir():
        return None
    listed = repositories("all", args.repos, args.split)
    return {r.name for r in listed if (parts / f"{r.folder}.json").exists()}


def run_repositories(args: argparse.Namespace) -> None:
    """Lint the half's repositories (this process's share of them, ``--part K/N``), each
    into OUT.parts/OWNER+NAME.json (kept: a repository already there is not linted again),
    then gather every part present into OUT."""
    parts = args.out.with_name(args.out.name + ".parts")
    parts.mkdir(parents=True, exist_ok=True)
    share, count = (int(n) for n in args.part.split("/"))
    listed = repositories(args.half, args.repos, args.split)
    for number, repository in enumerate(listed):
        part = parts / f"{repository.folder}.json"
        if number % count != share - 1 or part.exists():
            continue
        found = lint(repository, args.corpus, args.jobs, args.rules)
        print(f"{repository.name}: {len(found)} findings", file=sys.stderr)
        part.write_text(json.dumps(found, indent=1), encoding="utf-8")
    findings: list[dict[str, object]] = []
    missing = []
    for repository in listed:
        part = parts / f"{repository.folder}.json"
        if part.exists():
            findings += json.loads(part.read_text(encoding="utf-8"))
        else:
            missing.append(repository.name)
    if missing:
        print(f"not linted yet: {', '.join(missing)}", file=sys.stderr)
    args.out.write_text(json.dumps(findings, indent=1), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    ext = commands.add_parser("extract")
    ext.add_argument("corpus", type=Path)
    ext.add_argument("--half", default="blind", choices=["blind", "develop", "all"])
    ext.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    lnt = commands.add_parser("run")
    lnt.add_argument("corpus", type=Path)
    lnt.add_argument("--half", default="blind", choices=["blind", "develop", "all"])
    lnt.add_argument("--out", type=Path, default=Path("blind-run.json"))
    lnt.add_argument("--jobs", type=int, default=None)
    lnt.add_argument("--part", default="1/1", help="K/N: lint every N-th repository from K")
    lnt.add_argument(
        "--rules",
        default="all",
        help='"all" (--select ALL --preview), "default" (no selection) or codes (with --preview)',
    )
    dif = commands.add_parser("diff")
    dif.add_argument("run", type=Path)
    dif.add_argument("--verdicts", type=Path, default=None)
    dif.add_argument("--sample", default=None, help="RULE:N:SEED, read N unjudged of RULE")
    dif.add_argument(
        "--write-precision",
        nargs=2,
        metavar=("CORPUS", "DESCRIPTION"),
        help="record the judged figures in lint/blind_precision.json",
    )
    spl = commands.add_parser("split")
    spl.add_argument("--seed", default=None, help="the seed string (default: the set's)")
    spl.add_argument("--out", type=Path, default=None)
    for sub in (ext, lnt, dif, spl):
        sub.add_argument("--corpus-set", default="1", choices=sorted(CORPUS_SETS))
        sub.add_argument("--repos", type=Path, default=None)
        sub.add_argument("--split", type=Path, default=None)
    args = parser.parse_args(argv)
    repos_default, split_default, verdicts_default = CORPUS_SETS[args.corpus_set]
    args.repos = args.repos or repos_default
    args.split = args.split or split_default
    if args.command == "diff" and args.verdicts is None:
        args.verdicts = verdicts_default
    if args.command == "split":
        write_split(args.repos, args.seed or SPLIT_SEEDS[args.corpus_set], args.out or args.split)
    elif args.command == "extract":
        for repository in repositories(args.half, args.repos, args.split):
            if (args.corpus / repository.folder).exists():
                continue
            written, missing = extract(repository, args.mirror, args.corpus)
            print(f"{repository.name}: {written} files, {missing} missing from the snapshot")
    elif args.command == "run":
        run_repositories(args)
    else:
        run = json.loads(args.run.read_text(encoding="utf-8"))
        diff(run, args.verdicts, args.sample, linted_repositories(args))
        if args.write_precision:
            verdicts = read_verdicts(args.verdicts)
            judged = [verdicts[identity(f)] for f in run if identity(f) in verdicts]
            write_precision(judged, *args.write_precision)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
