"""The base classes every rule derives from, and the metadata each rule carries.

A rule is a class. Its docstring is its user documentation, with ruff's headings
(What it does / Why is this bad? / Example / Use instead / Fix safety / References);
``ddplint explain CODE`` prints it. A rule never reads or writes files and never
prints: it looks at a context and returns findings.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, ClassVar

from ddplint.finding import Applicability, Finding, Severity
from ddplint.needles import holds_words
from ddplint.source import is_json

if TYPE_CHECKING:
    from ddplint.code.context import CodeContext
    from ddplint.config.context import ConfigContext
    from ddplint.settings import LintOptions
    from ddplint.suppress import Review, Suppressions


#: Where the hazard catalogue lives; a rule's entry is ``#`` + its code in lower case.
RULE_DOCS_URL = "https://github.com/ddplint/ddplint/blob/main/docs/hazards.md"


def rule_docs_url(code: str) -> str:
    """The link to rule ``code``'s entry in the hazard catalogue (``...#ddp201``)."""
    return f"{RULE_DOCS_URL}#{code.lower()}"


class Rule:
    """Metadata shared by code and config rules."""

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    severity: ClassVar[Severity] = Severity.ERROR
    #: False puts the rule in the opt-in ("preview") set: only an exact code selects it.
    default_enabled: ClassVar[bool] = True
    #: The strongest fix the rule may offer, or None when it never offers one.
    fix_applicability: ClassVar[Applicability | None] = None
    #: Text pre-filter: a file is parsed for this rule only if it contains one of these.
    needles: ClassVar[tuple[str, ...]] = ()
    #: A second pre-filter, when set: the file must also contain one of these.
    also_needles: ClassVar[tuple[str, ...]] = ()
    #: ... and one of each of these groups (a third, fourth ... pre-filter).
    more_needles: ClassVar[tuple[tuple[str, ...], ...]] = ()
    #: ... and every one of these (e.g. a rule on ``DataLoader(persistent_workers=...)``).
    required: ClassVar[tuple[str, ...]] = ()
    #: A cheaper-than-parsing text test that narrows the words (``ddplint.rules.prefilters``).
    narrowed_by: ClassVar[staticmethod[[bytes], bool] | None] = None
    kind: ClassVar[str]

    @classmethod
    def reads(cls, path: str) -> bool:
        """Whether the rule lints the file at ``path`` at all (by its name)."""
        return True

    @classmethod
    def documentation(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def status(cls) -> str:
        """One line for ``explain`` and the catalogue: summary, severity, default, fix."""
        default = "on by default" if cls.default_enabled else "preview (opt-in: select it by code)"
        fix = f"{cls.fix_applicability.value} fix" if cls.fix_applicability else "no automatic fix"
        return f"{cls.summary}. Severity: {cls.severity.value}; {default}; {fix}."

    @classmethod
    def measured(cls) -> str:
        """The rule's precision on blind code and the corpus it was measured on."""
        from ddplint.blind_precision import sentences

        return sentences(cls.code)

    @classmethod
    def explanation(cls) -> str:
        """What ``ddplint explain`` prints: title, status line, blind precision,
        documentation."""
        return (
            f"# {cls.code} {cls.name}\n\n{cls.status()}\n\n{cls.measured()}\n\n"
            f"{cls.documentation()}"
        )

    @classmethod
    def prefilter(cls, raw: bytes) -> bool:
        """Whether the engine should parse a file (its bytes) for this rule: it holds one
        of ``needles``, one of ``also_needles``, one of each ``more_needles`` group and all
        of ``required``, and passes ``narrowed_by`` when the rule has one."""
        groups = (cls.needles, cls.also_needles, *cls.more_needles)
        if not holds_words(raw, cls.required, groups):
            return False
        return cls.narrowed_by is None or cls.narrowed_by(raw)


class CodeRule(Rule):
    """A rule over one Python module, asking the shared semantic layer (``CodeContext``)."""

    kind = "code"
    #: Whether ``check`` reads the LibCST module (its nodes, positions, the LibCST
    #: semantic layer). A rule that asks only the analysis core (``ctx.analysis``,
    #: ``ctx.ast_finding``) says no: a file whose rules all say no is never parsed with
    #: LibCST.
    reads_libcst: ClassVar[bool] = True
    #: A retired rule reports nothing: the code (and its suppressions) stays, and the
    #: rule named here reports each of its root causes once.
    retired_for: ClassVar[str | None] = None
    #: The rule's screen (``ddplint.rules.screens``), if any: a cheap test of the forms
    #: it looks for on CPython's ``ast`` (``ddplint.analysis.forms``), never False where
    #: ``check`` would report. The catalogue holds the same function, so the engine asks
    #: it before the rule's module (and LibCST) is imported.
    screened_by: ClassVar[staticmethod[[ast.Module, LintOptions], bool] | None] = None
    #: Whether the hazard needs several processes (a peer to wait for, to part from or
    #: to stall): the engine drops the rule's findings on code that runs only in a
    #: one-process job (``SingleProcessPaths.holds_at``). A rule whose hazard is there
    #: in any run (an API that raises, a data-loader setting) says no.
    needs_peers: ClassVar[bool] = False

    def may_report(self, ctx: CodeContext) -> bool:
        """Whether ``check`` may report on this module (its screen, asked of its
        ``ast``; yes where CPython refuses the module). A rule that says no is not
        run, and costs the file no LibCST parse."""
        screen: Callable[[ast.Module, LintOptions], bool] | None = self.screened_by
        return screen is None or ctx.ast_module is None or screen(ctx.ast_module, ctx.options)

    def check(self, ctx: CodeContext) -> Iterable[Finding]:
        raise NotImplementedError


class SuppressionRule(Rule):
    """A rule over a file's suppression comments (``ddplint.suppress``): the engine runs
    it after the other rules, whose findings it needs, on Python and YAML alike."""

    kind = "suppression"

    def check_suppressions(
        self,
        path: str,
        suppressions: Suppressions,
        review: Review,
        selected: frozenset[str],
        known: tuple[str, ...],
    ) -> Iterable[Finding]:
        """Findings about the file's ``suppressions`` after ``review`` applied them to
        the other rules' findings (``selected``: the codes that ran; ``known``: all)."""
        raise NotImplementedError


class ConfigRule(Rule):
    """A rule over one YAML training config (``ConfigContext``)."""

    kind = "config"
    #: Code-fact kinds (``ddplint.code_facts``) the rule reads: the engine collects them
    #: from the Python files of the same run before it lints YAML.
    code_facts: ClassVar[tuple[str, ...]] = ()
    #: Whether the rule also reads ``.json`` files (DeepSpeed configs); YAML always.
    reads_json: ClassVar[bool] = False

    @classmethod
    def reads(cls, path: str) -> bool:
        return cls.reads_json or not is_json(path)

    def check(self, ctx: ConfigContext) -> Iterable[Finding]:
        raise NotImplementedError
