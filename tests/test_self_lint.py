"""ddplint on its own repository: the hazards kept on purpose (the rules' fixtures, the
example project, the verifier's scripts) are excluded by the project's `[tool.ddplint]`,
so `ddplint check --fix` at the root never rewrites them."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ddplint.cli import cli

ROOT = Path(__file__).resolve().parent.parent


def _check(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["check", "--no-cache", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.slow
def test_fixing_the_repository_root_leaves_the_fixtures_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(ROOT)
    code, diff, err = _check("--diff", "--unsafe-fixes")
    assert "fixtures/" not in diff, diff[:2000]
    assert code in (0, 1), err
    code, out, err = _check(".")
    assert "fixtures/" not in out, out[:2000]


def test_fixtures_named_on_their_own_are_still_linted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    code, out, err = _check("--extend-select", "DDP201", "fixtures/rules/DDP201")
    assert code == 1, err
    assert "fixtures/rules/DDP201/" in out and "DDP201" in out
