"""One parse per file where the summary and the lint run in one process (the hook, the
language server, a small project): the lint reads the tree the summary read; a syntax
error is still one clear message; the cache still follows an edit."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest

from ddplint.engine import RunResult, lint_paths
from ddplint.rules import all_rules
from ddplint.settings import LintOptions, Settings

SELECTED = tuple(sorted(code for code in all_rules() if code.startswith("DDP")))

HAZARD = """\
import torch.distributed as dist


def save(state):
    if dist.get_rank() == 0:
        dist.barrier()
"""

CORRECT = """\
import torch.distributed as dist


def save(state):
    dist.barrier()
"""


def run(root: Path, *, use_cache: bool = False) -> RunResult:
    settings = Settings(project_root=root)
    options = LintOptions(selected=SELECTED, project_root=str(root))
    return lint_paths([str(root)], settings, options, jobs=1, use_cache=use_cache)


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times ``ast.parse`` read each text."""
    counted: Counter[str] = Counter()
    real = ast.parse

    def parse(source, *args, **kwargs):
        if isinstance(source, str):
            counted[source] += 1
        return real(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", parse)
    return counted


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DDPLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "project"
    root.mkdir()
    return root


def test_the_summary_and_the_lint_read_one_parse(project: Path, parses: Counter[str]) -> None:
    (project / "checkpoint.py").write_text(HAZARD)
    (project / "helpers.py").write_text(CORRECT)
    result = run(project)
    assert result.stats.summarised == 2 and result.stats.parsed == 2
    assert [(Path(f.path).name, f.rule) for f in result.findings] == [("checkpoint.py", "DDP201")]
    assert parses[HAZARD] == 1 and parses[CORRECT] == 1


def test_a_syntax_error_is_one_clear_message(project: Path) -> None:
    (project / "broken.py").write_text("import torch.distributed as dist\ndef f(:\n    pass\n")
    (project / "checkpoint.py").write_text(HAZARD)
    result = run(project)
    assert [(Path(e.path).name, e.message, e.line) for e in result.errors] == [
        ("broken.py", "cannot parse: invalid syntax", 2)
    ]
    assert [(Path(f.path).name, f.rule) for f in result.findings] == [("checkpoint.py", "DDP201")]


def test_an_edit_is_summarised_and_linted_again(project: Path) -> None:
    path = project / "checkpoint.py"
    path.write_text(CORRECT)
    assert run(project, use_cache=True).findings == []
    again = run(project, use_cache=True)
    assert again.stats.cached == 1 and again.stats.summarised == 0
    path.write_text(HAZARD)
    edited = run(project, use_cache=True)
    assert edited.stats.summarised == 1 and edited.stats.parsed == 1
    assert [f.rule for f in edited.findings] == ["DDP201"]
