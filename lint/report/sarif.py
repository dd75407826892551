"""``--format sarif``: SARIF 2.1.0 for code-scanning services (GitHub, Azure DevOps).

One run; the driver lists every rule with its summary and documentation (help text);
each result carries its location, a fingerprint (the baseline's, stable under edits
above it) and its fix as replacements. Columns count code points
(``columnKind: unicodeCodePoints``), as ddplint's do; region ends are exclusive, as in
SARIF. Paths relative to the working directory use the ``SRCROOT`` base.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ddplint import __version__
from ddplint.baseline import entries_for
from ddplint.finding import Edit, FileError, Finding, Severity
from ddplint.report.printable import json_document
from ddplint.results import RunResult
from ddplint.rules import all_rules

if TYPE_CHECKING:
    from ddplint.report import ReportContext

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
SOURCE_ROOT = "SRCROOT"
FINGERPRINT_KEY = "ddplint/v1"
LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def artifact_location(path: str) -> dict[str, str]:
    """An absolute ``file:`` URI, or a relative one against ``SRCROOT`` (the cwd)."""
    if Path(path).is_absolute():
        return {"uri": Path(path).as_uri()}
    return {"uri": quote(os.fsencode(Path(path).as_posix())), "uriBaseId": SOURCE_ROOT}


def _directory_uri(directory: Path) -> str:
    uri = directory.as_uri()
    return uri if uri.endswith("/") else uri + "/"


def _region(line: int, column: int, end_line: int, end_column: int) -> dict[str, int]:
    return {"startLine": line, "startColumn": column, "endLine": end_line, "endColumn": end_column}


def _rule_descriptor(code: str) -> dict[str, Any]:
    rule = all_rules()[code]
    documentation = rule.documentation()
    fix = rule.fix_applicability.value if rule.fix_applicability else "none"
    return {
        "id": code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.summary},
        "help": {"text": documentation, "markdown": documentation},
        "defaultConfiguration": {
            "enabled": rule.default_enabled,
            "level": LEVELS[rule.severity],
        },
        "properties": {"fix": fix, "preview": not rule.default_enabled},
    }


def _replacement(edit: Edit) -> dict[str, Any]:
    return {
        "deletedRegion": _region(edit.line, edit.column, edit.end_line, edit.end_column),
        "insertedContent": {"text": edit.content},
    }


def _result(finding: Finding, rule_index: dict[str, int], fingerprint: str) -> dict[str, Any]:
    location = artifact_location(finding.path)
    result: dict[str, Any] = {
        "ruleId": finding.rule,
        "level": LEVELS[finding.severity],
        "message": {"text": finding.message},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": location,
                    "region": _region(
                        finding.line, finding.column, finding.end_line, finding.end_column
                    ),
                }
            }
        ],
        "partialFingerprints": {FINGERPRINT_KEY: fingerprint},
    }
    if finding.rule in rule_index:
        result["ruleIndex"] = rule_index[finding.rule]
    if finding.key_path is not None:
        result["locations"][0]["logicalLocations"] = [
            {"fullyQualifiedName": finding.key_path, "kind": "member"}
        ]
    if finding.related:
        result["relatedLocations"] = [
            {
                "id": number,
                "message": {"text": place.message},
                "physicalLocation": {
                    "artifactLocation": location,
                    "region": {"startLine": place.line, "startColumn": place.column},
                },
            }
            for number, place in enumerate(finding.related, start=1)
        ]
    if finding.fix is not None:
        result["fixes"] = [
            {
                "description": {"text": finding.fix.message or "Apply the suggested fix"},
                "artifactChanges": [
                    {
                        "artifactLocation": location,
                        "replacements": [_replacement(e) for e in finding.fix.edits],
                    }
                ],
            }
        ]
        result["properties"] = {"fixApplicability": finding.fix.applicability.value}
    return result


def _notification(error: FileError) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": artifact_location(error.path)}
    if error.line is not None:
        physical["region"] = {"startLine": error.line, "startColumn": error.column or 1}
    notification: dict[str, Any] = {
        "level": "error",
        "message": {"text": error.message},
        "locations": [{"physicalLocation": physical}],
    }
    if error.rule is not None:
        notification["associatedRule"] = {"id": error.rule}
    return notification


def render_sarif(result: RunResult, context: ReportContext) -> str:
    catalogue = all_rules()
    codes = list(catalogue)
    rule_index = {code: position for position, code in enumerate(codes)}
    fingerprints = entries_for(result.findings, context.read_lines, lambda path: path)
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "ddplint",
                "version": __version__,
                "semanticVersion": __version__,
                "rules": [_rule_descriptor(code) for code in codes],
            }
        },
        "originalUriBaseIds": {SOURCE_ROOT: {"uri": _directory_uri(Path.cwd())}},
        "columnKind": "unicodeCodePoints",
        "results": [_result(f, rule_index, entry.fingerprint) for f, entry in fingerprints],
        "invocations": [
            {
                "executionSuccessful": not result.errors and not result.internal_error,
                "toolExecutionNotifications": [_notification(e) for e in result.errors],
            }
        ],
    }
    document = {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}
    return json_document(document)
