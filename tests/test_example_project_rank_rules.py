"""The bundled example project through the CLI: the rank-reachability rules report
exactly the planted hazards, and the ``clean_*`` files stay quiet."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "fixtures" / "example_project"
MODULE = "fixtures/example_project/speechnet/lightning_module.py"


def test_rank_rules_on_example_project() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "ddplint",
            "check",
            "--no-cache",
            "--output-format",
            "full",
            "--select",
            "DDP201,DDP202,DDP203,DDP207",
            str(EXAMPLE),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    findings = [line for line in result.stdout.splitlines() if ": DDP" in line]
    assert [line.split(" ", 2)[:2] for line in findings] == [
        [f"{MODULE}:29:13:", "DDP202"],
        [f"{MODULE}:34:13:", "DDP203"],
        [f"{MODULE}:39:6:", "DDP201"],
    ]
    assert "`self.trainer.is_global_zero` (line 28)" in findings[0]
    assert "`@rank_zero_only` runs `_export` (line 39)" in findings[2]
    # At the root cause (the decorator), naming the barrier it keeps from the others.
    assert f"{MODULE}:42:9: `barrier`, which some ranks skip" in result.stdout
