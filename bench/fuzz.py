"""Long fuzz run of the engine (not part of CI): generated and damaged Python, damaged
YAML, every rule selected; counts, crashes (each with a reproducer file) and time.

    python -m bench.fuzz                      # 10,000 Python modules + 10,000 YAML documents
    python -m bench.fuzz --python 300 --yaml 300 --seed 7 --out /tmp/fuzz

A crash is an internal error, a finding or edit outside its file, a fix that does not
parse or does not remove its finding, or an exception (``bench/fuzz_cases.py``). Each
becomes ``OUT/<source>-<n>.<ext>`` (the input) and ``.txt`` (what went wrong): turn it
into a test in ``tests/robustness/test_fuzz_regressions.py``.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from bench.fuzz_cases import (
    all_rules_options,
    composed_modules,
    hypothesmith_modules,
    mutate,
    needle_comment,
    problems_with,
    seed_python_files,
    seed_yaml_files,
)
from ddplint.engine import lint_source

#: A case slower than this is kept as a reproducer too.
SLOW_SECONDS = 10.0


@dataclass
class Tally:
    """What one input source produced."""

    counts: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    slowest: tuple[float, str] = (0.0, "")
    crashes: list[str] = field(default_factory=list)


class Fuzzer:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.options = all_rules_options()
        self.tallies: dict[str, Tally] = {}

    def run_case(self, source: str, suffix: str, raw: bytes, *, valid: bool = False) -> None:
        tally = self.tallies.setdefault(source, Tally())
        number = tally.counts["cases"]
        path = f"{source}-{number}{suffix}"
        started = time.perf_counter()
        try:
            outcome = lint_source(path, raw, self.options)
            problems = problems_with(path, raw, outcome, self.options, valid=valid)
        except Exception:
            outcome = None
            problems = [traceback.format_exc()]
        elapsed = time.perf_counter() - started
        tally.counts["cases"] += 1
        tally.seconds += elapsed
        tally.slowest = max(tally.slowest, (elapsed, path))
        if outcome is not None:
            tally.counts["parsed"] += outcome.parsed
            tally.counts["with findings"] += bool(outcome.findings)
            tally.counts["findings"] += len(outcome.findings)
            tally.counts["fixes checked"] += sum(1 for f in outcome.findings if f.fix)
            tally.counts["with errors"] += bool(outcome.errors)
            tally.counts["skipped (notice)"] += bool(outcome.notices)
        if elapsed > SLOW_SECONDS:
            problems.append(f"slow: {elapsed:.1f} s")
        if tally.counts["cases"] % 1000 == 0:
            print(
                f"  {tally.counts['cases']:,} {source} cases, {len(tally.crashes)} crashes",
                flush=True,
            )
        if problems:
            tally.crashes.append(path)
            (self.out / path).write_bytes(raw)
            (self.out / f"{path}.txt").write_text("\n".join(problems) + "\n")

    def run_strategy(
        self, source: str, strategy: st.SearchStrategy[bytes], count: int, at: int
    ) -> None:
        """``count`` examples of a hypothesis strategy, generation only (nothing shrinks)."""

        @seed(at)
        @settings(
            max_examples=count,
            phases=[Phase.generate],
            database=None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(strategy)
        def case(raw: bytes) -> None:
            self.run_case(source, ".py", raw, valid=True)  # generated: valid Python

        case()

    def run_mutations(
        self,
        source: str,
        suffix: str,
        seeds: list[Path],
        header: bytes,
        count: int,
        rng: random.Random,
    ) -> None:
        originals = [path.read_bytes() for path in seeds]
        for _ in range(count):
            self.run_case(source, suffix, header + mutate(rng.choice(originals), rng))


def _split(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if index < total % parts else 0) for index in range(parts)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--python", type=int, default=10_000, help="Python modules (default 10,000)"
    )
    parser.add_argument("--yaml", type=int, default=10_000, help="YAML documents (default 10,000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="where reproducers go (default: a new temp dir)")
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="ddplint-fuzz-"))
    out.mkdir(parents=True, exist_ok=True)
    fuzzer = Fuzzer(out)
    rng = random.Random(args.seed)
    grammar, composed, damaged = _split(args.python, 3)
    runs: list[tuple[str, Callable[[], None]]] = [
        (
            "hypothesmith",
            lambda: fuzzer.run_strategy("hypothesmith", hypothesmith_modules(), grammar, args.seed),
        ),
        (
            "composed",
            lambda: fuzzer.run_strategy("composed", composed_modules(), composed, args.seed),
        ),
        (
            "damaged-python",
            lambda: fuzzer.run_mutations(
                "damaged-python",
                ".py",
                seed_python_files(),
                (needle_comment("code") + "\n").encode(),
                damaged,
                rng,
            ),
        ),
        (
            "damaged-yaml",
            lambda: fuzzer.run_mutations(
                "damaged-yaml",
                ".yaml",
                seed_yaml_files(),
                (needle_comment("config") + "\n").encode(),
                args.yaml,
                rng,
            ),
        ),
    ]
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)  # hypothesmith compiles what it makes
        for name, run in runs:
            print(f"{name} ...", flush=True)
            run()
    _report(fuzzer, out, time.perf_counter() - started)
    return 1 if any(t.crashes for t in fuzzer.tallies.values()) else 0


def _report(fuzzer: Fuzzer, out: Path, wall: float) -> None:
    columns = [
        "cases",
        "parsed",
        "with findings",
        "findings",
        "fixes checked",
        "with errors",
        "skipped (notice)",
    ]
    print(
        f"\n{'source':<16}"
        + "".join(f"{c:>17}" for c in columns)
        + f"{'crashes':>9}{'seconds':>9}{'slowest':>9}"
    )
    for name, tally in fuzzer.tallies.items():
        row = "".join(f"{tally.counts[c]:>17,}" for c in columns)
        print(
            f"{name:<16}{row}{len(tally.crashes):>9}{tally.seconds:>9.1f}{tally.slowest[0]:>9.2f}"
        )
    crashes = [path for tally in fuzzer.tallies.values() for path in tally.crashes]
    print(f"\nwall time {wall:.1f} s; {len(crashes)} crash(es); reproducers in {out}")
    for path in crashes:
        first = (out / f"{path}.txt").read_text().splitlines()[0]
        print(f"  {path}: {first}")


if __name__ == "__main__":
    raise SystemExit(main())
