"""Benchmark ddplint against other linters on the same tree, in one run.

Usage::

    python bench/bench_lint.py TREE [--repeat 3] [--jobs N] [--torchfix PATH]

Times ``ddplint check`` cold (empty cache), warm (cache filled) and on one file of the
tree with the warm cache (what a pre-commit run does: the project model still comes
from the whole project), ``ruff check
--no-cache`` (every ruff rule that ships by default) and, when given, TorchFix, all over
TREE; reports wall time (median of ``--repeat`` runs), the peak RSS of the largest process
of each command, and ddplint's own counts: files seen, skipped by the pre-filter, parsed,
findings per rule. Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Timing:
    label: str
    seconds: list[float]
    peak_rss_mib: float
    exit_codes: list[int]

    def row(self) -> str:
        median = statistics.median(self.seconds)
        spread = f"{min(self.seconds):.2f}-{max(self.seconds):.2f}"
        codes = sorted(set(self.exit_codes))
        rss = f"{self.peak_rss_mib:>7.0f} MiB"
        return f"{self.label:<34}{median:>8.2f}s  ({spread})  {rss}  exit {codes}"


def run_once(command: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """Wall seconds, peak RSS (MiB) of the largest process, exit code."""
    start = time.perf_counter()
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    return elapsed, usage.ru_maxrss / 1024, process.returncode


def measure(
    label: str, command: list[str], repeat: int, env: dict[str, str], before=None
) -> Timing:
    seconds, rss, codes = [], 0.0, []
    for _ in range(repeat):
        if before is not None:
            before()
        elapsed, peak, code = run_once(command, env)
        seconds.append(elapsed)
        rss = max(rss, peak)
        codes.append(code)
    return Timing(label, seconds, rss, codes)


def ddplint_counts(tree: Path) -> str:
    """Files seen / pre-filtered / parsed and findings per rule, from the engine itself."""
    sys.path.insert(0, str(ROOT))
    from ddplint.engine import lint_paths
    from ddplint.invocation import build_options, build_settings

    settings = build_settings((str(tree),), None, (), (), (), False)
    options = build_options(settings)
    result = lint_paths([str(tree)], settings, options, use_cache=False)
    stats = result.stats
    per_rule = Counter(f.rule for f in result.findings)
    lines = [
        f"files linted: {stats.files}; skipped by the pre-filter (never parsed): "
        f"{stats.prefiltered}; parsed: {stats.parsed}; errors: {len(result.errors)}",
        f"rules selected: {len(options.selected)}; findings: {len(result.findings)} "
        + (", ".join(f"{code}={n}" for code, n in sorted(per_rule.items())) or "(none)"),
    ]
    return "\n".join(lines)


def _distributed_file(tree: Path) -> Path | None:
    """The first Python file of ``tree`` (sorted) that imports torch.distributed."""
    for path in sorted(tree.rglob("*.py")):
        try:
            if "torch.distributed" in path.read_text(encoding="utf-8", errors="replace"):
                return path
        except OSError:
            continue
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--torchfix", help="path to a torchfix executable (own venv: it pins libcst<1.6)"
    )
    parser.add_argument(
        "--one-file",
        type=Path,
        help="the file of the one-file run on a warm cache (as pre-commit runs it); "
        "default: the first file of TREE that imports torch.distributed",
    )
    args = parser.parse_args()
    tree = args.tree.resolve()
    py_files = sum(1 for _ in tree.rglob("*.py"))
    yaml_files = sum(1 for p in tree.rglob("*") if p.suffix in (".yaml", ".yml"))
    print(
        f"tree: {tree} ({py_files} .py, {yaml_files} .yaml/.yml files); "
        f"cores: {os.cpu_count()}; jobs: {args.jobs}"
    )

    cache = Path(tempfile.mkdtemp(prefix="ddplint-bench-cache-"))
    env = {
        **os.environ,
        "DDPLINT_CACHE_DIR": str(cache),
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }
    ddplint = [
        sys.executable,
        "-m",
        "ddplint",
        "check",
        str(tree),
        "-q",
        "--exit-zero",
        "--jobs",
        str(args.jobs),
    ]

    def clear_cache() -> None:
        shutil.rmtree(cache, ignore_errors=True)

    timings = [
        measure("ddplint check (cold, no cache)", ddplint, args.repeat, env, before=clear_cache),
    ]
    subprocess.run(ddplint, env=env, stdout=subprocess.DEVNULL, check=False)  # fill the cache
    timings.append(measure("ddplint check (warm, cached)", ddplint, args.repeat, env))
    one_file = args.one_file or _distributed_file(tree)
    if one_file is not None:
        single = [*ddplint[:4], str(one_file), *ddplint[5:]]
        timings.append(measure("ddplint check FILE (warm)", single, args.repeat, env))
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    if Path(ruff).exists():
        timings.append(
            measure(
                "ruff check --no-cache",
                [ruff, "check", "--no-cache", "--exit-zero", "--isolated", "-q", str(tree)],
                args.repeat,
                env,
            )
        )
    if args.torchfix:
        timings.append(measure("torchfix", [args.torchfix, str(tree)], 1, env))
    clear_cache()

    print(f"\n{'command':<34}{'median':>9}  (min-max)      peak RSS")
    for timing in timings:
        print(timing.row())
    print()
    print(ddplint_counts(tree))


if __name__ == "__main__":
    main()
