"""The command line: a thin click layer over settings, engine and reports."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from ddplint import __version__
from ddplint.discover import discover, display_path
from ddplint.engine.pool import default_jobs
from ddplint.engine.run import lint_paths
from ddplint.finding import Finding
from ddplint.interrupt import ending_on_signals
from ddplint.invocation import (
    EXIT_CLEAN,
    EXIT_ERROR,
    EXIT_FINDINGS,
    build_options,
    build_settings,
    empty_selection_warning,
    split_config_values,
)
from ddplint.progress import Progress
from ddplint.report import (
    ERRORS_APART,
    FORMAT_NAMES,
    MACHINE_FORMATS,
    STATISTICS_FORMATS,
    ReportContext,
    formatter,
    summary,
)
from ddplint.report.printable import printable
from ddplint.report.style import use_colour
from ddplint.report.summary import count, statistics_json
from ddplint.report.text import WHY_HINT, concise_line
from ddplint.results import RunResult
from ddplint.rules import all_rules
from ddplint.settings import LintOptions, Settings, SettingsError, did_you_mean
from ddplint.source import SourceError, SourceFile
from ddplint.stdin_input import StdinText, reads_stdin
from ddplint.verify.command import verify as verify_command
from ddplint.verify.command import verify_dumps as verify_dumps_command

if TYPE_CHECKING:  # what only fixing and --show-* need is imported when asked for
    from ddplint.fixer import FixRun

#: Sets ``--output-format`` when the flag is not given.
OUTPUT_FORMAT_VARIABLE = "DDPLINT_OUTPUT_FORMAT"


def _read_lines(path: str) -> list[str] | None:
    try:
        raw = Path(path).read_bytes()
        return SourceFile.decode(path, raw).lines
    except (OSError, SourceError):
        return None


def _line_reader(stdin: StdinText | None) -> Callable[[str], list[str] | None]:
    """Reads a reported file's lines (for code frames): the text on stdin stands in for
    the file it names."""
    if stdin is None:
        return _read_lines
    shown = display_path(stdin.path)

    def read(path: str) -> list[str] | None:
        if path != shown:
            return _read_lines(path)
        try:
            return SourceFile.decode(path, stdin.raw).lines
        except SourceError:
            return None

    return read


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


@cli.command(short_help="Lint Python files and training YAML (default: this folder).")
@click.argument("paths", nargs=-1, type=click.Path(allow_dash=True))
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
    type=click.Choice(sorted(FORMAT_NAMES)),
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
    multiple=True,
    help="A pyproject.toml (or TOML file) to read settings from, or a `KEY = VALUE` "
    "(TOML) that overrides one key of its [tool.ddplint]; repeatable.",
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
@click.option(
    "--add-noqa",
    "add_noqa_comments",
    is_flag=True,
    help="Add a `# noqa: CODE` to each line with a finding (adopt now, fix later); exit.",
)
@click.option(
    "--watch",
    "watch_files",
    is_flag=True,
    help="Lint again whenever a file to lint changes (Ctrl-C ends); reports only.",
)
@click.option(
    "--stdin-filename",
    help="With `-` as the path (or no path): the file the text on stdin stands for "
    "(its name, settings and project); default stdin.py in the current folder.",
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
    exit_non_zero_on_fix: bool,
    no_cache: bool,
    jobs: int | None,
    config: tuple[str, ...],
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
    add_noqa_comments: bool,
    watch_files: bool,
    stdin_filename: str | None,
) -> None:
    """Lint Python files and training YAML under PATHS (default: the current folder;
    `-`: the text on stdin)."""
    fixing = diff or fix or fix_only
    writes = fixing or baseline_file or write_baseline_file or add_noqa_comments
    _refuse_unsupported_inputs(paths, stdin_filename, watch_files, bool(writes), bool(fixing))
    stdin = None
    if reads_stdin(paths, stdin_filename):
        stdin = StdinText.read(sys.stdin.buffer, stdin_filename)
        paths = (str(stdin.path),)
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
    if add_noqa_comments and (flags.fixing or baseline_file or write_baseline_file):
        raise click.UsageError("--add-noqa cannot be used with fixes or baselines")
    try:
        config_file, overrides = split_config_values(config)
        settings = build_settings(
            paths, config_file, select, extend_select, ignore, preview, force_exclude, overrides
        )
        options = build_options(settings)
    except SettingsError as exc:
        _fail(str(exc))
    if not options.selected:
        click.echo(f"ddplint: warning: {empty_selection_warning(settings)}", err=True)
    if show_settings or show_files:
        from ddplint.show import files_text, settings_text

        text = settings_text(settings, options) if show_settings else ""
        text += files_text(discover(list(paths), settings)) if show_files else ""
        _out(text, nl=False)
        sys.exit(EXIT_CLEAN)
    if watch_files:
        report = partial(
            _report,
            output_format=output_format,
            output_file=output_file,
            statistics=statistics,
            quiet=quiet,
            flags=flags,
            fixed={},
            known=0,
            checked=bool(options.selected),
        )
        _watch(list(paths), settings, options, jobs, no_cache, report)
    if stdin is not None and flags.fixing:
        sys.exit(_fix_stdin(stdin, settings, options, flags, exit_zero))
    progress = Progress(sys.stderr, enabled=not machine and not quiet and stdin is None)
    if stdin is not None:
        result = stdin.lint(settings, options, use_cache=not no_cache)
    else:
        result = lint_paths(
            list(paths),
            settings,
            options,
            jobs=jobs or default_jobs(),
            use_cache=not no_cache,
            progress=progress.update,
        )
    progress.finish()
    if add_noqa_comments:
        sys.exit(_add_noqa(result, settings, quiet))
    fixed: dict[str, list[Finding]] = {}
    known = 0
    if flags.fixing:
        from ddplint.fixer import fix_run

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
    _report(
        result,
        output_format,
        output_file,
        statistics,
        quiet,
        flags,
        fixed,
        known,
        checked=bool(options.selected),
        read_lines=_line_reader(stdin),
    )
    code = exit_code(result, exit_zero)
    if code == EXIT_CLEAN and exit_non_zero_on_fix and any(fixed.values()):
        code = EXIT_FINDINGS
    sys.exit(code)


def _refuse_unsupported_inputs(
    paths: tuple[str, ...],
    stdin_filename: str | None,
    watch_files: bool,
    writes: bool,
    fixing: bool,
) -> None:
    """Usage errors: ``--watch`` only reports; the text on stdin is reported on or fixed
    (to stdout), never marked or recorded in a baseline; ``-`` is then the only path."""
    stdin = reads_stdin(paths, stdin_filename)
    if watch_files and (writes or stdin):
        raise click.UsageError(
            "--watch only reports: it cannot read stdin, fix, add noqa or use baselines"
        )
    if stdin and writes and not fixing:
        raise click.UsageError("the text on stdin cannot take --add-noqa or baselines")
    if not stdin and "-" in paths:
        raise click.UsageError("`-` (stdin) cannot be mixed with other paths")


def _fix_stdin(
    stdin: StdinText, settings: Settings, options: LintOptions, flags: FixFlags, exit_zero: bool
) -> int:
    """``check --fix -`` (ruff's format-on-save form): the fixed text on stdout (with
    ``--diff``, the diff), what is left on stderr (nothing with ``--fix-only``); the
    exit code."""
    try:
        fixed = stdin.fix(settings, options, flags.unsafe)
    except SourceError as exc:
        _fail(f"{display_path(stdin.path)}: {exc.message}")
    if flags.diff:
        from ddplint.fix import unified_diff

        click.echo(unified_diff(fixed.path, fixed.before, fixed.after), nl=False)
    else:
        sys.stdout.buffer.write(fixed.raw_after)
        sys.stdout.flush()
    left = fixed.remaining
    for error in [*fixed.errors, *left.errors]:
        click.echo(printable(f"{error.path}: error: {error.message}"), err=True)
    if not flags.fix_only and not flags.diff:
        for finding in left.findings:
            click.echo(concise_line(finding), err=True)
    if fixed.errors or left.errors or left.internal_error:
        return EXIT_ERROR
    if flags.diff:
        return EXIT_FINDINGS if fixed.changed else EXIT_CLEAN
    if flags.fix_only or exit_zero or not left.findings:
        return EXIT_FINDINGS if flags.exit_non_zero_on_fix and fixed.fixed else EXIT_CLEAN
    return EXIT_FINDINGS


def _watch(
    paths: list[str],
    settings: Settings,
    options: LintOptions,
    jobs: int | None,
    no_cache: bool,
    report: Callable[[RunResult], None],
) -> NoReturn:
    """``--watch``: lint and report now and after every change, until Ctrl-C."""
    from ddplint.watch import watch

    def lint_and_report() -> None:
        result = lint_paths(
            paths, settings, options, jobs=jobs or default_jobs(), use_cache=not no_cache
        )
        report(result)
        sys.stdout.flush()  # each run's report as it ends, in a pipe too

    watch(lint_and_report, paths, settings, say=lambda message: click.echo(message, err=True))


def _report(
    result: RunResult,
    output_format: str,
    output_file: str | None,
    statistics: bool,
    quiet: bool,
    flags: FixFlags,
    fixed: dict[str, list[Finding]],
    known: int,
    checked: bool = True,
    read_lines: Callable[[str], list[str] | None] = _read_lines,
) -> None:
    """Print the report: findings (or counts), then errors and notices on stderr, then
    the summary, so the summary is the last word and counts the errors."""
    machine = output_format in MACHINE_FORMATS
    stream = None if output_file else sys.stdout
    colour = not machine and not output_file and use_colour(stream)
    context = ReportContext(read_lines=read_lines, unsafe_fixes=flags.unsafe, colour=colour)
    if statistics:
        render = statistics_json if machine else summary.statistics
        report = render(result, flags.unsafe)
    else:
        report = formatter(output_format)(result, context)
    if not machine and not quiet:
        if flags.show_fixes:
            report += summary.fixed_listing(fixed)
        if result.findings and output_format == "concise" and not statistics:
            report += WHY_HINT + "\n"
    closing = ""
    if not machine and not quiet:
        fixed_count = sum(len(f) for f in fixed.values())
        closing = summary.run_summary(
            result, fixed=fixed_count, known=known, unsafe=flags.unsafe, checked=checked
        )
        closing += "\n"
    if output_file:
        try:
            Path(output_file).write_text(report + closing, encoding="utf-8")
        except OSError as exc:
            _fail(f"cannot write {output_file}: {exc.strerror or exc}")
    else:
        _out(report, nl=False, color=colour)
    if not machine or output_format in ERRORS_APART:
        _print_errors(result)
    if not machine and not quiet:
        _print_notices(result)
    if closing and not output_file:
        _out(closing, nl=False)


def _report_fix_only(
    result: RunResult, fixed: dict[str, list[Finding]], flags: FixFlags, quiet: bool
) -> int:
    """``--fix-only``: what was fixed, no remaining finding; the exit code."""
    _print_errors(result)
    fixed_count = sum(len(f) for f in fixed.values())
    if not quiet:
        if flags.show_fixes:
            _out(summary.fixed_listing(fixed), nl=False)
        _print_notices(result)
        done = f"Fixed {count(fixed_count, 'finding')}." if fixed_count else "No fixes applied."
        _out(done)
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
            f"ddplint: note: {count(len(result.bare_noqa), 'finding')} reported on a line "
            "with a bare `# noqa`, which ddplint does not honour (a blanket noqa written for "
            "another tool must never hide a hazard); to silence one, name its code:",
            err=True,
        )
        for finding in result.bare_noqa:
            where = printable(f"{finding.path}:{finding.line}")
            click.echo(f"  {where}: `# noqa: {finding.rule}`", err=True)


class _OutputFailed(Exception):
    """Standard output cannot be written (a full disk); ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _out(text: str = "", *, nl: bool = True, color: bool | None = None) -> None:
    """``click.echo`` to standard output; a write that fails raises ``_OutputFailed``
    (a closed pipe stays click's: a quiet exit)."""
    try:
        click.echo(text, nl=nl, color=color)
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            raise
        raise _OutputFailed(exc.strerror or str(exc)) from None


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
    from ddplint.fix import unified_diff

    changed = run.changed_files
    for file in changed:
        _out(unified_diff(file.path, file.before, file.after), nl=False)
    _print_errors(run.result)
    if not quiet:
        click.echo(
            f"Would fix {count(run.fixed_count, 'finding')} in {count(len(changed), 'file')}.",
            err=True,
        )
    if run.result.errors or run.result.internal_error:
        return EXIT_ERROR
    return EXIT_FINDINGS if changed else EXIT_CLEAN


def _add_noqa(result: RunResult, settings: Settings, quiet: bool) -> int:
    """``--add-noqa``: silence each finding where it is reported; the exit code."""
    from ddplint.add_noqa import add_noqa

    run = add_noqa(result.findings, settings.project_root)
    _print_errors(result)
    for path, reason in run.refused:
        click.echo(printable(f"{path}: error: not written: {reason}"), err=True)
    if not quiet:
        click.echo(f"Added {count(run.added, 'noqa directive')}.", err=True)
    return EXIT_ERROR if result.errors or result.internal_error or run.refused else EXIT_CLEAN


def _write_baseline(file: Path, result: RunResult, settings: Settings, quiet: bool) -> int:
    """``--write-baseline``: record the findings; the exit code (2 if a file had errors)."""
    from ddplint.baseline import BaselineError, write_baseline

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
    from ddplint.baseline import BaselineError, apply_baseline, load_baseline

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
    from ddplint import blind_precision

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
        _out(json.dumps(rows, indent=2))
        return
    width = max(len(rule.name) for rule in catalogue.values()) + 2
    header = f"{'code':<8}{'name':<{width}}{'default':<9}{'fix':<8}{'blind':<16}summary"
    _out(header)
    _out("-" * len(header))
    for code, rule in catalogue.items():
        default = "on" if rule.default_enabled else "preview"
        fix = rule.fix_applicability.value if rule.fix_applicability else "-"
        blind = blind_precision.summary(code)
        _out(f"{code:<8}{rule.name:<{width}}{default:<9}{fix:<8}{blind:<16}{rule.summary}")
    _out(
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
    _out(rule.explanation())


@cli.command(name="rule", hidden=True)
@click.argument("code")
@click.pass_context
def rule_command(context: click.Context, code: str) -> None:
    """ruff's `rule CODE`: here it is `explain CODE`, which this runs."""
    click.echo(f"ddplint: note: the command is `ddplint explain {code}`", err=True)
    context.invoke(explain, code=code)


verify_command.short_help = verify_command.short_help or (
    "Run a script on several ranks and report where they diverge."
)
cli.add_command(verify_command)
cli.add_command(verify_dumps_command)


@cli.command(short_help="Remove the project's result cache.")
@click.argument("path", required=False, type=click.Path(path_type=str))
def clean(path: str | None) -> None:
    """Remove the result cache of the project at PATH (default: this folder's project):
    every results database, of any settings or ddplint version, and the cache folder
    when ddplint made it. The signing key, kept outside the project, stays."""
    from ddplint.cache import clear_results
    from ddplint.engine.run_setup import cache_directory

    try:
        settings = build_settings((path,) if path else (), None, (), (), (), False)
    except SettingsError as exc:
        _fail(str(exc))
    directory = cache_directory(settings)
    try:
        removed = clear_results(directory)
    except OSError as exc:
        _fail(f"cannot clean {printable(str(directory))}: {exc.strerror or exc}")
    if not removed:
        click.echo(printable(f"No cache to remove at {directory}"))
        return
    databases = sum(1 for entry in removed if entry != directory)
    click.echo(printable(f"Removed {databases} results database(s) from {directory}"))


@cli.command(short_help="Run the language server (LSP over stdio) for editors.")
def server() -> None:
    """Run the language server (LSP over stdio) for editors; needs the `server` extra."""
    from ddplint.server import serve

    sys.exit(serve())


def main() -> None:
    """The ``ddplint`` command. Output that cannot be written to standard output (a
    full disk: ``> /dev/full``) is one error and exit code 2, not a traceback."""
    try:
        cli(prog_name="ddplint")
    except _OutputFailed as failed:
        # What stays buffered goes nowhere, so the exit does not fail on it again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        _fail(f"cannot write to standard output: {failed.reason}")
