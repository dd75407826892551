"""File names that are not valid UTF-8 or hold control characters (M7, L10): every
format renders them (SARIF, JUnit and JSON stay well-formed UTF-8), baselines round-trip
them, and human output escapes them so they cannot drive the terminal or a CI log."""

from __future__ import annotations

import json
import os
import subprocess
import xml.dom.minidom
from pathlib import Path

import pytest

from ddplint.report.printable import printable

from .support import CHECK_COMMAND, HAZARD

#: Names as raw bytes: undecodable (latin-1), newline, escape sequence, CR, bidi override.
ODD_NAMES = (
    b"bad\xff.py",
    b"new\nline.py",
    b"esc\x1b[31mred.py",
    b"cr\rname.py",
    "rtl\u202eyp.py".encode(),
    "ünï©ødé.py".encode(),
)


@pytest.fixture
def odd_project(project: Path) -> Path:
    for name in ODD_NAMES:
        (project / os.fsdecode(name)).write_text(HAZARD)
    return project


def _ddplint(*args: str, strict: bool = False) -> subprocess.CompletedProcess[bytes]:
    """The real executable's bytes on stdout and stderr (no text decoding in between);
    ``strict``: stdout refuses what is not UTF-8, as under most UTF-8 locales."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"} if strict else None
    return subprocess.run(
        [
            *CHECK_COMMAND,
            *args,
        ],
        capture_output=True,
        timeout=120,
        env=env,
    )


@pytest.mark.parametrize("output_format", ["concise", "full", "json", "sarif", "junit", "github"])
def test_every_format_writes_valid_utf8_for_odd_names(
    odd_project: Path, output_format: str
) -> None:
    done = _ddplint("--format", output_format, ".", strict=True)
    assert done.returncode == 1, done.stderr.decode(errors="replace")
    assert b"Traceback" not in done.stderr
    out = done.stdout.decode("utf-8")
    assert "\x1b" not in out  # no raw escape character reaches the terminal or CI log


def test_undecodable_name_in_sarif_junit_and_json(odd_project: Path) -> None:
    for output_format in ("sarif", "junit", "json"):
        done = _ddplint("--format", output_format, ".")
        assert done.returncode == 1, done.stderr.decode(errors="replace")
        assert b"Traceback" not in done.stderr
        text = done.stdout.decode("utf-8")  # strict: the report is valid UTF-8
        if output_format == "junit":
            cases = xml.dom.minidom.parseString(done.stdout).getElementsByTagName("testcase")
            assert len(cases) == len(ODD_NAMES)
            assert "bad\\xff.py" in text
        else:
            document = json.loads(text)
            if output_format == "sarif":
                uris = {
                    r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                    for r in document["runs"][0]["results"]
                }
                assert "bad%FF.py" in uris and "new%0Aline.py" in uris
            else:
                paths = {f["path"] for f in document["findings"]}
                assert {os.fsencode(p) for p in paths} == set(ODD_NAMES)


def test_human_output_escapes_control_characters(odd_project: Path) -> None:
    for output_format in ("concise", "full"):
        done = _ddplint("--format", output_format, ".")
        assert done.returncode == 1
        out = done.stdout.decode("utf-8")
        for forbidden in ("\x1b", "\r", "\u202e", "new\nline"):
            assert forbidden not in out
        for shown in ("bad\\xff.py:7:9", "new\\nline.py:7:9", "esc\\x1b[31mred.py:7:9"):
            assert shown in out
        assert "ünï©ødé.py:7:9" in out  # printable non-ASCII names stay as they are


def test_errors_about_odd_names_are_escaped(project: Path) -> None:
    (project / "broken\x1b]0;title\x07.py").write_text(HAZARD + "def f(:\n")
    done = _ddplint(".")
    assert done.returncode == 2
    err = done.stderr.decode("utf-8")
    assert "\x1b" not in err and "\x07" not in err
    assert "broken\\x1b]0;title\\x07.py:9:7: error:" in err


def test_baseline_round_trips_undecodable_names(odd_project: Path) -> None:
    written = _ddplint("--write-baseline", "bl.json", ".")
    assert written.returncode == 0, written.stderr.decode(errors="replace")
    (odd_project / "bl.json").read_text(encoding="utf-8")  # valid UTF-8
    again = _ddplint("--baseline", "bl.json", ".")
    assert again.returncode == 0, again.stderr.decode(errors="replace")
    assert f"{len(ODD_NAMES)} findings in the baseline not shown" in again.stdout.decode()


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain/path.py", "plain/path.py"),
        ("tab\there", "tab\\there"),
        ("del\x7f", "del\\x7f"),
        ("c1\x9b", "c1\\x9b"),
        (os.fsdecode(b"latin\xe9"), "latin\\xe9"),
        ("isolate\u2066x", "isolate\\u2066x"),
        ("日本語 name", "日本語 name"),
    ],
)
def test_printable(text: str, shown: str) -> None:
    assert printable(text) == shown
