"""Small code rules that exist only in tests, to drive the fix machinery through cases
no real rule offers yet (safe fixes, overlapping fixes, imports, fixes that break the
file; a rule that reads LibCST), and a helper that lets the engine and the CLI see them."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst
import pytest

import ddplint.cli
import ddplint.engine.selection
import ddplint.engine.suppressions
import ddplint.invocation
import ddplint.report.sarif
from ddplint.code.context import CodeContext
from ddplint.code.edits.edits import ensure_import, replace_node
from ddplint.finding import Applicability, Finding, Fix, Severity
from ddplint.rule import CodeRule, Rule
from ddplint.rules import all_rules
from ddplint.rules.catalogue import CATALOGUE, RuleEntry

DOC = """
    ## What it does
    A rule for tests.
    """


class _CallRule(CodeRule):
    """Flags calls of ``func_name`` (a plain name)."""

    func_name = ""
    severity = Severity.WARNING
    fix_applicability = Applicability.SAFE

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        for call in ctx.index.nodes(cst.Call):
            if isinstance(call.func, cst.Name) and call.func.value == self.func_name:
                fix = self.fix(ctx, call)
                yield ctx.finding(self, call, f"`{self.func_name}()` called", fix)

    def fix(self, ctx: CodeContext, call: cst.Call) -> Fix | None:
        raise NotImplementedError


class RenameOldApi(_CallRule):
    """Safe fix: ``old_api(...)`` -> ``new_api(...)``."""

    code, name, summary, needles = "TST001", "old-api", "old_api is old", ("old_api",)
    func_name = "old_api"

    def fix(self, ctx: CodeContext, call: cst.Call) -> Fix:
        return Fix(Applicability.SAFE, (replace_node(ctx, call.func, "new_api"),), "Rename")


class RenameToCyrillic(_CallRule):
    """Safe fix: ``legacy()`` -> ``новый()``: fine in UTF-8, not storable in latin-1."""

    code, name, summary, needles = "TST003", "cyrillic", "legacy is old", ("legacy",)
    func_name = "legacy"

    def fix(self, ctx: CodeContext, call: cst.Call) -> Fix:
        return Fix(Applicability.SAFE, (replace_node(ctx, call.func, "новый"),), "Rename")


class UnwrapCall(_CallRule):
    """Safe fix: ``wrap(x)`` -> ``x`` (overlaps any fix inside ``x``)."""

    code, name, summary, needles = "TST002", "unwrap", "wrap is useless", ("wrap",)
    func_name = "wrap"

    def fix(self, ctx: CodeContext, call: cst.Call) -> Fix:
        inner = ctx.node_text(call.args[0].value)
        return Fix(Applicability.SAFE, (replace_node(ctx, call, inner),), "Unwrap")


class RenameWrap(_CallRule):
    """Safe fix: ``wrap(x)`` -> ``wrapped(x)``: starts where TST002's fix starts."""

    code, name, summary, needles = "TST004", "rename-wrap", "wrap is renamed", ("wrap",)
    func_name = "wrap"

    def fix(self, ctx: CodeContext, call: cst.Call) -> Fix:
        text = "wrapped" + ctx.node_text(call)[len("wrap") :]
        return Fix(Applicability.SAFE, (replace_node(ctx, call, text),), "Rename wrap")


class BreakingFix(_CallRule):
    """A buggy safe fix: ``marker()`` -> ``marker(`` (the result does not parse)."""

    code, name, summary, needles = "TST005", "breaking-fix", "marker is flagged", ("marker",)
    func_name = "marker"

    def fix(self, ctx: CodeContext, call: cst.Call) -> Fix:
        return Fix(Applicability.SAFE, (replace_node(ctx, call, "marker("),), "Break it")


class TimeoutAsTimedelta(CodeRule):
    """Safe fix: ``timeout=<int>`` -> ``timeout=timedelta(seconds=<int>)``, importing
    ``timedelta`` when the file does not."""

    code, name, summary, needles = "TST006", "timeout-int", "timeout is an int", ("timeout",)
    severity = Severity.ERROR
    fix_applicability = Applicability.SAFE

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        for call in ctx.index.nodes(cst.Call):
            for arg in call.args:
                if (
                    arg.keyword is not None
                    and arg.keyword.value == "timeout"
                    and isinstance(arg.value, cst.Integer)
                ):
                    seconds = arg.value.value
                    edits = [replace_node(ctx, arg.value, f"timedelta(seconds={seconds})")]
                    added = ensure_import(ctx, "datetime", "timedelta")
                    if added is not None:
                        edits.append(added)
                    fix = Fix(Applicability.SAFE, tuple(edits), "Use a timedelta")
                    yield ctx.finding(self, arg.value, "`timeout` must be a timedelta", fix)


class NeverSettles(CodeRule):
    """A buggy safe fix that always offers another: ``n = 1`` -> ``n = 2`` -> ..."""

    code, name, summary, needles = "TST007", "never-settles", "n grows", ("n =",)
    severity = Severity.WARNING
    fix_applicability = Applicability.SAFE

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        for assign in ctx.index.nodes(cst.Assign):
            target = assign.targets[0].target
            value = assign.value
            if (
                isinstance(target, cst.Name)
                and target.value == "n"
                and isinstance(value, cst.Integer)
            ):
                bigger = str(int(value.value) + 1)
                fix = Fix(Applicability.SAFE, (replace_node(ctx, value, bigger),))
                yield ctx.finding(self, value, "n is too small", fix)


class DeviceUpload(CodeRule):
    """A rule that reads LibCST (no real rule does since session 40): flags
    ``torch.tensor(...)`` / ``torch.as_tensor(...)`` given a ``device=``, for the tests
    of when the engine parses a file with LibCST."""

    code, name, summary, needles = (
        "TST008",
        "device-upload",
        "a tensor built on a device",
        ("device=",),
    )
    severity = Severity.WARNING

    def check(self, ctx: CodeContext) -> Iterator[Finding]:
        for call in ctx.index.nodes(cst.Call):
            made = ctx.names.qualified_name(call.func)
            on_device = any(
                a.keyword is not None and a.keyword.value == "device" for a in call.args
            )
            if made in ("torch.tensor", "torch.as_tensor") and on_device:
                yield ctx.finding(self, call, "a tensor built on a device")


SYNTHETIC: tuple[type[Rule], ...] = (
    RenameOldApi,
    RenameToCyrillic,
    UnwrapCall,
    RenameWrap,
    BreakingFix,
    TimeoutAsTimedelta,
    NeverSettles,
    DeviceUpload,
)
for _rule in SYNTHETIC:
    _rule.__doc__ = (_rule.__doc__ or "") + DOC


def use_synthetic_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the engine, the CLI and the SARIF report see the synthetic rules (opt-in,
    like preview rules: only selecting them by code turns them on)."""
    catalogue = {**all_rules()}
    for rule in SYNTHETIC:
        monkeypatch.setattr(rule, "default_enabled", False)
        catalogue[rule.code] = rule
    for module in (ddplint.cli, ddplint.report.sarif):
        monkeypatch.setattr(module, "all_rules", lambda: dict(sorted(catalogue.items())))
    # What the settings and the engine know without importing rules: the catalogue.
    entries = {**CATALOGUE}
    for rule in SYNTHETIC:
        entries[rule.code] = catalogue_entry(rule, default_enabled=False)
    for module in (ddplint.engine.selection, ddplint.engine.suppressions, ddplint.invocation):
        monkeypatch.setattr(module, "CATALOGUE", dict(sorted(entries.items())))
    engine_sees(monkeypatch, catalogue)


def catalogue_entry(rule: type[Rule], default_enabled: bool) -> RuleEntry:
    """A catalogue line for a rule defined in a test (its pre-filter is the class's)."""
    return RuleEntry(
        rule.code,
        rule.name,
        rule.kind,
        default_enabled,
        needles=rule.needles,
        also_needles=rule.also_needles,
        more_needles=rule.more_needles,
        required=rule.required,
        narrowed_by=rule.prefilter,
    )


def engine_sees(monkeypatch: pytest.MonkeyPatch, rules: dict[str, type[Rule]]) -> None:
    """Make the engine instantiate ``rules`` by code (its instance cache bypassed)."""
    monkeypatch.setattr(ddplint.engine.selection, "_rule", lambda code: rules[code]())
