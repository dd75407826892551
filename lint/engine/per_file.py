"""Lint one file's bytes: one parse, the planned rules and fact collectors (a crash
in one is reported and the others go on), suppressions. Never raises."""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any, TypeGuard, TypeVar

from ddplint import cancellation
from ddplint.deep_stack import call_with_deep_stack
from ddplint.engine.selection import rule_instances
from ddplint.engine.suppressions import apply_suppressions
from ddplint.engine.triage import Plan, triage_file
from ddplint.finding import FileError, Finding
from ddplint.results import SKIPPED, FileOutcome
from ddplint.rule import CodeRule, ConfigRule
from ddplint.settings import LintOptions
from ddplint.source import (
    SourceError,
    SourceFile,
)
from ddplint.suppress import mentions_own_codes

if TYPE_CHECKING:
    import libcst as cst

T = TypeVar("T")


#: What a worker gets: display path, bytes, options, code-fact kinds to collect.
Job = tuple[str, bytes, LintOptions, tuple[str, ...]]


def _parse_error(path: str, text: str, exc: cst.ParserSyntaxError) -> FileError:
    """Python's own parser words syntax errors better than LibCST's; it runs nothing."""
    try:
        ast.parse(text)
    except SyntaxError as syntax:
        return FileError(
            path, f"cannot parse: {syntax.msg}", line=syntax.lineno, column=syntax.offset
        )
    except (ValueError, RecursionError, MemoryError):
        pass
    message = exc.message.removeprefix("parser error: ")
    return FileError(path, f"cannot parse: {message}", line=exc.raw_line, column=exc.raw_column + 1)


def _build_context(source: SourceFile, options: LintOptions) -> Any:
    """The context rules read; a Python file's LibCST module is parsed when first asked
    for (``_rules_to_run`` asks for it up front where a rule reads it)."""
    if source.kind == "code":
        from ddplint.code.context import CodeContext

        return CodeContext(source, options)
    from ddplint.config.context import ConfigContext

    return ConfigContext.load(source, options)


def _screened(plan: Plan, source: SourceFile, options: LintOptions) -> list[Any]:
    """The planned rules that may report on the file: for Python, those whose screen
    (``RuleEntry.may_report``, asked of the file's ``ast`` before any rule module is
    imported) says yes; every planned rule where CPython refuses the file. Only these
    rules' modules are imported."""
    entries = plan.rules
    if plan.kind == "code" and entries:
        tree = _python_ast(source.text)
        entries = [entry for entry in entries if entry.may_report(tree, options)]
    return rule_instances(entries)


def _python_ast(text: str) -> ast.Module | None:
    """The file's CPython ``ast`` (the one ``CodeContext.ast_module`` shares), or None
    where CPython refuses it."""
    from ddplint.code.syntax.python_ast import parse_python

    try:
        return parse_python(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _parse_for(
    plan: Plan, context: Any, rules: list[CodeRule | ConfigRule], outcome: FileOutcome
) -> list[CodeRule | ConfigRule]:
    """Parse a Python file with LibCST here, where its parse errors are reported, when
    a rule left reads LibCST, when CPython refuses the file (LibCST says why, or reads
    syntax newer than this Python) or when the plan is to say why it does not parse;
    otherwise not at all, and the nesting bound LibCST's parse checks is checked on
    CPython's tree (raises ``ParseLimitExceeded``). The rules to run: a file CPython
    reads and LibCST refuses keeps the core's rules alone."""
    from ddplint.code.syntax.safe_parse import check_tree_nesting

    if context is None or plan.kind != "code":
        return rules
    if (
        plan.syntax_only
        or context.ast_module is None
        or any(isinstance(r, CodeRule) and r.reads_libcst for r in rules)
    ):
        try:
            _ = context.module
        except Exception as exc:
            if plan.syntax_only or context.ast_module is None or not _is_libcst_parse_error(exc):
                raise
            return _without_libcst_rules(rules, exc, outcome)
    else:
        check_tree_nesting(context.ast_module)
    return rules


def _is_libcst_parse_error(exc: Exception) -> TypeGuard[cst.ParserSyntaxError]:
    """Whether ``exc`` is LibCST's syntax error (never, where LibCST was not imported:
    only a file parsed with it can raise one)."""
    libcst = sys.modules.get("libcst")
    return libcst is not None and isinstance(exc, libcst.ParserSyntaxError)


def _without_libcst_rules(rules: list[Any], exc: Exception, outcome: FileOutcome) -> list[Any]:
    """The core's rules alone, for a file CPython's parser reads but LibCST's refuses
    (indentation mixing tabs and spaces that CPython accepts): one notice names the
    rules left out and why."""
    left_out = sorted(rule.code for rule in rules if rule.reads_libcst)
    reason = str(getattr(exc, "message", exc)).removeprefix("parser error: ")
    outcome.notices.append(
        f"{', '.join(left_out)} not run: LibCST, which "
        f"{'it reads' if len(left_out) == 1 else 'they read'}, refuses this file "
        f"({reason}) though Python's own parser reads it; the analysis core's rules ran"
    )
    return [rule for rule in rules if not rule.reads_libcst]


def _without_core_rules(rules: list[Any], text: str, outcome: FileOutcome) -> list[Any]:
    """The rules that read LibCST alone, for a file CPython's parser refuses but LibCST
    reads (syntax newer than the Python ddplint runs on): the analysis core reads
    ``ast``, so its rules are left out, with one notice naming them and the reason."""
    from ddplint.code.syntax.python_ast import parse_python

    left_out = sorted(rule.code for rule in rules if not rule.reads_libcst)
    if left_out:
        reason = "CPython's parser refuses it"
        try:
            parse_python(text)
        except SyntaxError as exc:
            reason += f" (line {exc.lineno}: {exc.msg})"
        except (ValueError, RecursionError, MemoryError) as exc:
            reason += f" ({_describe(exc)})"
        version = ".".join(str(part) for part in sys.version_info[:2])
        outcome.notices.append(
            f"{', '.join(left_out)} not run: the analysis core reads code with the parser "
            f"of the Python ddplint runs on ({version}), and {reason}; run ddplint on a "
            "Python as new as this code to check it with them"
        )
    return [rule for rule in rules if rule.reads_libcst]


def _describe(exc: BaseException) -> str:
    """``Type: message``, short; arguments that are not plain values (a CST node in a
    KeyError) are named by type: their repr can be huge, or too deep to print."""
    plain = all(isinstance(arg, (str, int, float)) for arg in exc.args)
    text = str(exc) if plain else ", ".join(f"<{type(arg).__name__}>" for arg in exc.args)
    if len(text) > 300:
        text = text[:300] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def lint_source(
    path: str, raw: bytes, options: LintOptions, collect: Sequence[str] = ()
) -> FileOutcome:
    """Lint one file's bytes. Never raises: every failure becomes an error entry.

    ``collect`` names code-fact kinds to gather from a Python file for the config rules.
    A file that will be parsed is linted on a deep stack (see ``ddplint.deep_stack``); an
    exception that escapes (a bug of ours outside any one rule) is an error entry.
    """
    try:
        plan = triage_file(path, raw, options, collect)
        if isinstance(plan, FileOutcome):
            return plan
        return call_with_deep_stack(_lint_planned, path, raw, options, plan)
    except Exception as exc:
        message = f"internal error: {_describe(exc)}"
        return FileOutcome(errors=[FileError(path, message)], internal_error=True)


def _lint_planned(path: str, raw: bytes, options: LintOptions, plan: Plan) -> FileOutcome:
    """Parse the file once and run the planned rules and fact collectors on it (LibCST
    and a rule's module are imported only where a rule passes its screen)."""
    from ddplint.code.fact_collectors import collect_facts
    from ddplint.code.syntax.safe_parse import ParseLimitExceeded

    outcome = FileOutcome()
    try:
        source = SourceFile.decode(path, raw)
        rules = _screened(plan, source, options)
        context = _build_context(source, options) if rules or plan.syntax_only else None
        rules = _parse_for(plan, context, rules, outcome)
    except SourceError as exc:
        outcome.errors.append(FileError(path, exc.message, line=exc.line, column=exc.column))
        return outcome
    except RecursionError:
        outcome.errors.append(FileError(path, "cannot parse: nesting too deep"))
        return outcome
    except ParseLimitExceeded as exc:
        outcome.notices.append(f"{SKIPPED}{exc}")
        return outcome
    except Exception as exc:
        if _is_libcst_parse_error(exc):
            outcome.errors.append(_parse_error(path, source.text, exc))
            return outcome
        # a bug of ours, not bad input: reported, the run goes on
        outcome.internal_error = True
        outcome.errors.append(FileError(path, f"internal error while parsing: {_describe(exc)}"))
        return outcome
    if plan.collectors:
        facts = _guarded(
            outcome, path, "code facts", lambda: collect_facts(source.text, plan.collectors)
        )
        outcome.facts = facts or {}
    if context is None or not (rules or plan.syntax_only):
        if mentions_own_codes(raw):
            apply_suppressions(outcome, path, source.text, plan.kind, [], options)
        return outcome
    outcome.parsed = True
    if plan.kind == "code" and context.ast_module is None:
        rules = _without_core_rules(rules, source.text, outcome)
    findings: list[Finding] = []
    for rule in rules:
        cancellation.check()
        findings.extend(_guarded(outcome, path, rule.code, partial(_check, rule, context)) or [])
    if findings and plan.kind == "config":
        settled = _guarded(outcome, path, "fix checks", partial(context.settle_fixes, findings))
        findings = settled if settled is not None else [replace(f, fix=None) for f in findings]
    if findings or mentions_own_codes(raw):
        apply_suppressions(outcome, path, source.text, plan.kind, findings, options)
    else:
        outcome.findings = sorted(set(findings), key=lambda f: f.sort_key)
    if plan.kind == "code":
        outcome.config_answers = context.config_answers()
    if plan.kind == "code" and outcome.findings and context.unreachable_lines:
        # Code after a jump in its block never runs: no finding.
        dead = context.unreachable_lines
        outcome.findings = [f for f in outcome.findings if f.line not in dead]
    if plan.kind == "code" and outcome.findings and context.project.never_runs_anything():
        # Code nothing in the project can run (``code.project.reach``): no finding.
        outcome.findings = [f for f in outcome.findings if not context.never_runs(f.line)]
    if plan.kind == "code" and outcome.findings:
        # A hazard that needs peers, on code only a one-process job runs: no finding.
        peers = {rule.code for rule in rules if getattr(rule, "needs_peers", False)}
        outcome.findings = [
            f for f in outcome.findings if f.rule not in peers or not context.runs_alone(f.line)
        ]
    return outcome


def _check(rule: CodeRule | ConfigRule, context: Any) -> list[Finding]:
    return list(rule.check(context))


def _guarded(outcome: FileOutcome, path: str, what: str, run: Callable[[], T]) -> T | None:
    """``run()``; a crash is reported against ``what`` (a rule code, or code facts)."""
    try:
        return run()
    except RecursionError:
        outcome.errors.append(FileError(path, f"{what} gave up: nesting too deep", rule=what))
    except Exception as exc:  # one rule's crash must not stop the others
        outcome.internal_error = True
        outcome.errors.append(
            FileError(path, f"internal error in rule {what}: {_describe(exc)}", rule=what)
        )
    return None


def lint_job(job: Job) -> FileOutcome:
    return lint_source(*job)


def worker_died(job: Job) -> FileOutcome:
    message = "internal error: the worker process died while linting this file"
    return FileOutcome(errors=[FileError(job[0], message)], internal_error=True)
