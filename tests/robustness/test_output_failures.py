"""A report that cannot be written (N8): standard output on a full disk is one error and
exit code 2, as ``-o`` on a full disk is, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .support import HAZARD


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_standard_output_on_a_full_disk_is_one_error(tmp_path: Path) -> None:
    (tmp_path / "net.py").write_text(HAZARD)
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "ddplint", "check", "--no-cache", "net.py"],
            cwd=tmp_path,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "ddplint: error: cannot write to standard output: No space left on device" in (
        done.stderr
    )
