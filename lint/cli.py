"""The command line: a thin click layer over settings, engine and reports."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import click

from ddplint import __version__, blind_precision
from ddplint.baseline import BaselineError, apply_baseline, load_baseline, write_baseline
from ddplint.discover import discover
from ddplint.engine import RunResult, default_jobs, lint_paths
from ddplint.finding import Finding
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
from ddplint.report import (
    ERRORS_APART,
    FORMATTERS,
    MACHINE_FORMATS,
    STATISTICS_FORMATS,
    ReportContext,
    summary,
)
from ddplint.report.printable import printable
from ddplint.report.style import use_colour
from ddplint.report.summary import count, statistics_json
from ddplint.report.text import WHY_HINT
from ddplint.rules import all_rules
from ddplint.settings import LintOptions, Settings, SettingsError, did_you_mean
from ddplint.show import files_text, settings_text
from ddplint.source import SourceError, SourceFile
from ddplint.verify.command import verify as verify_command

#: Sets ``--output-format`` when the flag is not given.
OUTPUT_FORMAT_VARIABLE = "DDPLINT_OUTPUT_FORMAT"


def _read_lines(path: str) -> list[str] | None:
    try:
        raw = Path(path).read_bytes()
        return SourceFile.decode(path, raw).lines
    except (OSError, SourceError):
        return None


def exit_code(result: RunResult, exit_zero: bool) -> int:
    if result.errors or result.internal_error:
        return EXIT_ERROR
    if result.findings and not exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


@dataclass(frozen=True)
class FixFlags:
    """The fix options, resolved as ruff resolves them: ``--unsafe-fixes`` only widens
    what ``--fix``/``--diff`` apply (alone it shows unsafe fixes as available);
    ``--fix-only`` implies ``--fix``."""

    fix: bool
    unsafe: bool
    diff: bool
    fix_only: bool
    show_fixes: bool
    exit_non_zero_on_fix: bool

    @property
    def fixing(self) -> bool:
        return self.fix or self.fix_only or self.diff


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ddplint")
def cli() -> None:
    """ddplint: find distributed-training hazards before a multi-GPU job is launched."""


@cli.command(short_help="Lint Python files and training YAML (default: the current folder).")
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
    "--output-format",
    "--format",
    "output_format",
    type=click.Choice(sorted(FORMATTERS)),
    default="concise",
    show_default=True,
    envvar=OUTPUT_FORMAT_VARIABLE,
    show_envvar=True,
    help="How to print the findings (--format is an alias).",
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
@click.option(
    "--exit-non-zero-on-fix",
    is_flag=True,
    help="Exit 1 when a fix was applied, even if no finding is left.",
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
@click.option(
    "--fix/--no-fix", default=False, help="Apply safe fixes, then report the findings left."
)
@click.option(
    "--unsafe-fixes/--no-unsafe-fixes",
    default=False,
    help="Let --fix and --diff apply unsafe fixes too (review them); alone, it only "
    "shows them as fixable.",
)
@click.option(
    "--fix-only/--no-fix-only",
    default=False,
    help="Apply fixes and report nothing that is left; exit 0 unless an error (implies --fix).",
)
@click.option(
    "--show-fixes/--no-show-fixes",
    default=False,
    help="After fixing, list what was fixed, per file and rule.",
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
@click.option(
    "--show-settings",
    is_flag=True,
    help="Print the settings file used, the resolved settings and the rules selected; exit.",
)
@click.option("--show-files", is_flag=True, help="Print the files that would be linted; exit.")
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
    exit_non_zero_on_fix: bool,
    no_cache: bool,
    jobs: int | None,
    config: str | None,
    statistics: bool,
    quiet: bool,
    fix: bool,
    unsafe_fixes: bool,
    fix_only: bool,
    show_fixes: bool,
    diff: bool,
    baseline_file: str | None,
    write_baseline_file: str | None,
    show_settings: bool,
    show_files: bool,
) -> None:
    """Lint Python files and training YAML under PATHS (default: the current folder)."""
    paths = paths or (".",)
    if baseline_file and write_baseline_file:
        raise click.UsageError("--baseline and --write-baseline cannot be used together")
    machine = output_format in MACHINE_FORMATS
    if statistics and machine and output_format not in STATISTICS_FORMATS:
        raise click.UsageError(
            f"--statistics cannot be written as {output_format}; "
            "use --output-format concise, full or json"
        )
    flags = FixFlags(fix, unsafe_fixes, diff, fix_only, show_fixes, exit_non_zero_on_fix)
    try:
        settings = build_settings(
            paths, config, select, extend_select, ignore, preview, force_exclude
        )
        options = build_options(settings)
    except SettingsError as exc:
        _fail(str(exc))
    if show_settings or show_files:
        text = settings_text(settings, options) if show_settings else ""
        text += files_text(discover(list(paths), settings)) if show_files else ""
        click.echo(text, nl=False)
        sys.exit(EXIT_CLEAN)
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
    fixed: dict[str, list[Finding]] = {}
    known = 0
    if flags.fixing:
        run = fix_run(result, settings, options, unsafe=unsafe_fixes, write=not diff, jobs=jobs)
        if diff:
            sys.exit(_print_diff(run, quiet))
        result = run.result
        fixed = {f.path: f.fixed for f in run.changed_files}
    if write_baseline_file:
        sys.exit(_write_baseline(Path(write_baseline_file), result, settings, quiet))
    if baseline_file:
        result, known = _apply_baseline(Path(baseline_file), result, settings, options, quiet)
    if fix_only:
        sys.exit(_report_fix_only(result, fixed, flags, quiet))
    _report(result, output_format, output_file, statistics, quiet, flags, fixed, known)
    code = exit_code(result, exit_zero)
    if code == EXIT_CLEAN and exit_non_zero_on_fix and any(fixed.values()):
        code = EXIT_FINDINGS
    sys.exit(code)


def _report(
    result: RunResult,
    output_format: str,
    output_file: str | None,
    statistics: bool,
    quiet: bool,
    flags: FixFlags,
    fixed: dict[str, list[Finding]],
    known: int,
) -> None:
    """Print the report: findings (or counts), then errors and notices on stderr, then
    the summary, so the summary is the last word and counts the errors."""
    machine = output_format in MACHINE_FORMATS
    stream = None if output_file else sys.stdout
    colour = not machine and not output_file and use_colour(stream)
    context = ReportContext(read_lines=_read_lines, unsafe_fixes=flags.unsafe, colour=colour)
    if statistics:
        render = statistics_json if machine else summary.statistics
        report = render(result, flags.unsafe)
    else:
        report = FORMATTERS[output_format](result, context)
    if not machine and not quiet:
        if flags.show_fixes:
            report += summary.fixed_listing(fixed)
        if result.findings and output_format == "concise" and not statistics:
            report += WHY_HINT + "\n"
    closing = ""
    if not machine and not quiet:
        fixed_count = sum(len(f) for f in fixed.values())
        closing = summary.run_summary(result, fixed=fixed_count, known=known, unsafe=flags.unsafe)
        closing += "\n"
    if output_file:
        try:
            Path(output_file).write_text(report + closing, encoding="utf-8")
        except OSError as exc:
            _fail(f"cannot write {output_file}: {exc.strerror or exc}")
    else:
        click.echo(report, nl=False, color=colour)
    if not machine or output_format in ERRORS_APART:
        _print_errors(result)
    if not machine and not quiet:
        _print_notices(result)
    if closing and not output_file:
        click.echo(closing, nl=False)


def _report_fix_only(
    result: RunResult, fixed: dict[str, list[Finding]], flags: FixFlags, quiet: bool
) -> int:
    """``--fix-only``: what was fixed, no remaining finding; the exit code."""
    _print_errors(result)
    fixed_count = sum(len(f) for f in fixed.values())
    if not quiet:
        if flags.show_fixes:
            click.echo(summary.fixed_listing(fixed), nl=False)
        _print_notices(result)
        done = f"Fixed {count(fixed_count, 'finding')}." if fixed_count else "No fixes applied."
        click.echo(done)
    if result.errors or result.internal_error:
        return EXIT_ERROR
    return EXIT_FINDINGS if flags.exit_non_zero_on_fix and fixed_count else EXIT_CLEAN


def _print_notices(result: RunResult) -> None:
    if not result.targets and not result.errors:
        click.echo("ddplint: warning: No Python or YAML files found", err=True)
    for notice in result.notices:
        click.echo(f"ddplint: notice: {printable(notice)}", err=True)
    for warning in result.warnings:
        click.echo(f"ddplint: warning: {printable(warning)}", err=True)
    if result.bare_noqa:
        click.echo(
            f"ddplint: note: {count(result.bare_noqa, 'finding')} reported on a line with a "
            "bare `# noqa`, which ddplint does not honour: name the code (`# noqa: DDP201`), "
            "so that a blanket noqa written for another tool never hides a hazard",
            err=True,
        )


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
            f"Would fix {count(run.fixed_count, 'finding')} in {count(len(changed), 'file')}.",
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
        click.echo(f"ddplint: wrote {count(len(entries), 'finding')} to baseline {file}", err=True)
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
    stale = len(outcome.stale)
    if stale and not quiet:
        click.echo(
            f"ddplint: notice: {count(stale, 'baseline entry', 'baseline entries')} in {file}"
            f" {'matches' if stale == 1 else 'match'} no finding any more (fixed, or the "
            "flagged line changed); refresh it with --write-baseline:",
            err=True,
        )
        for entry in outcome.stale:
            click.echo(printable(f"  {entry.path}: {entry.rule} ({entry.fingerprint})"), err=True)
    return outcome.result, outcome.known


@cli.command(name="rules", short_help="List every rule: code, name, default, fix class.")
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
                "blind_precision": [
                    {"corpus": m.corpus, "true": m.true, "false": m.false, "debatable": m.debatable}
                    for m in blind_precision.measures(code)
                ],
            }
            for code, rule in catalogue.items()
        ]
        click.echo(json.dumps(rows, indent=2))
        return
    width = max(len(rule.name) for rule in catalogue.values()) + 2
    header = f"{'code':<8}{'name':<{width}}{'default':<9}{'fix':<8}{'blind':<16}summary"
    click.echo(header)
    click.echo("-" * len(header))
    for code, rule in catalogue.items():
        default = "on" if rule.default_enabled else "preview"
        fix = rule.fix_applicability.value if rule.fix_applicability else "-"
        blind = blind_precision.summary(code)
        click.echo(f"{code:<8}{rule.name:<{width}}{default:<9}{fix:<8}{blind:<16}{rule.summary}")
    click.echo(
        "\nblind: TRUE/(TRUE+FALSE), precision, of N findings read on code nobody tuned the "
        "rules on, every blind corpus added up (`ddplint explain CODE`: each corpus)."
    )


@cli.command(short_help="Print a rule's documentation (e.g. DDP101).")
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


verify_command.short_help = verify_command.short_help or (
    "Run a script on several ranks and report where they diverge."
)
cli.add_command(verify_command)


@cli.command(short_help="Run the language server (LSP over stdio) for editors.")
def server() -> None:
    """Run the language server (LSP over stdio) for editors; needs the `server` extra."""
    from ddplint.server import serve

    sys.exit(serve())


def main() -> None:
    cli(prog_name="ddplint")
