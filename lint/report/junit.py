"""``--format junit``: JUnit XML for CI test dashboards. One ``testsuite`` per file
with findings or errors, one failing ``testcase`` per finding and one erroring
``testcase`` per file error; a clean run is one suite with one passing case."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ddplint.finding import FileError, Finding
from ddplint.report.printable import printable
from ddplint.report.text import concise_line
from ddplint.results import RunResult

if TYPE_CHECKING:
    import xml.etree.ElementTree as ET

    from ddplint.report import ReportContext

# Characters XML 1.0 cannot hold at all, even escaped.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: str) -> str:
    """``text`` as XML 1.0 can hold it: controls and undecodable bytes escaped."""
    return _NOT_XML.sub("\ufffd", printable(text))


def _suite(parent: ET.Element, name: str) -> ET.Element:
    import xml.etree.ElementTree as ET  # (imported when JUnit is asked for)

    return ET.SubElement(parent, "testsuite", name=_clean(name))


def _case(
    suite: ET.Element, path: str, name: str, outcome: str, message: str, kind: str, text: str
) -> ET.Element:
    """A test case named ``name`` for ``path`` that ended in ``outcome`` (failure/error)."""
    import xml.etree.ElementTree as ET

    case = ET.SubElement(suite, "testcase", classname=_clean(path), name=_clean(name))
    case.set("file", _clean(path))
    ended = ET.SubElement(case, outcome, message=_clean(message), type=kind)
    ended.text = _clean(text)
    return case


def _finding_case(suite: ET.Element, finding: Finding) -> None:
    name = f"{finding.rule} {finding.name} at {finding.line}:{finding.column}"
    text = concise_line(finding)
    case = _case(suite, finding.path, name, "failure", finding.message, finding.rule, text)
    case.set("line", str(finding.line))


def _error_case(suite: ET.Element, error: FileError) -> None:
    where = f" at {error.line}:{error.column}" if error.line is not None else ""
    name = f"{error.rule or 'ddplint'} error{where}"
    text = f"{error.path}{where}: error: {error.message}"
    _case(suite, error.path, name, "error", error.message, "error", text)


def _count(element: ET.Element) -> None:
    cases = element.iter("testcase")
    tests = failures = errors = 0
    for case in cases:
        tests += 1
        failures += case.find("failure") is not None
        errors += case.find("error") is not None
    element.set("tests", str(tests))
    element.set("failures", str(failures))
    element.set("errors", str(errors))


def render_junit(result: RunResult, _context: ReportContext) -> str:
    import xml.etree.ElementTree as ET

    root = ET.Element("testsuites", name="ddplint")
    suites: dict[str, ET.Element] = {}
    for finding in result.findings:
        if finding.path not in suites:
            suites[finding.path] = _suite(root, finding.path)
        _finding_case(suites[finding.path], finding)
    for error in result.errors:
        if error.path not in suites:
            suites[error.path] = _suite(root, error.path)
        _error_case(suites[error.path], error)
    if not suites:
        suite = _suite(root, "ddplint")
        ET.SubElement(suite, "testcase", classname="ddplint", name="no findings")
    for suite in root:
        _count(suite)
    _count(root)
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"
