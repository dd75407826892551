"""DDP900: a suppression comment whose codes suppress nothing (ruff's RUF100)."""

from __future__ import annotations

from collections.abc import Iterator

from ddplint.finding import Applicability, Finding, Fix, Severity
from ddplint.rule import SuppressionRule
from ddplint.suppress import Code, Directive, Review, Suppressions, covers


class UnusedSuppression(SuppressionRule):
    """
    ## What it does
    Flags a `# noqa: DDPxxx`, `# ddplint: ignore[...]` or `# ddplint: file-ignore[...]`
    code that suppressed no finding in this run. A code is judged only when every rule it
    names was selected in the run (a prefix such as `DDP2` names several; a directive
    without codes names them all), so a code for a rule that did not run is never called
    unused. Codes of other tools in a shared comment (`# noqa: E501, DDP204`) are left
    alone. Opt-in: select it by its code (`--extend-select DDP900`).

    ## Why is this bad?
    A suppression outlives the finding it was written for: the code is fixed, moved or
    refactored, and the comment stays. It then silences the next real hazard on that
    statement (a collective moved under a rank test, a new `sync_dist` log) without
    anyone seeing it, and readers take it as a sign that the line is known to be risky.

    ## Example
    ```python
    if rank == 0:
        save(model)
    dist.barrier()  # noqa: DDP201
    ```

    ## Use instead
    ```python
    if rank == 0:
        save(model)
    dist.barrier()
    ```

    ## Fix safety
    The fix is safe: it removes only the codes that suppressed nothing, keeps the other
    codes of the comment (its own and other tools'), and removes the comment (or the
    line, when the comment is all it holds) when no code is left. Findings of the rules
    the run selected are unchanged by it.

    ## References
    - ruff's `unused-noqa` (RUF100): https://docs.astral.sh/ruff/rules/unused-noqa/
    - flake8's `noqa` comments: https://flake8.pycqa.org/en/latest/user/violations.html
    """

    code = "DDP900"
    name = "unused-suppression"
    summary = "A suppression comment whose codes suppress nothing"
    severity = Severity.WARNING
    default_enabled = False
    fix_applicability = Applicability.SAFE

    def check_suppressions(
        self,
        path: str,
        suppressions: Suppressions,
        review: Review,
        selected: frozenset[str],
        known: tuple[str, ...],
    ) -> Iterator[Finding]:
        """One finding per directive with unused codes, with the edit that drops them
        (``known``: every rule code, ``selected``: the codes that ran)."""
        for directive in suppressions.directives:
            unused = {
                code
                for code in directive.own_codes
                if (directive, code) not in review.used and _judged(code, selected, known)
            }
            if unused:
                yield self._finding(path, suppressions, directive, unused)

    def _finding(
        self, path: str, suppressions: Suppressions, directive: Directive, unused: set[Code]
    ) -> Finding:
        ordered = [c for c in directive.codes if c in unused]
        names = ", ".join(f"`{c.text}`" for c in ordered) if ordered[0].code != "*" else "all"
        where = "in this file" if directive.kind == "file-ignore" else "on this statement"
        message = (
            f"`# {directive.text_kind}` suppresses nothing for {names}: no finding of the "
            f"rules it names was reported {where} in this run, and every one of them ran; "
            "remove it so that it cannot hide a later finding"
        )
        last = directive.line == len(suppressions.lines)
        edit = directive.removal(unused, suppressions.line_text(directive.line), last)
        label = (
            "Remove the unused suppression"
            if len(ordered) == len(directive.codes)
            else (f"Remove {names} from the suppression")
        )
        span = (directive.line, directive.column, directive.line, directive.end_column)
        return Finding.of(
            self,
            path,
            span,
            message,
            Fix(Applicability.SAFE, (edit,), label),
            statement_lines=(directive.line, directive.line),
            summary=f"unused suppression {names} in `# {directive.text_kind}`",
        )


def _judged(code: Code, selected: frozenset[str], known: tuple[str, ...]) -> bool:
    """Whether every rule the code names ran (so that "unused" is known), and the code
    names some rule other than DDP900 itself."""
    named = [rule for rule in known if covers(code.code, rule)]
    if not named or UnusedSuppression.code in named:
        return False
    return all(rule in selected for rule in named)
