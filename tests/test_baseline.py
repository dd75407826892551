"""``--write-baseline`` / ``--baseline`` on a real project: only new findings are
reported, entries survive edits above them, stale entries are reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import HAZARD, SYNC, WORK
from cli_support import check as run


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text(HAZARD)
    (tmp_path / "pkg" / "b.py").write_text(HAZARD.replace(SYNC, SYNC + WORK + SYNC))
    code, _, err = run("--write-baseline", "baseline.json")
    assert code == 0 and "wrote 3 findings to baseline baseline.json" in err
    return tmp_path


def test_baseline_file_has_no_line_numbers(project: Path) -> None:
    data = json.loads((project / "baseline.json").read_text())
    assert data["version"] == 1
    entries = data["findings"]
    assert [(e["path"], e["rule"]) for e in entries] == sorted(
        [("pkg/a.py", "DDP101"), ("pkg/b.py", "DDP101"), ("pkg/b.py", "DDP101")]
    )
    assert all(set(e) == {"path", "rule", "fingerprint"} for e in entries)
    assert len({e["fingerprint"] for e in entries}) == 3, "same text, told apart by occurrence"


def test_known_findings_are_hidden(project: Path) -> None:
    code, out, err = run("--baseline", "baseline.json")
    assert code == 0 and err == ""
    assert out == "All checks passed. 3 findings in the baseline not shown.\n"


def test_edits_above_and_reformatting_keep_entries(project: Path) -> None:
    path = project / "pkg" / "a.py"
    text = '"""Docs."""\n\nimport os\n\n' + path.read_text()
    text = text.replace("torch.cuda.synchronize()", "torch.cuda.synchronize(\n        )")
    path.write_text(text)
    assert run("--baseline", "baseline.json")[0] == 0


def test_new_finding_is_reported(project: Path) -> None:
    path = project / "pkg" / "a.py"
    path.write_text(HAZARD.replace(SYNC, SYNC + WORK + "        torch.cuda.synchronize()  # new\n"))
    code, out, _ = run("--baseline", "baseline.json")
    assert code == 1
    first, _hint, summary = out.splitlines()
    assert first.startswith("pkg/a.py:9:9: DDP101")
    assert summary.endswith(" 3 findings in the baseline not shown.")


def test_same_text_again_counts_as_new_once(project: Path) -> None:
    path = project / "pkg" / "b.py"
    path.write_text(HAZARD.replace(SYNC, (SYNC + WORK) * 2 + SYNC))
    code, out, _ = run("--baseline", "baseline.json")
    assert code == 1 and out.count(": DDP101 ") == 1


def test_stale_entries_are_reported(project: Path) -> None:
    (project / "pkg" / "a.py").write_text(HAZARD.replace(SYNC, ""))
    code, _, err = run("--baseline", "baseline.json")
    assert code == 0
    lines = err.splitlines()
    assert lines[0].startswith(
        "ddplint: notice: 1 baseline entry in baseline.json matches no finding"
    )
    assert lines[1].startswith("  pkg/a.py: DDP101 (")


def test_deleted_file_entries_are_stale_other_unlinted_files_are_not(project: Path) -> None:
    (project / "pkg" / "a.py").unlink()
    (project / "other").mkdir()
    (project / "other" / "c.py").write_text("x = 1\n")
    _, _, err = run("--baseline", "baseline.json", "other")
    assert "pkg/a.py: DDP101" in err and "pkg/b.py" not in err


def test_paths_are_from_the_project_root(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project / "pkg")
    code, out, _ = run("--baseline", "../baseline.json", ".")
    assert code == 0 and out.startswith("All checks passed.")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not valid JSON"),
        ('{"version": 7, "findings": []}', "is not a ddplint baseline"),
        ('{"version": 1, "findings": [{"path": "x"}]}', "malformed entry"),
    ],
)
def test_bad_baseline_is_an_error(project: Path, content: str, message: str) -> None:
    (project / "bad.json").write_text(content)
    code, _, err = run("--baseline", "bad.json")
    assert code == 2 and message in err


def test_missing_baseline_and_both_options(project: Path) -> None:
    code, _, err = run("--baseline", "nope.json")
    assert code == 2 and "cannot read baseline nope.json" in err
    code, _, err = run("--baseline", "baseline.json", "--write-baseline", "x.json")
    assert code == 2 and "cannot be used together" in err
