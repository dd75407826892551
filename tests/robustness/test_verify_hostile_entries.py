"""`ddplint verify` against hostile entries and options (issue 15: M10, L6, L7): a
process that clears its environment and leaves its session, or a double-fork daemon,
does not outlive the run and the report names it; a NaN, infinite or absurd timeout and
a `module:function` without that function are usage errors (exit 2) before any rank
runs; an entry that does not compile is refused with the compiler's message; and
`--trace-dir` never touches the files already in the folder. Real torchrun launches of
2 gloo ranks where a run is needed, each bounded in time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ddplint.verify.reaper import is_alive

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
RUN_LIMIT = 120  # seconds for one verify run on a 2-core machine
REFUSAL_LIMIT = 30  # seconds: a refusal launches nothing


def verify(
    *arguments: str, cwd: Path = ROOT, limit: int = RUN_LIMIT
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "ddplint", "verify", *arguments]
    return subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=limit, check=False
    )


@pytest.mark.slow
def test_processes_that_shed_session_and_environment_are_killed_and_named(
    tmp_path: Path,
) -> None:
    result = verify(
        "fixtures/verify/escapes_the_run.py",
        "--timeout",
        "20",
        "--format",
        "json",
        "--",
        str(tmp_path),
    )
    report = json.loads(result.stdout)
    escaped = [int(p) for f in sorted(tmp_path.glob("rank-*.pids")) for p in f.read_text().split()]
    assert len(escaped) == 3, result.stderr  # a sleeper per rank, rank 0's daemon
    try:
        assert [pid for pid in escaped if is_alive(pid)] == []
        assert set(escaped) <= {left["pid"] for left in report["leftovers"]}
        assert any("outlived it and were killed" in note for note in report["notes"])
        assert report["outcome"] == "clean"
    finally:
        for pid in escaped:  # never leave them running if the verifier did
            if is_alive(pid):
                os.kill(pid, 9)


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e308", "0.1"])
def test_unusable_timeouts_are_usage_errors(value: str) -> None:
    result = verify("fixtures/verify/clean_ddp.py", "--timeout", value, limit=REFUSAL_LIMIT)
    assert result.returncode == 2
    assert "--timeout" in result.stderr and "Traceback" not in result.stderr


def test_missing_function_is_refused_before_the_module_runs(tmp_path: Path) -> None:
    marker = tmp_path / "module-ran"
    (tmp_path / "trainer.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).touch()\n\ndef main():\n    pass\n"
    )
    result = verify("trainer:nothere", cwd=tmp_path, limit=REFUSAL_LIMIT)
    assert result.returncode == 2
    assert "defines no `nothere`" in result.stderr
    assert not marker.exists()


def test_an_entry_that_does_not_compile_is_refused_with_the_compiler_message(
    tmp_path: Path,
) -> None:
    script = tmp_path / "train.py"
    script.write_text("import torch\n\ndef main(:\n    pass\n")
    result = verify(str(script), "--trace-dir", str(tmp_path / "traces"), limit=REFUSAL_LIMIT)
    assert result.returncode == 2
    assert f"{script}:3:" in result.stderr and "SyntaxError" in result.stderr
    assert "no rank was launched" in result.stderr
    assert not (tmp_path / "traces").exists()  # nothing was started


@pytest.mark.slow
def test_trace_dir_keeps_the_users_files(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    mine = {
        "launcher-notes-2024.log": "my notes\n",
        "rank-0.jsonl": '{"loss": 1}\n',
        "rank-1.stacks": "mine\n",
        "other.txt": "keep\n",
    }
    for name, text in mine.items():
        (logs / name).write_text(text)
    result = verify(
        "fixtures/verify/clean_ddp.py",
        "--timeout",
        "20",
        "--trace-dir",
        str(logs),
        "--format",
        "json",
    )
    report = json.loads(result.stdout)
    assert report["outcome"] == "clean", result.stderr
    for name, text in mine.items():
        assert (logs / name).read_text() == text
    run_dir = Path(report["run_dir"])
    assert run_dir.parent == logs and run_dir.name.startswith("verify-")
    assert {"rank-0.jsonl", "rank-1.jsonl"} <= {p.name for p in run_dir.iterdir()}
