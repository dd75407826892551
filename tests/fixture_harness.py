"""Shared by the fixture tests: lint one fixture file with one rule, render, fix."""

from __future__ import annotations

import difflib
from pathlib import Path

from ddplint import code_facts
from ddplint.code.fact_collectors import COLLECTORS, collect_facts
from ddplint.config.launch_scripts import launches
from ddplint.engine import FileOutcome, lint_source
from ddplint.fix import apply_edits, choose_fixes
from ddplint.rules import all_rules
from ddplint.settings import LintOptions
from ddplint.source import SourceFile

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "rules"
SUFFIXES = (".py", ".yaml", ".yml", ".json")


def fixture_files(code: str | None = None) -> list[Path]:
    """Every fixture input (not ``*.fixed.*``), optionally of one rule."""
    folders = [FIXTURES / code] if code else sorted(p for p in FIXTURES.iterdir() if p.is_dir())
    return sorted(
        path
        for folder in folders
        for path in folder.iterdir()
        if path.suffix in SUFFIXES and ".fixed" not in path.suffixes
    )


def rule_of(path: Path) -> str:
    return path.parent.name


#: Rules whose fixtures run with every rule selected: DDP900 judges the suppressions
#: of the others, which must have run.
WITH_EVERY_RULE = frozenset({"DDP900"})


def lint_fixture(path: Path, **option_overrides: object) -> FileOutcome:
    display = path.relative_to(ROOT).as_posix()
    code = rule_of(path)
    selected = tuple(all_rules()) if code in WITH_EVERY_RULE else (code,)
    if "facts" not in option_overrides:
        option_overrides["facts"] = _code_facts_beside(path)
    options = LintOptions(selected=selected, project_root=str(ROOT), **option_overrides)  # type: ignore[arg-type]
    return lint_source(display, path.read_bytes(), options)


def _code_facts_beside(path: Path) -> tuple[tuple[str, str], ...]:
    """The code facts of a config fixture as the engine hands them to config rules: of
    the Python beside it (``NAME.code``) and of its launch scripts (``NAME*.sh``)."""
    per_file: list[tuple[str, dict[str, list[code_facts.Record]]]] = []
    code_file = path.with_suffix(".code")
    if code_file.exists():
        facts = collect_facts(code_file.read_text(), list(COLLECTORS.values()))
        per_file.append((f"{path.stem}.py", facts))
    scripts = sorted(path.parent.glob(f"{path.stem}*.sh")) if path.suffix != ".py" else []
    per_file += [
        (script.relative_to(ROOT).as_posix(), {code_facts.LAUNCHES: records})
        for script in scripts
        if (records := [launch.to_record() for launch in launches(script.read_text())])
    ]
    if not per_file:
        return ()
    return ((code_facts.OPTIONS_KEY, code_facts.encode(code_facts.merge(per_file))),)


def expected_lines(path: Path) -> list[str]:
    expected = path.with_suffix(".expected")
    if not expected.exists():
        return []
    return [line for line in expected.read_text().splitlines() if line.strip()]


def finding_lines(outcome: FileOutcome) -> list[str]:
    return [f"{f.line}:{f.column} {f.rule}" for f in outcome.findings]


def fixed_path(path: Path) -> Path:
    return path.with_name(f"{path.stem}.fixed{path.suffix}")


def apply_all_fixes(path: Path, outcome: FileOutcome) -> str:
    """The file after every offered fix (safe and unsafe), one pass."""
    source = SourceFile.decode(path.name, path.read_bytes())
    _, edits = choose_fixes(outcome.findings, unsafe=True)
    return apply_edits(source, edits)


def unified_diff(before: str, after: str, name: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{name}",
            tofile=f"b/{name}",
        )
    )
