"""`ddplint verify` end to end: real torchrun launches of 2 gloo ranks on CPU over the
scripts in fixtures/verify, each bounded in time. Each scenario runs once per session."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ddplint.finding import Finding, Severity
from ddplint.rules import all_rules
from ddplint.verify.compare import compare, runtime_problems
from ddplint.verify.layout import ENV_DIR
from ddplint.verify.mapping import map_findings
from ddplint.verify.scope import load_execution
from ddplint.verify.trace import load_run

pytest.importorskip("torch")
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "verify"
RUN_LIMIT = 150  # seconds: a run that takes longer is a bug of the verifier


@dataclass(frozen=True)
class Run:
    code: int
    report: dict[str, Any]
    trace_dir: Path
    stderr: str

    @property
    def first(self) -> dict[str, Any]:
        return self.report["divergences"][0]

    def rank(self, number: int) -> dict[str, Any]:
        return next(r for r in self.first["ranks"] if r["rank"] == number)


_RUNS: dict[tuple[str, ...], Run] = {}


@pytest.fixture(scope="session")
def verify(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    def run(entry: str, *options: str) -> Run:
        key = (entry, *options)
        if key not in _RUNS:
            trace_dir = tmp_path_factory.mktemp("verify")
            command = [sys.executable, "-m", "ddplint", "verify", entry, "--format", "json"]
            command += ["--trace-dir", str(trace_dir), *options]
            done = subprocess.run(
                command, cwd=ROOT, capture_output=True, text=True, timeout=RUN_LIMIT, check=False
            )
            assert done.stdout, done.stderr
            report = json.loads(done.stdout)
            # the run's files are in a fresh sub-folder of --trace-dir, named by the report
            run_dir = Path(report["run_dir"])
            assert run_dir.parent == trace_dir
            _RUNS[key] = Run(done.returncode, report, run_dir, done.stderr)
        return _RUNS[key]

    return run


def line_of(fixture: str, needle: str) -> int:
    text = (FIXTURES / fixture).read_text().splitlines()
    return next(n for n, line in enumerate(text, 1) if needle in line)


def assert_mapped(run: Run, rule: str, fixture: str, line: int) -> None:
    """Confirmed by ``rule`` where the registry has it (it lands from another branch),
    else reported as new at ``line``."""
    if rule in all_rules():
        confirmed = [f for f in run.report["findings"] if f["status"] == "confirmed"]
        assert any(f["rule"] == rule and f["path"].endswith(fixture) for f in confirmed), confirmed
    else:
        locations = [n["location"] for n in run.report["new"] if n["location"]]
        assert any(
            loc["path"] == f"fixtures/verify/{fixture}" and loc["line"] == line for loc in locations
        ), run.report["new"]


def constructed(fixture: str, needle: str) -> Finding:
    line = line_of(fixture, needle)
    return Finding(
        "DDP999", "test", Severity.ERROR, f"fixtures/verify/{fixture}", line, 1, line, 2, "x"
    )


def mapped_reasons(run: Run, findings: list[Finding]) -> list[str]:
    traces = load_run(str(run.trace_dir))
    comparison = compare(traces)
    problems = runtime_problems(comparison, traces, hung=run.report["hang"] is not None)
    mapping = map_findings(
        findings, problems, str(ROOT), load_execution(str(run.trace_dir), traces)
    )
    return [c.reason for c in mapping.confirmed]


def test_barrier_under_rank_zero_hangs_at_the_barrier(verify) -> None:  # type: ignore[no-untyped-def]
    run = verify("fixtures/verify/rank0_barrier.py", "--timeout", "5")
    assert run.code == 1 and run.report["outcome"] == "hang"
    assert "rank 0 waited" in run.report["hang"]["reason"]
    assert run.first["kind"] == "op"
    barrier = run.rank(0)["call"]
    assert barrier["op"] == "barrier" and not barrier["completed"]
    assert barrier["site"]["line"] == line_of("rank0_barrier.py", "dist.barrier()")
    gradient = run.rank(1)["call"]
    assert gradient["op"] == "all_reduce" and "DDP gradient" in gradient["label"]
    assert gradient["site"]["line"] == line_of("rank0_barrier.py", "loss.backward()")
    stacks = {r["rank"]: r["stack"][0]["line"] for r in run.report["ranks"]}
    assert stacks == {
        0: line_of("rank0_barrier.py", "dist.barrier()"),
        1: line_of("rank0_barrier.py", "loss.backward()"),
    }
    assert_mapped(run, "DDP201", "rank0_barrier.py", barrier["site"]["line"])
    reasons = mapped_reasons(
        run,
        [
            constructed("rank0_barrier.py", "dist.barrier()"),
            constructed("rank0_barrier.py", "if step == 1 and rank == 0:"),
        ],
    )
    assert reasons == [
        "the flagged line is on the call path",
        "the flagged statement encloses the call path",
    ]
    timings = run.report["timings"]
    assert timings["hang_diagnosed_s"] - timings["first_collective_s"] < 5 + 4


def test_no_process_is_left_behind_after_a_hang(verify) -> None:  # type: ignore[no-untyped-def]
    run = verify("fixtures/verify/rank0_barrier.py", "--timeout", "5")
    marker = f"{ENV_DIR}={run.trace_dir}".encode()
    leftovers = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environment = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker in environment.split(b"\0"):
            leftovers.append(entry.name)
    assert leftovers == []


def test_lightning_sync_dist_under_global_zero(verify) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("lightning")
    run = verify("fixtures/verify/lightning_log_rank0.py", "--timeout", "5")
    assert run.report["outcome"] == "hang"
    log_line = line_of("lightning_log_rank0.py", "self.log(")
    synced = run.rank(0)["call"]
    assert synced["site"]["line"] == log_line
    assert "LightningModule.log" in synced["via"]
    assert "DDP gradient" in run.rank(1)["call"]["label"]
    assert_mapped(run, "DDP202", "lightning_log_rank0.py", log_line)
    reasons = mapped_reasons(
        run,
        [
            constructed("lightning_log_rank0.py", "self.log("),
            constructed("lightning_log_rank0.py", "if self.trainer.is_global_zero:"),
        ],
    )
    assert len(reasons) == 2


def test_nan_continue_before_backward_shifts_the_all_reduces(verify) -> None:  # type: ignore[no-untyped-def]
    run = verify("fixtures/verify/nan_skip.py", "--timeout", "3")
    assert run.code == 1 and run.report["outcome"] in ("hang", "divergence")
    # rank 0's gradient all-reduce pairs with what rank 1 issued next: the loss
    # all-reduce (Python level), or with the flight recorder's ops merged, DDP's
    # next-forward broadcast (c10d level)
    assert run.first["kind"] in ("tensors", "op")
    backward = run.rank(0)["call"]
    assert "DDP gradient" in backward["label"]
    assert backward["site"]["line"] == line_of("nan_skip.py", "loss.backward()")
    later = run.rank(1)["call"]
    assert later["site"]["line"] in (
        line_of("nan_skip.py", "dist.all_reduce(total)"),
        line_of("nan_skip.py", "loss = nn.functional.mse_loss(model(x), y)"),
    )
    assert_mapped(run, "DDP204", "nan_skip.py", backward["site"]["line"])
    skip = mapped_reasons(run, [constructed("nan_skip.py", "continue")])
    # the probes saw the `continue` run on rank 1 (the rank with the NaN) only
    assert skip == ["the flagged early exit ran on rank 1 and skips the call path"]


def test_reduce_op_mismatch_is_found_without_a_hang(verify) -> None:  # type: ignore[no-untyped-def]
    run = verify("fixtures.verify.reduce_op_mismatch:main", "--timeout", "3")
    assert run.code == 1 and run.report["outcome"] == "divergence"
    assert run.report["hang"] is None
    assert [r["state"] for r in run.report["ranks"]] == ["finished (exit code 0)"] * 2
    assert run.first["kind"] == "reduce_op" and run.first["detail_mode_misses"]
    ops = {r["rank"]: r["call"]["reduce_op"] for r in run.first["ranks"]}
    assert ops == {0: "MAX", 1: "SUM"}
    line = line_of("reduce_op_mismatch.py", "dist.all_reduce(value, op=op)")
    assert {r["call"]["site"]["line"] for r in run.first["ranks"]} == {line}
    # The static check explains it: `is_main=rank == 0` hands the rank to the helper.
    assert_mapped(run, "DDP221", "reduce_op_mismatch.py", line)


def test_clean_script_reports_no_divergence(verify) -> None:  # type: ignore[no-untyped-def]
    run = verify("fixtures/verify/clean_ddp.py", "--timeout", "3", "--checksum")
    assert run.code == 0 and run.report["outcome"] == "clean", run.report
    assert run.report["divergences"] == [] and run.report["call_site_mismatches"] == []
    assert run.report["new"] == []
    assert all(r["state"] == "finished (exit code 0)" for r in run.report["ranks"])
    lines = (run.trace_dir / "rank-1.jsonl").read_text().splitlines()
    ops = [json.loads(line)["op"] for line in lines if '"call"' in line]
    assert ops[:3] == [
        "broadcast_object_list",
        "_verify_params_across_processes",
        "_broadcast_coalesced",
    ]
    assert "barrier" in ops and ops.count("all_reduce") > 8  # DDP gradients, then the loss
    [checksum] = run.report["checksums"]
    assert checksum["identical"] and checksum["name"] == "DistributedDataParallel(Sequential)"


def test_checksum_spread_shows_silently_diverged_parameters(verify) -> None:  # type: ignore[no-untyped-def]
    run = verify("fixtures/verify/step_on_some_ranks.py", "--timeout", "3", "--checksum")
    assert run.report["divergences"] == [] and run.report["hang"] is None
    assert run.report["outcome"] == "params-differ" and run.code == 1
    [checksum] = run.report["checksums"]
    assert not checksum["identical"] and checksum["sum_spread"] > 0
    assert set(checksum["ranks"]) == {"0", "1"}
