"""The `ddplint verify` examples of docs/verify.md are real runs, and stay so.

Each ```console block of docs/verify.md that starts with ``$ ddplint verify`` is run again
(2 gloo ranks) and its verdict is compared with the block: the header, whether a hang
was diagnosed, the static-check section (every finding's status and text) and the result
line. Timings, temporary folders and which rank waited where (a race, not a verdict)
are left out. ``DDPLINT_UPDATE_DOCS=1`` writes the new runs into the page instead.
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
PAGE = ROOT / "docs" / "verify.md"
RUN_LIMIT = 600  # seconds: a hang guard
BLOCK = re.compile(r"```console\n\$ (ddplint verify [^\n]*)\n(.*?)```", re.DOTALL)


def page_examples() -> list[tuple[str, str]]:
    """(command, printed output) of every verify example of the page."""
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer(PAGE.read_text())]


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


def test_the_page_has_verify_examples() -> None:
    commands = [command for command, _ in page_examples()]
    assert len(commands) >= 3, commands


@pytest.mark.parametrize(
    "command", [command for command, _ in page_examples()], ids=lambda c: c.split()[2]
)
def test_verify_example_matches_a_real_run(command: str) -> None:
    printed = dict(page_examples())[command]
    output = run_example(command)
    if os.environ.get("DDPLINT_UPDATE_DOCS"):
        text = PAGE.read_text()
        PAGE.write_text(text.replace(f"$ {command}\n{printed}", f"$ {command}\n{output}", 1))
        return
    assert verdict(output) == verdict(printed), output
