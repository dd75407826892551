"""The README's `ddplint verify` examples are real runs, and stay so.

Each ```console block of the README that starts with ``$ ddplint verify`` is run again
(2 gloo ranks) and its verdict is compared with the block: the header, whether a hang
was diagnosed, the static-check section (every finding's status and text) and the result
line. Timings, temporary folders and which rank waited where (a race, not a verdict)
are left out. ``DDPLINT_UPDATE_README=1`` writes the new runs into the README instead.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
RUN_LIMIT = 150  # seconds
BLOCK = re.compile(r"```console\n\$ (ddplint verify [^\n]*)\n(.*?)```", re.DOTALL)


def readme_examples() -> list[tuple[str, str]]:
    """(command, printed output) of every verify example in the README."""
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer(README.read_text())]


def verdict(output: str) -> list[str]:
    """The lines of a verify report that say what was found, with run-to-run noise
    (seconds, temporary paths, the collective a waiting rank was caught in) removed."""
    kept: list[str] = []
    in_static = False
    for line in output.splitlines():
        if line.startswith("ddplint verify "):
            kept.append(line)
        elif line.startswith("hang: "):
            kept.append("hang: (diagnosed)")
        elif line.startswith("Static check"):
            in_static = True
            kept.append(line)
        elif (in_static and line.startswith("  ")) or line.startswith("Result: "):
            kept.append(line)
        else:
            in_static = False
    return kept


def run_example(command: str) -> str:
    argv = shlex.split(command)
    assert argv[:2] == ["ddplint", "verify"]
    done = subprocess.run(
        [sys.executable, "-m", "ddplint", *argv[1:]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=RUN_LIMIT,
        check=False,
        env={**os.environ, "NO_COLOR": "1"},
    )
    return done.stdout


def test_the_readme_has_verify_examples() -> None:
    commands = [command for command, _ in readme_examples()]
    assert len(commands) >= 3, commands


@pytest.mark.parametrize(
    "command", [command for command, _ in readme_examples()], ids=lambda c: c.split()[2]
)
def test_readme_verify_example_matches_a_real_run(command: str) -> None:
    printed = dict(readme_examples())[command]
    output = run_example(command)
    if os.environ.get("DDPLINT_UPDATE_README"):
        text = README.read_text()
        README.write_text(text.replace(f"$ {command}\n{printed}", f"$ {command}\n{output}", 1))
        return
    assert verdict(output) == verdict(printed), output
