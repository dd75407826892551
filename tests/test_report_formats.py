"""CI formats end to end: SARIF (validated against the OASIS 2.1.0 schema), GitHub
workflow annotations (escaping, multi-line spans), JUnit XML (parsed back)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from cli_support import HAZARD, SYNC, WORK
from cli_support import check as run
from sarif_schema import load_schema

from ddplint.report.github import escape_data, escape_property


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft4Validator:
    """The official SARIF 2.1.0 schema (tests/sarif_schema.py says where it comes from)."""
    schema = load_schema()
    if isinstance(schema, str):
        pytest.skip(schema)
    return jsonschema.Draft4Validator(
        schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER
    )


#: One sync with a fix, then one over two lines without (it is assigned).
TWO_SYNCS = HAZARD.replace(SYNC, SYNC + WORK + "        y = torch.cuda.synchronize(\n        )\n")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "we,ird:name.py").write_text(TWO_SYNCS)
    (tmp_path / "pkg" / "broken.py").write_text("def f(:\n    torch.cuda.synchronize()\n")
    return tmp_path


def test_sarif_is_valid_and_complete(project: Path, validator: jsonschema.Draft4Validator) -> None:
    code, out, err = run("--format", "sarif")
    assert code == 2 and err == ""
    document = json.loads(out)
    validator.validate(document)
    (sarif_run,) = document["runs"]
    rules = sarif_run["tool"]["driver"]["rules"]
    first, second = sarif_run["results"]
    rule = rules[first["ruleIndex"]]
    assert rule["id"] == first["ruleId"] == "DDP101"
    assert rule["name"] == "host-sync-in-forward"
    assert "## What it does" in rule["help"]["text"] and rule["help"]["markdown"]
    assert rule["properties"]["fix"] == "unsafe"
    location = first["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "pkg/we%2Cird%3Aname.py", "uriBaseId": "SRCROOT"}
    assert location["region"] == {"startLine": 7, "startColumn": 9, "endLine": 7, "endColumn": 33}
    (change,) = first["fixes"][0]["artifactChanges"]
    assert change["replacements"] == [
        {
            "deletedRegion": {"startLine": 7, "startColumn": 1, "endLine": 8, "endColumn": 1},
            "insertedContent": {"text": ""},
        }
    ]
    assert "fixes" not in second, "an assigned sync has no fix"
    assert second["locations"][0]["physicalLocation"]["region"]["endLine"] == 10
    assert first["partialFingerprints"]["ddplint/v1"] != second["partialFingerprints"]["ddplint/v1"]
    (invocation,) = sarif_run["invocations"]
    assert invocation["executionSuccessful"] is False
    (notice,) = invocation["toolExecutionNotifications"]
    assert notice["level"] == "error" and notice["message"]["text"].startswith("cannot parse")
    assert sarif_run["originalUriBaseIds"]["SRCROOT"]["uri"] == project.resolve().as_uri() + "/"


def test_sarif_schema_rejects_what_it_should(validator: jsonschema.Draft4Validator) -> None:
    document = json.loads(json.dumps({"version": "2.1.0", "runs": [{"tool": {"driver": {}}}]}))
    assert not validator.is_valid(document), "driver.name is required"


def test_sarif_of_a_clean_tree(project: Path, validator: jsonschema.Draft4Validator) -> None:
    for path in (project / "pkg").iterdir():
        path.unlink()
    code, out, _ = run("--format", "sarif", "--output-file", "out.sarif")
    assert (code, out) == (0, "")
    document = json.loads((project / "out.sarif").read_text(encoding="utf-8"))
    validator.validate(document)
    assert document["runs"][0]["results"] == []


@pytest.mark.parametrize(
    ("text", "data", "prop"),
    [
        ("50% done", "50%25 done", "50%25 done"),
        ("a\r\nb", "a%0D%0Ab", "a%0D%0Ab"),
        ("x: y, z", "x: y, z", "x%3A y%2C z"),
    ],
)
def test_github_escaping(text: str, data: str, prop: str) -> None:
    assert (escape_data(text), escape_property(text)) == (data, prop)


def test_github_annotations(project: Path) -> None:
    code, out, err = run("--format", "github")
    assert code == 2 and err == ""
    lines = out.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith(
        "::warning file=pkg/we%2Cird%3Aname.py,line=7,col=9,endLine=7,endColumn=32,"
        "title=DDP101 host-sync-in-forward::`torch.cuda.synchronize()` in `Net.forward`"
    )
    # A span over several lines: GitHub accepts no columns for it.
    assert lines[1].startswith(
        "::warning file=pkg/we%2Cird%3Aname.py,line=9,endLine=10,"
        "title=DDP101 host-sync-in-forward::"
    )
    assert lines[2].startswith("::error file=pkg/broken.py,line=1,col=7,title=ddplint error::")
    assert "cannot parse" in lines[2]


def test_junit_parses_and_counts(project: Path) -> None:
    code, out, _ = run("--format", "junit")
    assert code == 2
    root = ET.fromstring(out)
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("3", "2", "1")
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"pkg/we,ird:name.py", "pkg/broken.py"}
    cases = suites["pkg/we,ird:name.py"].findall("testcase")
    assert [c.get("name") for c in cases] == [
        "DDP101 host-sync-in-forward at 7:9",
        "DDP101 host-sync-in-forward at 9:13",
    ]
    assert [c.get("line") for c in cases] == ["7", "9"]
    failure = cases[0].find("failure")
    assert failure is not None and failure.get("type") == "DDP101"
    assert (failure.text or "").startswith("pkg/we,ird:name.py:7:9: DDP101")
    error = suites["pkg/broken.py"].find("testcase/error")
    assert error is not None and "cannot parse" in (error.get("message") or "")


def test_junit_clean_run_has_one_passing_case(project: Path) -> None:
    for path in (project / "pkg").iterdir():
        path.unlink()
    code, out, _ = run("--format", "junit")
    root = ET.fromstring(out)
    assert code == 0 and (root.get("tests"), root.get("failures")) == ("1", "0")
    (case,) = root.iter("testcase")
    assert case.find("failure") is None


@pytest.mark.parametrize("name", ["sarif", "github", "junit", "json"])
def test_machine_formats_print_no_summary(project: Path, name: str) -> None:
    (project / "pkg" / "broken.py").unlink()
    _, out, err = run("--format", name)
    assert "Found" not in out and err == ""


PARTING = """\
import torch.distributed as dist


def stop_on_rank_zero(batches):
    for batch in batches:
        if dist.get_rank() == 0 and batch.sum() > 0:
            break
        dist.all_reduce(batch)
"""


def test_related_locations_in_sarif_json_and_full_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, validator: jsonschema.Draft4Validator
) -> None:
    """A finding at the root cause names the test and the skipped collective as related
    places: SARIF ``relatedLocations`` (schema-valid), JSON ``related``, full text."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(PARTING)
    selection = ("--select", "DDP201", "--preview", "--no-cache")
    code, out, _ = run("train.py", *selection, "--output-format", "sarif")
    assert code == 1
    document = json.loads(out)
    validator.validate(document)
    (result,) = document["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 7
    related = result["relatedLocations"]
    assert [r["physicalLocation"]["region"] for r in related] == [
        {"startLine": 6, "startColumn": 9},
        {"startLine": 8, "startColumn": 9},
    ]
    assert "all_reduce" in related[1]["message"]["text"]
    code, out, _ = run("train.py", *selection, "--output-format", "json")
    (finding,) = json.loads(out)["findings"]
    assert [(p["line"], p["column"]) for p in finding["related"]] == [(6, 9), (8, 9)]
    code, out, _ = run("train.py", *selection, "--output-format", "full")
    assert "= see train.py:8:9: `all_reduce`, which some ranks skip" in out
