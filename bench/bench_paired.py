"""ddplint paired with ruff on the same tree, CPU and wall, in one run.

Usage::

    python bench/bench_paired.py TREE [--ddplint CMD] [--before CMD] [--repeat 3]
        [--modes cold,warm,hook,hook-edit,hook-insert,hook-relink] [--hook-file PATH]
        [--keep-output DIR]

Each measurement runs ddplint and then ``ruff check --no-cache --exit-zero`` from the
tree root (A B A B ...), and reads the CPU seconds (user + sys of the process and the
workers it waited for) and the peak RSS from ``wait4``. ``--before`` names a second
ddplint (another checkout's virtualenv) measured in the same pairs, so that before and
after share the machine's load. Modes: ``cold`` (fresh cache folders), ``warm`` (the
cache a cold run left), ``hook`` (one file with ``--force-exclude``, as pre-commit runs
it, warm), ``hook-edit`` (the same after a comment line was appended to the file: its
outcome is not in the cache, its summary is the same), ``hook-insert`` (an import line
inserted above the file's first import: every line moves and the module imports one
more name, so the modules whose names lead to it are linked again; after the first run
the same summary is memoized), ``hook-relink`` (the same import under a name no run
has seen: a summary no run has seen, so the project is always linked again). Each edit is a text
no run has seen; the file is restored after each run (run it on a copy of the tree).
ruff lints the same paths. Prints min / median of each and the median of the pair ratios to ruff.
Not a test: read the numbers as the machine's, and on a shared machine read CPU.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

RUFF = ["ruff", "check", "--no-cache", "--exit-zero", "-q"]


def _appended(original: bytes, stamp: str) -> bytes:
    return original + f"\n# bench edit {stamp}\n".encode()


def _inserted(original: bytes, stamp: str) -> bytes:
    """An import above the first import (never above ``from __future__``)."""
    lines = original.splitlines(keepends=True)
    first = next(
        (
            n
            for n, line in enumerate(lines)
            if line.startswith((b"import ", b"from ")) and not line.startswith(b"from __future__")
        ),
        0,
    )
    lines.insert(first, f"import os  # bench edit {stamp}\n".encode())
    return b"".join(lines)


def _imported(original: bytes, stamp: str) -> bytes:
    """``_inserted`` with a name no run has seen: the module's summary is new too, so
    the project is linked again (``hook-insert`` after its first run finds the facts
    memoized for the same summary: its edits differ in a comment only)."""
    name = "bench_" + "".join(c if c.isalnum() else "_" for c in stamp)
    spelled = f"import os as {name}  #".encode()
    return _inserted(original, stamp).replace(b"import os  #", spelled, 1)


#: The edited-file modes: how each edits the hook file.
EDITS = {"hook-edit": _appended, "hook-insert": _inserted, "hook-relink": _imported}


@dataclass
class Sample:
    cpu: float
    wall: float
    peak_mib: float


@dataclass
class Series:
    """One command's samples in one mode, and ruff's beside each."""

    label: str
    samples: list[Sample] = field(default_factory=list)
    ruff: list[Sample] = field(default_factory=list)

    def row(self) -> str:
        cpu = [s.cpu for s in self.samples]
        wall = [s.wall for s in self.samples]
        ratios = [s.cpu / r.cpu for s, r in zip(self.samples, self.ruff, strict=True)]
        walls = [s.wall / r.wall for s, r in zip(self.samples, self.ruff, strict=True)]
        ruff_cpu = statistics.median(r.cpu for r in self.ruff)
        return (
            f"| {self.label} | {len(cpu)} | {min(cpu):.2f} / {statistics.median(cpu):.2f} s"
            f" | {statistics.median(wall):.2f} s | {max(s.peak_mib for s in self.samples):.0f} MiB"
            f" | {ruff_cpu:.2f} s | {statistics.median(ratios):.1f}x"
            f" | {statistics.median(walls):.1f}x |"
        )


def run(command: list[str], cwd: Path, env: dict[str, str], output: Path | None = None) -> Sample:
    """CPU, wall and peak RSS of one command (its waited-for children included); its
    standard output goes to ``output`` when given."""
    start = time.perf_counter()
    with open(output or os.devnull, "wb") as stdout:
        process = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=stdout, stderr=subprocess.DEVNULL
        )
        _, _, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    return Sample(usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--ddplint", default="ddplint", help="the ddplint command (after)")
    parser.add_argument("--before", help="a second ddplint command, measured alike")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--modes", default="cold,warm,hook,hook-edit,hook-insert")
    parser.add_argument("--hook-file", help="the file the hook mode lints (below TREE)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--scratch", type=Path, help="the folder of the caches (an earlier run's: warm at once)"
    )
    parser.add_argument(
        "--keep-output", type=Path, help="write each ddplint run's JSON report to this folder"
    )
    args = parser.parse_args()
    tree = args.tree.resolve()
    commands = {"after": shlex.split(args.ddplint)}
    if args.before:
        commands["before"] = shlex.split(args.before)
    scratch = args.scratch or Path(tempfile.mkdtemp(prefix="bench-paired-"))
    key_file = scratch / "key"
    caches = {name: scratch / name for name in commands}
    modes = args.modes.split(",")
    table: dict[tuple[str, str], Series] = {}

    def env_for(cache: Path) -> dict[str, str]:
        return {
            **os.environ,
            "DDPLINT_CACHE_DIR": str(cache),
            "DDPLINT_CACHE_KEY_FILE": str(key_file),
        }

    def paths(mode: str) -> list[str]:
        return ["--force-exclude", "--", args.hook_file] if mode.startswith("hook") else ["."]

    def ddplint_args(mode: str) -> list[str]:
        common = ["check", "--exit-zero", "-q", "-j", str(args.jobs)]
        if args.keep_output:
            common[3:3] = ["--output-format", "json"]
        return [*common, *paths(mode)]

    edited = tree / args.hook_file if args.hook_file else None
    original = edited.read_bytes() if edited is not None else b""
    edits = 0

    for mode in modes:
        for round_ in range(args.repeat if mode != "cold" else max(1, args.repeat // 3)):
            for name, command in commands.items():
                cache = caches[name]
                if mode == "cold":  # the first cold run leaves the warm runs' cache
                    cache = cache if round_ == 0 else scratch / f"{name}-cold-{round_}"
                elif not cache.exists():  # fill the cache once, unmeasured
                    run([*command, *ddplint_args("warm")], tree, env_for(cache))
                series = table.setdefault((mode, name), Series(f"{mode}, {name}"))
                if mode in EDITS and edited is not None:
                    edits += 1
                    # a text no earlier run (of this bench or another) has cached
                    stamp = f"{edits} {time.time_ns()}"
                    edited.write_bytes(EDITS[mode](original, stamp))
                output = None
                if args.keep_output:
                    args.keep_output.mkdir(parents=True, exist_ok=True)
                    output = args.keep_output / f"{mode}-{name}-{round_}.json"
                sample = run([*command, *ddplint_args(mode)], tree, env_for(cache), output)
                series.samples.append(sample)
                series.ruff.append(run([*RUFF, *paths(mode)], tree, dict(os.environ)))
                if edited is not None:
                    edited.write_bytes(original)
                print(f"{mode} {name} {series.samples[-1]} ruff {series.ruff[-1]}", flush=True)
    print(f"\ntree: {tree}, load average at the end: {os.getloadavg()}")
    print(
        "| run | n | ddplint CPU min / median | wall median | peak | ruff CPU"
        " | CPU ratio | wall ratio |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for series in table.values():
        print(series.row())


if __name__ == "__main__":
    main()
