"""ddplint's cost per file at growing project sizes, paired with ruff, in one run.

Usage (from the repository root)::

    python -m bench.bench_scale --out DIR [--sizes 250,1000,4000,16000] [--repeat 3]
        [--cold-repeat 3] [--modes cold,warm] [--pool DIR ...] [--seed 0] [--ddplint CMD]
        [--jobs N] [--reports DIR] [--model]

For each size N, builds ``DIR/tree-N`` (once; hard links where the file system allows):
N Python files sampled (seeded) from the library trees of ``--pool`` (default: the five
of ``/work/corpus-speed``), each at its path below its library, so that the libraries'
top-level packages sit side by side at the tree's root and their absolute imports
resolve among the sampled files. Where N exceeds the pool, the pool is taken again under
``copy1/``, ``copy2/`` ... (whole libraries under a distinct top-level folder: relative
imports resolve within each copy, absolute ones lead to the root's copy) and the N files
are sampled from all the copies. A ``pyproject.toml`` at the tree's root makes the tree
the project. Nothing is written below the pool.

Then, per size, ``cold`` (a fresh cache folder: every summary and outcome computed and
written, as a first run does) and ``warm`` (the cache the first cold run left, tree
unchanged), each paired run by run with ``ruff check --no-cache`` on the same tree
(``bench_paired.run``: CPU = user + sys of the process and the workers it waited for,
wall, peak RSS of the largest process). Prints one row per size and mode: files, ddplint
CPU and wall (min / median), ruff CPU and wall (median), the median of the pair ratios,
ddplint CPU per file and peak RSS. With ``--model``, also the project model alone, in
this process (``time.process_time``): ``ProjectIndex()`` and ``facts_for`` of every
module, the summaries read from the cache the cold run left. Read CPU on a shared
machine. Not a test.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import shlex
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.bench_paired import RUFF, Sample, run

DEFAULT_POOL = [
    Path("/work/corpus-speed") / name
    for name in (
        "nemo_toolkit-2.7.3",
        "lightning-2.6.6",
        "transformers-5.23.0",
        "accelerate-1.15.0",
        "deepspeed-0.19.8",
    )
]


def pool_files(libraries: list[Path]) -> list[tuple[Path, str]]:
    """Every Python file of the libraries as (library, path below it), sorted; a path
    two libraries both hold is taken from the first."""
    seen: dict[str, Path] = {}
    for library in libraries:
        for path in sorted(library.rglob("*.py")):
            relative = path.relative_to(library).as_posix()
            if not any(part.endswith((".dist-info", ".egg-info")) for part in path.parts):
                seen.setdefault(relative, library)
    return sorted(((library, relative) for relative, library in seen.items()), key=str)


def build_tree(tree: Path, size: int, pool: list[tuple[Path, str]], seed: int) -> None:
    """``size`` files of the pool (copies of it where it is smaller) linked under ``tree``."""
    marker = tree / ".bench-scale"
    stamp = f"{size} {seed} {len(pool)}\n"
    if marker.exists() and marker.read_text() == stamp:
        return
    if tree.exists():
        shutil.rmtree(tree)
    copies = math.ceil(size / len(pool))
    entries = [(copy, library, relative) for copy in range(copies) for library, relative in pool]
    for copy, library, relative in random.Random(seed).sample(entries, size):
        target = tree / (f"copy{copy}/" if copy else "") / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(library / relative, target)
        except OSError:
            shutil.copyfile(library / relative, target)
    (tree / "pyproject.toml").write_text("# a project of sampled library files (bench_scale)\n")
    marker.write_text(stamp)


@dataclass
class Row:
    size: int
    mode: str
    samples: list[Sample] = field(default_factory=list)
    ruff: list[Sample] = field(default_factory=list)

    def line(self) -> str:
        cpu = [s.cpu for s in self.samples]
        wall = [s.wall for s in self.samples]
        pairs = list(zip(self.samples, self.ruff, strict=True))
        ratio = statistics.median(a.cpu / b.cpu for a, b in pairs)
        wall_ratio = statistics.median(a.wall / b.wall for a, b in pairs)
        per_file = statistics.median(cpu) / self.size * 1000
        return (
            f"| {self.size:,} | {self.mode} | {len(cpu)}"
            f" | {min(cpu):.2f} / {statistics.median(cpu):.2f}"
            f" | {min(wall):.2f} / {statistics.median(wall):.2f}"
            f" | {statistics.median(r.cpu for r in self.ruff):.2f}"
            f" / {statistics.median(r.wall for r in self.ruff):.2f}"
            f" | {ratio:.1f}x / {wall_ratio:.1f}x | {per_file:.2f}"
            f" | {max(s.peak_mib for s in self.samples):.0f} MiB |"
        )


HEADER = (
    "| files | run | n | ddplint CPU s min / med | wall s min / med | ruff CPU / wall s"
    " | ratio CPU / wall | ddplint CPU ms per file | peak RSS |\n"
    "|---:|---|---:|---:|---:|---:|---:|---:|---:|"
)


def model_cost(tree: Path, cache_folder: Path, key_file: Path) -> str:
    """Linking and ``facts_for`` of every module, in process, from a cold run's cache."""
    from ddplint.cache import ResultCache, content_hash
    from ddplint.code.project.encoding import SUMMARY_VERSION
    from ddplint.code.project.index import ProjectIndex
    from ddplint.invocation import build_options, build_settings

    os.environ["DDPLINT_CACHE_KEY_FILE"] = str(key_file)
    settings = build_settings((str(tree),), None, (), (), (), False)
    cache = ResultCache(cache_folder, build_options(settings).fingerprint(), tree)
    summaries = {}
    for path in sorted(tree.rglob("*.py")):
        key = f"summary:{SUMMARY_VERSION}:{content_hash(path.read_bytes())}"
        hit = cache.get(key)
        if hit is not None and isinstance(hit.get("summary"), dict):
            summaries[path.relative_to(tree).as_posix()] = hit["summary"]
    start = time.process_time()
    index = ProjectIndex(summaries)
    linked = time.process_time()
    facts = sum(len(index.facts_for(path)) for path in summaries)
    ended = time.process_time()
    count = max(1, len(summaries))
    return (
        f"| {len(summaries):,} | {linked - start:.2f} s | {(linked - start) / count * 1000:.2f}"
        f" | {ended - linked:.2f} s | {(ended - linked) / count * 1000:.2f}"
        f" | {facts / count:.1f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="where the trees are built")
    parser.add_argument("--sizes", default="250,1000,4000,16000")
    parser.add_argument("--repeat", type=int, default=3, help="warm runs per size")
    parser.add_argument("--cold-repeat", type=int, default=3, help="cold runs per size")
    parser.add_argument("--modes", default="cold,warm")
    parser.add_argument("--pool", type=Path, nargs="*", default=DEFAULT_POOL)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ddplint", default="ddplint", help="the ddplint command")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--reports", type=Path, help="keep each run's JSON report here")
    parser.add_argument("--model", action="store_true", help="time linking and facts_for too")
    args = parser.parse_args()
    pool = pool_files(args.pool)
    print(f"pool: {len(pool)} Python files from {len(args.pool)} libraries", flush=True)
    command = shlex.split(args.ddplint)
    rows: list[Row] = []
    models: list[str] = []
    if args.reports:
        args.reports.mkdir(parents=True, exist_ok=True)
    for size in (int(s) for s in args.sizes.split(",")):
        tree = (args.out / f"tree-{size}").resolve()
        build_tree(tree, size, pool, args.seed)
        scratch = Path(tempfile.mkdtemp(prefix=f"scale-{size}-", dir=args.out))
        env = {**os.environ, "DDPLINT_CACHE_KEY_FILE": str(scratch / "key")}
        for mode in args.modes.split(","):
            row = Row(size, mode)
            rows.append(row)
            for round_ in range(args.cold_repeat if mode == "cold" else args.repeat):
                cache = scratch / ("cache" if mode != "cold" or round_ == 0 else f"cold-{round_}")
                if mode == "warm" and not cache.exists():  # fill it once, unmeasured
                    run([*command, "check", "--exit-zero", "-q", "."], tree, _env(env, cache))
                report = ["--output-format", "json"] if args.reports else []
                output = args.reports / f"{size}-{mode}-{round_}.json" if args.reports else None
                ddplint = [*command, "check", "--exit-zero", "-q", "-j", str(args.jobs), *report]
                row.samples.append(run([*ddplint, "."], tree, _env(env, cache), output))
                row.ruff.append(run([*RUFF, "."], tree, dict(os.environ)))
                print(f"{size} {mode} {row.samples[-1]} ruff {row.ruff[-1]}", flush=True)
        if args.model and (scratch / "cache").exists():
            models.append(model_cost(tree, scratch / "cache", scratch / "key"))
            print(models[-1], flush=True)
    print(f"\nload average at the end: {os.getloadavg()}\n{HEADER}")
    for row in rows:
        print(row.line())
    if models:
        print(
            "\n| modules | ProjectIndex() | ms per module | facts_for all | ms per module"
            " | facts per module |\n|---:|---:|---:|---:|---:|---:|"
        )
        print("\n".join(models))


def _env(base: dict[str, str], cache: Path) -> dict[str, str]:
    return {**base, "DDPLINT_CACHE_DIR": str(cache)}


if __name__ == "__main__":
    main()
