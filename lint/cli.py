"""The command line: a thin click layer over settings, engine and reports."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import NoReturn

import click

from ddplint import __version__
from ddplint.baseline import BaselineError, apply_baseline, load_baseline, write_baseline
from ddplint.engine import RunResult, default_jobs, lint_paths
from ddplint.finding import Applicability
from ddplint.fixer import FixRun, fix_run, unified_diff
from ddplint.interrupt import ending_on_signals
from ddplint.invocation import (
    EXIT_CLEAN,
    EXIT_ERROR,
    EXIT_FINDINGS,
    build_options,
    build_settings,
)
from ddplint.progress import Progress
from ddplint.report import FORMATTERS, MACHINE_FORMATS, ReportContext
from ddplint.report.printable import printable
from ddplint.rules import all_rules
from ddplint.settings import LintOptions, Settings, SettingsError, did_you_mean
from ddplint.source import SourceError, SourceFile
from ddplint.verify.command import verify as verify_command


def _read_lines(path: str) -> list[str] | None:
    try:
        raw = Path(path).read_bytes()
        return SourceFile.decode(path, raw).lines
    except (OSError, SourceError):
        return None


def _count(number: int, noun: str, plural: str | None = None) -> str:
    """``1 finding``, ``2 findings``."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


def _summary(result: RunResult, fixed: int = 0, known: int = 0) -> str:
    text = _findings_summary(result, fixed)
    if known:
        text += f" {_count(known, 'finding')} in the baseline not shown."
    return text


def _findings_summary(result: RunResult, fixed: int) -> str:
    if fixed:
        remaining = len(result.findings)
        return (
            f"Found {_count(fixed + remaining, 'finding')} ({fixed} fixed, {remaining} remaining)."
        )
    if not result.findings:
        return "All checks passed." if not result.errors else "No findings."
    safe = sum(1 for f in result.findings if f.fix and f.fix.applicability is Applicability.SAFE)
    unsafe = sum(
        1 for f in result.findings if f.fix and f.fix.applicability is Applicability.UNSAFE
    )
    text = f"Found {_count(len(result.findings), 'finding')}."
    extras = []
    if safe:
        extras.append(f"{safe} fixable with --fix")
    if unsafe:
        extras.append(f"{unsafe} {'more ' if safe else ''}fixable with --unsafe-fixes")
    return text + (f" ({'; '.join(extras)})" if extras else "")


def _statistics(result: RunResult) -> str:
    counts = Counter((f.rule, f.name) for f in result.findings)
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return "".join(f"{n:>5}  {code}  {name}\n" for (code, name), n in rows)


def exit_code(result: RunResult, exit_zero: bool) -> int:
    if result.errors or result.internal_error:
        return EXIT_ERROR
    if result.findings and not exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ddplint")
def cli() -> None:
    """ddplint: find distributed-training hazards before a multi-GPU job is launched."""


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option(
    "--select",
    multiple=True,
    help="Rule codes or prefixes to enable (replaces the default set); ALL for every rule.",
)
@click.option(
    "--extend-select",
    multiple=True,
    help="Rule codes or prefixes to enable on top of the selection.",
)
@click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable.")
@click.option(
    "--preview", is_flag=True, help="Let prefixes and ALL select opt-in (preview) rules too."
)
@click.option(
    "--force-exclude",
    is_flag=True,
    help="Apply the excludes to files named on the command line too (pre-commit).",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(sorted(FORMATTERS)),
    default="concise",
    show_default=True,
)
@click.option(
    "--output-file",
    "-o",
    type=click.Path(dir_okay=False),
    help="Write the report here instead of stdout.",
)
@click.option(
    "--exit-zero", is_flag=True, help="Exit 0 even when there are findings (errors still exit 2)."
)
@click.option("--no-cache", is_flag=True, help="Do not read or write the result cache.")
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes (default: CPU count).",
)
@click.option(
    "--config",
    type=click.Path(exists=True, dir_okay=False),
    help="A pyproject.toml (or TOML file) to read settings from.",
)
@click.option("--statistics", is_flag=True, help="Print a count per rule instead of the findings.")
@click.option("--quiet", "-q", is_flag=True, help="Print findings only: no summary, no notices.")
@click.option("--fix", is_flag=True, help="Apply safe fixes, then report the findings left.")
@click.option(
    "--unsafe-fixes",
    is_flag=True,
    help="Apply unsafe fixes too (implies --fix): review the result.",
)
@click.option(
    "--diff",
    is_flag=True,
    help="Print the fixes as a unified diff instead of writing them; exit 1 if there is one.",
)
@click.option(
    "--baseline",
    "baseline_file",
    type=click.Path(dir_okay=False),
    help="Report only findings not recorded in this baseline file.",
)
@click.option(
    "--write-baseline",
    "write_baseline_file",
    type=click.Path(dir_okay=False),
    help="Record the current findings in this file (a baseline) and exit.",
)
@ending_on_signals
def check(
    paths: tuple[str, ...],
    select: tuple[str, ...],
    extend_select: tuple[str, ...],
    ignore: tuple[str, ...],
    preview: bool,
    force_exclude: bool,
    output_format: str,
    output_file: str | None,
    exit_zero: bool,
    no_cache: bool,
    jobs: int | None,
    config: str | None,
    statistics: bool,
    quiet: bool,
    fix: bool,
    unsafe_fixes: bool,
    diff: bool,
    baseline_file: str | None,
    write_baseline_file: str | None,
) -> None:
    """Lint Python files and training YAML under PATHS (default: the current folder)."""
    paths = paths or (".",)
    if baseline_file and write_baseline_file:
        raise click.UsageError("--baseline and --write-baseline cannot be used together")
    try:
        settings = build_settings(
            paths, config, select, extend_select, ignore, preview, force_exclude
        )
        options = build_options(settings)
    except SettingsError as exc:
        _fail(str(exc))
    machine = output_format in MACHINE_FORMATS
    progress = Progress(sys.stderr, enabled=not machine and not quiet)
    result = lint_paths(
        list(paths),
        settings,
        options,
        jobs=jobs or default_jobs(),
        use_cache=not no_cache,
        progress=progress.update,
    )
    progress.finish()
    fixed = known = 0
    if fix or unsafe_fixes or diff:
        run = fix_run(result, settings, options, unsafe=unsafe_fixes, write=not diff, jobs=jobs)
        if diff:
            sys.exit(_print_diff(run, quiet))
        result, fixed = run.result, run.fixed_count
    if write_baseline_file:
        sys.exit(_write_baseline(Path(write_baseline_file), result, settings, quiet))
    if baseline_file:
        result, known = _apply_baseline(Path(baseline_file), result, settings, options, quiet)
    if statistics and not machine:
        report = _statistics(result)
    else:
        report = FORMATTERS[output_format](result, ReportContext(read_lines=_read_lines))
    if not machine and not quiet:
        report += _summary(result, fixed, known) + "\n"
    if output_file:
        try:
            Path(output_file).write_text(report, encoding="utf-8")
        except OSError as exc:
            click.echo(
                f"ddplint: error: cannot write {output_file}: {exc.strerror or exc}", err=True
            )
            sys.exit(EXIT_ERROR)
    else:
        click.echo(report, nl=False)
    if not machine:
        _print_errors(result)
        if not quiet:
            for notice in result.notices:
                click.echo(f"ddplint: notice: {printable(notice)}", err=True)
    sys.exit(exit_code(result, exit_zero))


def _fail(message: str) -> NoReturn:
    """Bad usage, settings or baseline: say why and exit 2."""
    click.echo(f"ddplint: error: {message}", err=True)
    sys.exit(EXIT_ERROR)


def _print_errors(result: RunResult) -> None:
    for error in result.errors:
        where = f":{error.line}:{error.column}" if error.line is not None else ""
        click.echo(printable(f"{error.path}{where}: error: {error.message}"), err=True)


def _print_diff(run: FixRun, quiet: bool) -> int:
    """``--diff``: the fixes as a unified diff on stdout; the exit code."""
    changed = run.changed_files
    for file in changed:
        click.echo(unified_diff(file.path, file.before, file.after), nl=False)
    _print_errors(run.result)
    if not quiet:
        click.echo(
            f"Would fix {_count(run.fixed_count, 'finding')} in {_count(len(changed), 'file')}.",
            err=True,
        )
    if run.result.errors or run.result.internal_error:
        return EXIT_ERROR
    return EXIT_FINDINGS if changed else EXIT_CLEAN


def _write_baseline(file: Path, result: RunResult, settings: Settings, quiet: bool) -> int:
    """``--write-baseline``: record the findings; the exit code (2 if a file had errors)."""
    try:
        entries = write_baseline(file, result, _read_lines, settings.project_root)
    except BaselineError as exc:
        _fail(str(exc))
    if not quiet:
        click.echo(f"ddplint: wrote {_count(len(entries), 'finding')} to baseline {file}", err=True)
    _print_errors(result)
    return EXIT_ERROR if result.errors or result.internal_error else EXIT_CLEAN


def _apply_baseline(
    file: Path, result: RunResult, settings: Settings, options: LintOptions, quiet: bool
) -> tuple[RunResult, int]:
    """Hide the findings the baseline holds; report its stale entries on stderr."""
    try:
        entries = load_baseline(file)
    except BaselineError as exc:
        _fail(str(exc))
    outcome = apply_baseline(result, entries, _read_lines, settings.project_root, options.selected)
    if outcome.stale and not quiet:
        click.echo(
            f"ddplint: notice: {_count(len(outcome.stale), 'baseline entry', 'baseline entries')}"
            f" in {file} match no finding any more (fixed, or the flagged line changed); "
            "refresh it with --write-baseline:",
            err=True,
        )
        for entry in outcome.stale:
            click.echo(printable(f"  {entry.path}: {entry.rule} ({entry.fingerprint})"), err=True)
    return outcome.result, outcome.known


@cli.command(name="rules")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
)
def rules_command(output_format: str) -> None:
    """List every rule: code, name, default on/off, fix class."""
    catalogue = all_rules()
    if output_format == "json":
        import json

        rows = [
            {
                "code": code,
                "name": rule.name,
                "kind": rule.kind,
                "severity": rule.severity.value,
                "default": rule.default_enabled,
                "fix": rule.fix_applicability.value if rule.fix_applicability else None,
                "summary": rule.summary,
            }
            for code, rule in catalogue.items()
        ]
        click.echo(json.dumps(rows, indent=2))
        return
    width = max(len(rule.name) for rule in catalogue.values()) + 2
    header = f"{'code':<8}{'name':<{width}}{'default':<9}{'fix':<8}summary"
    click.echo(header)
    click.echo("-" * len(header))
    for code, rule in catalogue.items():
        default = "on" if rule.default_enabled else "preview"
        fix = rule.fix_applicability.value if rule.fix_applicability else "-"
        click.echo(f"{code:<8}{rule.name:<{width}}{default:<9}{fix:<8}{rule.summary}")


@cli.command()
@click.argument("code")
def explain(code: str) -> None:
    """Print the documentation of rule CODE (e.g. DDP101)."""
    catalogue = all_rules()
    rule = catalogue.get(code.upper())
    if rule is None:
        matches = [c for c, r in catalogue.items() if r.name == code]
        if not matches:
            click.echo(
                f"ddplint: error: unknown rule `{code}`{did_you_mean(code, catalogue)}; "
                f"valid codes: {', '.join(catalogue)}",
                err=True,
            )
            sys.exit(EXIT_ERROR)
        rule = catalogue[matches[0]]
    click.echo(rule.explanation())


cli.add_command(verify_command)


@cli.command()
def server() -> None:
    """Run the language server (LSP over stdio) for editors; needs the `server` extra."""
    from ddplint.server import serve

    sys.exit(serve())


def main() -> None:
    cli(prog_name="ddplint")
