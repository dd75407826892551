"""The bundled example project through the CLI: the step-skip, step-on-some-ranks,
set-order and training_step hazards it holds are found at their exact places, and the
clean_* files that show the correct forms stay finding-free."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "fixtures" / "example_project"
CODES = "DDP204,DDP205,DDP206,DDP208,DDP209"


def _findings(*args: str) -> list[dict[str, object]]:
    result = subprocess.run(
        [sys.executable, "-m", "ddplint", "check", "--no-cache", "--format", "json", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert result.returncode in (0, 1), result.stderr
    findings: list[dict[str, object]] = json.loads(result.stdout)["findings"]
    return findings


def test_step_hazards_are_found_at_their_places() -> None:
    found = {
        f"{f['path']}:{f['line']}:{f['column']} {f['rule']}"
        for f in _findings("--select", CODES, str(EXAMPLE))
    }
    assert found == {
        "fixtures/example_project/scripts/finetune.py:21:17 DDP209",
        "fixtures/example_project/scripts/finetune.py:33:17 DDP204",
        "fixtures/example_project/scripts/finetune.py:36:13 DDP208",
        "fixtures/example_project/speechnet/recognizer.py:18:13 DDP205",
    }


def test_clean_files_stay_clean_under_every_rule() -> None:
    clean = sorted(str(p) for p in EXAMPLE.rglob("clean_*.py"))
    assert any(p.endswith("scripts/clean_finetune.py") for p in clean)
    assert _findings("--preview", "--select", "ALL", *clean) == []
