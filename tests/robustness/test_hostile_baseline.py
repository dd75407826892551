"""Baseline files of the wrong shape or kind (L4, L5): each is one ``ddplint: error:``
line and exit 2; a FIFO or ``/dev/zero`` is refused at once, unread."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .support import HAZARD, deadline, run_cli

MALFORMED = {
    "list path": '{"version":1,"findings":[{"path":[1],"rule":"DDP101","fingerprint":"x"}]}',
    "dict path": '{"version":1,"findings":[{"path":{"a":1},"rule":"DDP101","fingerprint":"x"}]}',
    "number fields": '{"version":1,"findings":[{"path":1,"rule":2,"fingerprint":3}]}',
    "missing field": '{"version":1,"findings":[{"path":"net.py","rule":"DDP101"}]}',
    "entry not an object": '{"version":1,"findings":["net.py"]}',
    "not a baseline": '{"version":2,"findings":[]}',
    "not JSON": "{",
    "deep nesting": '{"version":1,"findings":' + "[" * 100_000 + "]" * 100_000 + "}",
}


def _assert_one_error(code: int, err: str, expected: str) -> None:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ddplint: error:"), err
    assert expected in lines[0]


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_baseline_is_one_error(project: Path, name: str) -> None:
    (project / "net.py").write_text(HAZARD)
    (project / "bl.json").write_text(MALFORMED[name])
    run = run_cli("check", "--no-cache", "-q", "--baseline", "bl.json", "net.py")
    _assert_one_error(run.code, run.err, "bl.json")


def test_baseline_at_dev_zero_is_refused_unread(project: Path) -> None:
    (project / "net.py").write_text(HAZARD)
    with deadline():
        run = run_cli("check", "--no-cache", "-q", "--baseline", "/dev/zero", "net.py")
    _assert_one_error(run.code, run.err, "not a regular file")


def test_baseline_fifo_does_not_block(project: Path) -> None:
    (project / "net.py").write_text(HAZARD)
    os.mkfifo(project / "bl.json")
    with deadline():
        run = run_cli("check", "--no-cache", "-q", "--baseline", "bl.json", "net.py")
    _assert_one_error(run.code, run.err, "not a regular file")


def test_well_formed_baseline_still_hides_its_findings(project: Path) -> None:
    (project / "net.py").write_text(HAZARD)
    assert run_cli("check", "--no-cache", "-q", "--write-baseline", "bl.json").code == 0
    assert run_cli("check", "--no-cache", "-q", "--baseline", "bl.json", "net.py").code == 0
