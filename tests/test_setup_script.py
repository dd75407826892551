"""scripts/test.sh: where the CPU torch comes from (TORCH_INDEX_URL, else pip's own
index, as CI and this machine use), run against a stand-in Python that records each
command instead of installing anything."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ddplint.settings import read_toml

ROOT = Path(__file__).resolve().parent.parent
RECORDER = """#!/bin/sh
echo "$*" >> "$(dirname "$0")/../../calls.log"
"""


def _calls(tmp_path: Path, **env: str) -> list[str]:
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "test.sh", tmp_path / "scripts" / "test.sh")
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(RECORDER)
    python.chmod(0o755)
    environment = {k: v for k, v in os.environ.items() if k != "TORCH_INDEX_URL"}
    done = subprocess.run(
        ["bash", str(tmp_path / "scripts" / "test.sh"), "-q", "tests/x.py"],
        env={**environment, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == "" and "Warning" not in done.stderr
    return (tmp_path / "calls.log").read_text().splitlines()


PIP = "-m pip install -q --disable-pip-version-check"


def test_default_installs_torch_from_pips_index(tmp_path: Path) -> None:
    calls = _calls(tmp_path)
    assert calls == [
        f"{PIP} --upgrade pip",
        f"{PIP} torch==2.13.0",
        f"{PIP} -e .[dev,verify] lightning==2.6.6",
        "-m pytest -q tests/x.py",
    ]


@pytest.mark.parametrize("url", ["https://download.pytorch.org/whl/cpu", "file:///mirror/torch"])
def test_torch_index_url_chooses_where_torch_comes_from(tmp_path: Path, url: str) -> None:
    calls = _calls(tmp_path, TORCH_INDEX_URL=url)
    assert calls[1] == f"{PIP} --index-url {url} torch==2.13.0"
    assert "--index-url" not in calls[2], "only torch comes from that index"


def test_ci_runs_the_readmes_whole_suite_command() -> None:
    """The README's two test commands: a plain run (the slow tests left out by
    pyproject's `-m 'not slow'`) and the whole suite, which .ci/run runs (quietly)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    whole = 'bash scripts/test.sh -m "slow or not slow"'
    assert "\nbash scripts/test.sh   " in readme and f"\n{whole}   " in readme
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert ci[-1] == whole.replace("test.sh", "test.sh -q")
    pytest_options = read_toml(ROOT / "pyproject.toml")["tool"]["pytest"]["ini_options"]
    assert pytest_options["addopts"].endswith("-m 'not slow'")
