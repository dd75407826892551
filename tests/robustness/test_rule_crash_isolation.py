"""A crash inside one rule on one file, or of a whole worker process, becomes one error
entry naming the file (and the rule); every other rule and file still runs; exit 2."""

from __future__ import annotations

import faulthandler
import multiprocessing
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from synthetic_rules import catalogue_entry, engine_sees

import ddplint.cli
import ddplint.code.syntax.safe_parse
import ddplint.engine.per_file
import ddplint.engine.selection
import ddplint.engine.suppressions
import ddplint.invocation
from ddplint.code.context import CodeContext
from ddplint.engine import POOL_THRESHOLD
from ddplint.finding import Finding
from ddplint.rule import CodeRule
from ddplint.rules import all_rules
from ddplint.rules.catalogue import CATALOGUE

from .support import HAZARD, run_cli

FILES_FOR_POOL = POOL_THRESHOLD + 6
needs_fork = pytest.mark.skipif(
    multiprocessing.get_start_method() != "fork",
    reason="the test double reaches worker processes only when they are forked",
)


class CrashingRule(CodeRule):
    """Test double: raises on files saying CRASH_HERE, kills its process on KILL_WORKER,
    returns a non-finding on MALFORMED."""

    code = "DDP990"
    name = "crashing-rule"
    summary = "crashes on purpose"
    needles = ("CRASH_HERE", "KILL_WORKER", "MALFORMED")
    crash = True

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        text = ctx.source.text
        if "KILL_WORKER" in text:
            os._exit(70)
        if "CRASH_HERE" in text and self.crash:
            raise RuntimeError(f"boom in process {os.getpid()}")
        if "MALFORMED" in text:
            yield "not a finding"  # type: ignore[misc]


@pytest.fixture
def crashing_rule(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[CrashingRule]]:
    catalogue = {**all_rules(), CrashingRule.code: CrashingRule}
    entries = {**CATALOGUE, CrashingRule.code: catalogue_entry(CrashingRule, default_enabled=True)}
    monkeypatch.setattr(ddplint.engine.selection, "CATALOGUE", entries)
    monkeypatch.setattr(ddplint.engine.suppressions, "CATALOGUE", entries)
    monkeypatch.setattr(ddplint.cli, "all_rules", lambda: catalogue)
    monkeypatch.setattr(ddplint.invocation, "CATALOGUE", entries)
    engine_sees(monkeypatch, catalogue)
    yield CrashingRule


def _write(project: Path, count: int, special: dict[str, str]) -> None:
    for number in range(count - len(special)):
        (project / f"net_{number:02}.py").write_text(HAZARD)
    for name, marker in special.items():
        (project / name).write_text(HAZARD + f"# {marker}\n")


def _check(*args: str) -> list[str]:
    return ["check", "--select", "DDP101,DDP990", "--format", "json", *args]


def test_rule_crash_in_process(project: Path, crashing_rule: type[CrashingRule]) -> None:
    _write(project, 3, {"crash.py": "CRASH_HERE"})
    run = run_cli(*_check("--no-cache", "-j", "1"))
    assert run.code == 2
    # DDP101 still ran on the file where DDP990 crashed, and on every other file.
    assert run.findings_by_path() == {
        "crash.py": [(7, 9)],
        "net_00.py": [(7, 9)],
        "net_01.py": [(7, 9)],
    }
    (error,) = run.json()["errors"]
    assert error["path"] == "crash.py" and error["rule"] == "DDP990"
    assert (
        error["message"]
        == f"internal error in rule DDP990: RuntimeError: boom in process {os.getpid()}"
    )

    concise = run_cli("check", "--select", "DDP101,DDP990", "--no-cache", "-j", "1")
    assert concise.code == 2 and "Traceback" not in concise.err
    assert "crash.py: error: internal error in rule DDP990: RuntimeError: boom" in concise.err


def test_rule_crash_is_not_cached(project: Path, crashing_rule: type[CrashingRule]) -> None:
    _write(project, 2, {"crash.py": "CRASH_HERE"})
    assert run_cli(*_check("-j", "1")).code == 2
    crashing_rule.crash = False
    try:
        run = run_cli(*_check("-j", "1"))
    finally:
        crashing_rule.crash = True
    assert run.code == 1 and run.json()["errors"] == []


@needs_fork
@pytest.mark.slow
def test_rule_crash_in_process_pool(project: Path, crashing_rule: type[CrashingRule]) -> None:
    _write(project, FILES_FOR_POOL, {"crash_a.py": "CRASH_HERE", "crash_b.py": "CRASH_HERE"})
    run = run_cli(*_check("--no-cache", "-j", "2"))
    assert run.code == 2
    findings = run.findings_by_path()
    assert len(findings) == FILES_FOR_POOL and set(map(tuple, findings.values())) == {((7, 9),)}
    errors = run.errors_by_path()
    assert sorted(errors) == ["crash_a.py", "crash_b.py"]
    for (message,) in errors.values():
        assert message.startswith("internal error in rule DDP990: RuntimeError: boom in process")
        assert not message.endswith(f" {os.getpid()}")  # raised in a worker, not here


@needs_fork
@pytest.mark.slow
def test_killed_worker_becomes_an_error_entry(
    project: Path, crashing_rule: type[CrashingRule]
) -> None:
    _write(project, FILES_FOR_POOL, {"kill.py": "KILL_WORKER"})
    run = run_cli(*_check("--no-cache", "-j", "2"))
    assert run.code == 2
    assert run.errors_by_path() == {
        "kill.py": ["internal error: the worker process died while linting this file"]
    }
    findings = run.findings_by_path()
    assert "kill.py" not in findings and len(findings) == FILES_FOR_POOL - 1


@needs_fork
@pytest.mark.slow
def test_native_parser_crash_becomes_an_error_entry(
    project: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """Without the nesting guard and the deep stack, LibCST's native parser overflows the
    worker's stack on 3,000 nested parentheses (SIGSEGV): one error, the rest linted."""
    if faulthandler.is_enabled():  # the dying worker would print its stack into the log
        faulthandler.disable()
        request.addfinalizer(faulthandler.enable)
    monkeypatch.setattr(ddplint.code.syntax.safe_parse, "check_nesting", lambda text: None)
    monkeypatch.setattr(
        ddplint.engine.per_file, "call_with_deep_stack", lambda function, *args: function(*args)
    )
    _write(project, FILES_FOR_POOL - 1, {})
    (project / "deep.py").write_text(
        "torch.cuda.synchronize()\nx = " + "(" * 3000 + "1" + ")" * 3000 + "\n"
    )
    run = run_cli("check", "--format", "json", "--no-cache", "-j", "2")
    assert run.code == 2
    assert run.errors_by_path() == {
        "deep.py": ["internal error: the worker process died while linting this file"]
    }
    assert len(run.findings_by_path()) == FILES_FOR_POOL - 1


def test_bug_outside_any_rule_becomes_an_error_entry(
    project: Path, crashing_rule: type[CrashingRule]
) -> None:
    _write(project, 2, {"odd.py": "MALFORMED"})
    run = run_cli(*_check("--no-cache", "-j", "1"))
    assert run.code == 2
    (message,) = run.errors_by_path()["odd.py"]
    assert message.startswith("internal error: AttributeError: 'str' object has no attribute")
    assert run.findings_by_path() == {"net_00.py": [(7, 9)]}
