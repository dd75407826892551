"""The progress line: shown on a terminal (a real pseudo-terminal here), never in pipes
or with machine formats."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ddplint.progress import Progress

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = "fixtures/example_project"

pytestmark = pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")


def _read_all(fd: int) -> str:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: the other side is closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode()


def test_progress_on_a_terminal_and_erased() -> None:
    master, slave = os.openpty()
    with open(slave, "w", encoding="utf-8", closefd=True) as terminal:
        progress = Progress(terminal, enabled=True, delay=0)
        for done in (1, 2, 3):
            progress.update(done, 3)
        progress.finish()
    shown = _read_all(master)
    os.close(master)
    assert "\rddplint: 1/3 files (33%)" in shown
    assert "ddplint: 3/3 files (100%)" in shown
    assert shown.endswith("\r" + " " * len("ddplint: 3/3 files (100%)") + "\r")


def test_no_progress_off_a_terminal() -> None:
    stream = io.StringIO()
    progress = Progress(stream, enabled=True, delay=0)
    progress.update(1, 1)
    progress.finish()
    assert stream.getvalue() == ""


def _check_with_stderr_on_terminal(*args: str) -> tuple[str, str]:
    master, slave = os.openpty()
    environment = {**os.environ, "DDPLINT_PROGRESS_DELAY": "0", "TERM": "xterm"}
    process = subprocess.Popen(
        [sys.executable, "-m", "ddplint", "check", "--no-cache", *args, EXAMPLE],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=slave,
        env=environment,
    )
    os.close(slave)
    stderr = _read_all(master)
    stdout, _ = process.communicate(timeout=60)
    os.close(master)
    return stdout.decode(), stderr


def test_cli_shows_progress_on_a_terminal_only_for_human_formats() -> None:
    out, err = _check_with_stderr_on_terminal()
    assert "ddplint: " in err and " files (100%)" in err
    assert "files (" not in out
    out, err = _check_with_stderr_on_terminal("--format", "json")
    assert "files (" not in err and out.startswith("{")


def test_cli_shows_no_progress_in_a_pipe() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ddplint", "check", "--no-cache", EXAMPLE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "DDPLINT_PROGRESS_DELAY": "0"},
        check=False,
    )
    assert result.returncode == 1 and "files (" not in result.stderr
