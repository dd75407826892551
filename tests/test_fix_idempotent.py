"""Every fixture of every rule, through ``check --fix --unsafe-fixes`` on a copy on disk:
the result parses, no fix is dropped, and a second run changes nothing.

Fixtures are collected from the tree, so rules added later are covered automatically.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixture_harness import fixture_files, rule_of

from ddplint.cli import cli
from ddplint.fix import syntax_problem
from ddplint.invocation import EXIT_ERROR
from ddplint.source import SourceFile

ALL_FIXTURES = fixture_files()


def _fix(path: Path, code: str) -> tuple[int, str]:
    args = ["check", "--no-cache", "--fix", "--unsafe-fixes", "--select", code, path.name]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    return result.exit_code, result.stdout + result.stderr


@pytest.mark.parametrize("fixture", ALL_FIXTURES, ids=lambda p: f"{rule_of(p)}/{p.name}")
def test_fix_twice_changes_nothing_the_second_time(
    fixture: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = rule_of(fixture)
    folder = tmp_path / code
    shutil.copytree(fixture.parent, folder)
    monkeypatch.chdir(folder)
    copy = folder / fixture.name

    status, output = _fix(copy, code)
    assert status != EXIT_ERROR, output
    once = copy.read_bytes()
    source = SourceFile.decode(copy.name, once)
    assert syntax_problem(source.kind, source.text) is None

    status, output = _fix(copy, code)
    assert status != EXIT_ERROR, output
    assert copy.read_bytes() == once, f"a second --fix changed {fixture.name}"
    assert " fixed, " not in output
