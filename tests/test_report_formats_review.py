"""Code-review formats end to end: GitLab Code Quality, reviewdog's rdjson and JSON
lines, each checked against the fields its consumer documents."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from cli_support import HAZARD, SYNC, WORK
from cli_support import check as run

#: GitLab's Code Quality report: the fields GitLab requires, and its severity levels.
GITLAB_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["description", "check_name", "fingerprint", "severity", "location"],
        "properties": {
            "description": {"type": "string", "minLength": 1},
            "check_name": {"type": "string", "minLength": 1},
            "fingerprint": {"type": "string", "minLength": 1},
            "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
            "location": {
                "type": "object",
                "required": ["path", "lines"],
                "properties": {
                    "path": {"type": "string"},
                    "lines": {
                        "type": "object",
                        "required": ["begin"],
                        "properties": {"begin": {"type": "integer", "minimum": 1}},
                    },
                },
            },
        },
    },
}
_POSITION = {
    "type": "object",
    "required": ["line", "column"],
    "properties": {"line": {"type": "integer"}, "column": {"type": "integer"}},
}
_RANGE = {
    "type": "object",
    "required": ["start"],
    "properties": {"start": _POSITION, "end": _POSITION},
}
#: reviewdog's DiagnosticResult (reviewdog.proto, rdf/jsonschema): the fields used here.
RDJSON_SCHEMA = {
    "type": "object",
    "required": ["diagnostics"],
    "properties": {
        "source": {"type": "object", "required": ["name"]},
        "diagnostics": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["message", "location"],
                "properties": {
                    "message": {"type": "string"},
                    "location": {
                        "type": "object",
                        "required": ["path"],
                        "properties": {"path": {"type": "string"}, "range": _RANGE},
                    },
                    "severity": {"enum": ["UNKNOWN_SEVERITY", "ERROR", "WARNING", "INFO"]},
                    "code": {"type": "object", "required": ["value"]},
                    "suggestions": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["range", "text"],
                            "properties": {"range": _RANGE, "text": {"type": "string"}},
                        },
                    },
                },
            },
        },
    },
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two syncs in one forward (one fixable) after a non-ASCII line, and a broken file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    text = HAZARD.replace(SYNC, "        é = 1; torch.cuda.synchronize()\n" + WORK + SYNC)
    (tmp_path / "pkg" / "net.py").write_text(text, encoding="utf-8")
    (tmp_path / "pkg" / "broken.py").write_text("def f(:\n    torch.cuda.synchronize()\n")
    return tmp_path


def test_gitlab_code_quality(project: Path) -> None:
    code, out, err = run("--output-format", "gitlab")
    assert code == 2
    issues = json.loads(out)
    jsonschema.validate(issues, GITLAB_SCHEMA)
    assert [(i["check_name"], i["location"]["lines"]["begin"]) for i in issues] == [
        ("DDP101", 7),
        ("DDP101", 9),
    ]
    assert {i["severity"] for i in issues} == {"major"}  # DDP101 is a warning
    assert len({i["fingerprint"] for i in issues}) == 2
    assert issues[0]["location"]["path"] == "pkg/net.py"
    assert "blocks the host" in issues[0]["description"]
    # The broken file has no place in the report: its error is on stderr, exit 2.
    assert "pkg/broken.py:1:7: error: cannot parse" in err


def test_gitlab_paths_are_relative_to_the_checkout(project: Path) -> None:
    _, out, _ = run("--output-format", "gitlab", str(project / "pkg" / "net.py"))
    assert {i["location"]["path"] for i in json.loads(out)} == {"pkg/net.py"}


def test_rdjson(project: Path) -> None:
    code, out, err = run("--output-format", "rdjson")
    assert code == 2 and "pkg/broken.py" in err
    document = json.loads(out)
    jsonschema.validate(document, RDJSON_SCHEMA)
    assert document["source"]["name"] == "ddplint"
    first, second = document["diagnostics"]
    assert first["code"]["value"] == "DDP101" and first["severity"] == "WARNING"
    # `é` is one character but two UTF-8 bytes: the column moves by one.
    assert first["location"]["range"] == {
        "start": {"line": 7, "column": 17},
        "end": {"line": 7, "column": 41},
    }
    (suggestion,) = second["suggestions"]
    assert suggestion == {
        "range": {"start": {"line": 9, "column": 1}, "end": {"line": 10, "column": 1}},
        "text": "",
    }


def test_json_lines(project: Path) -> None:
    code, out, err = run("--output-format", "json-lines")
    assert code == 2 and "pkg/broken.py" in err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["rule"], r["line"]) for r in rows] == [("DDP101", 7), ("DDP101", 9)]
    assert all(r["summary"] and r["message"] for r in rows)
    _, full, _ = run("--output-format", "json")
    assert rows == json.loads(full)["findings"]


def test_output_format_variable(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DDPLINT_OUTPUT_FORMAT", "json-lines")
    _, out, _ = run()
    assert json.loads(out.splitlines()[0])["rule"] == "DDP101"
    _, out, _ = run("--output-format", "concise")  # the flag wins
    assert out.startswith("pkg/net.py:7:16: DDP101")
    _, out, _ = run("--format", "gitlab")  # the old name still works
    assert json.loads(out)[0]["check_name"] == "DDP101"
