"""What a code rule sees: the parsed module and the semantic layer, computed lazily and
shared by every rule that runs on the file."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING

import libcst as cst

from ddplint.analysis.control_flow import unreachable_lines
from ddplint.analysis.device_queue import DeviceQueue
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.host_waits import HostWaits
from ddplint.analysis.step_paths import StepPaths, host_waits_of
from ddplint.analysis.step_syncs import HostSync, step_syncs
from ddplint.code.project.encoding import OPTIONS_KEY
from ddplint.code.project.view import ProjectView
from ddplint.code.syntax.column_map import ColumnMap, regenerated_code
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import ImportTable
from ddplint.code.syntax.python_ast import parse_python
from ddplint.code.syntax.safe_parse import parse_module
from ddplint.code.syntax.statement_positions import StatementPositions
from ddplint.code_facts import is_test_file
from ddplint.finding import Finding, Fix, Related, RuleIdentity
from ddplint.source import SourceFile

if TYPE_CHECKING:
    from ddplint.code.values.config_reads import ConfigReads
    from ddplint.code.values.shipped_precision import ShippedPrecision
    from ddplint.settings import LintOptions


class CodeContext:
    """One Python file: source, its ``ast`` and LibCST module (each parsed when first
    asked for), and the shared facts rules ask for."""

    def __init__(self, source: SourceFile, options: LintOptions) -> None:
        self.source = source
        self.options = options

    @classmethod
    def parse(cls, source: SourceFile, options: LintOptions) -> CodeContext:
        """A context whose LibCST module is parsed now; raises what ``module`` raises."""
        context = cls(source, options)
        _ = context.module
        return context

    @cached_property
    def module(self) -> cst.Module:
        """The LibCST module, parsed on first use (a file whose rules all answer on
        ``ast`` is never parsed with LibCST); raises ``libcst.ParserSyntaxError`` on
        invalid code and what ``safe_parse.parse_module`` raises on pathological
        nesting."""
        return parse_module(self.source.text)

    @cached_property
    def ast_module(self) -> ast.Module | None:
        """CPython's ``ast`` of the module (one parse, shared with the analysis core and
        the project summary), or None where CPython refuses it (syntax newer than this
        Python, which LibCST may still read)."""
        try:
            return parse_python(self.source.text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None

    @cached_property
    def index(self) -> ModuleIndex:
        return ModuleIndex(self.module)

    @cached_property
    def names(self) -> ImportTable:
        return ImportTable(self.index)

    @cached_property
    def project(self) -> ProjectView:
        """What the project model says about the names this file uses (empty when the
        file is linted without its project)."""
        return ProjectView.decode(self.options.fact(OPTIONS_KEY))

    @cached_property
    def host_waits(self) -> HostWaits:
        """The core's host-wait questions, on the analysis's nodes, names and graphs."""
        return host_waits_of(self.analysis)

    @cached_property
    def step_paths(self) -> StepPaths:
        """The core's step path: which code runs on every training step, and why."""
        return StepPaths(self.analysis, in_training=self.in_training, waits=self.host_waits)

    @cached_property
    def device_queue(self) -> DeviceQueue:
        """The core's device queue along the module's functions (what drains it)."""
        return DeviceQueue(self.host_waits, self.analysis, self._shipped_precision)

    @cached_property
    def _shipped_precision(self) -> ShippedPrecision | None:
        from ddplint.code.values.shipped_precision import ShippedPrecision

        root = self.options.project_root
        return ShippedPrecision(str(root), self.source.path) if root else None

    def config_answers(self) -> dict[str, bool]:
        """What the project's configs answered the rules (the precision they ship): the
        findings rest on these files too, so a cached outcome is checked against them."""
        shipped = self.__dict__.get("_shipped_precision")
        return dict(shipped.answers) if shipped is not None else {}

    @cached_property
    def step_syncs(self) -> list[HostSync]:
        """The core's host synchronisations (reads, cache releases) run every step."""
        return step_syncs(self.analysis, self.step_paths, self.device_queue)

    @cached_property
    def in_training(self) -> bool:
        """Whether the file may run in a training step: not a test (which runs a step or
        two to check numbers), not a module only programs that never train run (an
        export or conversion script's model copy)."""
        return not is_test_file(self.source.path) and not self.project.off_training()

    def never_runs(self, line: int) -> bool:
        """Whether nothing in the project can run the code at ``line``: the file is run
        by nothing, or the line lies in a top-level function or class nothing
        references (``code.project.reach``). Findings there are not reported."""
        return self.project.never_runs(self._definitions_by_line.get(line))

    def runs_alone(self, line: int) -> bool:
        """Whether the code at ``line`` runs only in a one-process job (its program
        starts no process group, or a branch only such a job takes: the analysis
        core's ``single_process``). Findings of rules whose hazard needs peers are not
        reported there."""
        return self.ast_module is not None and self.analysis.single_process.holds_at(line)

    @cached_property
    def unreachable_lines(self) -> frozenset[int]:
        """The lines no way reaches (after a jump in their block); findings there are
        not reported: the code never runs."""
        module = self.ast_module
        return unreachable_lines(module) if module is not None else frozenset()

    @cached_property
    def _definitions_by_line(self) -> dict[int, str]:
        """The top-level function or class each line of the module lies in (decorators
        included), for the definitions the project model says nothing references."""
        found: dict[int, str] = {}
        module = self.ast_module
        if module is None or not self.project.never_runs_anything():
            return found
        for statement in module.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                first = min([statement.lineno, *(d.lineno for d in statement.decorator_list)])
                last = statement.end_lineno or statement.lineno
                found.update(dict.fromkeys(range(first, last + 1), statement.name))
        return found

    @cached_property
    def config_reads(self) -> ConfigReads:
        """Values the module reads from the YAML config it is bound to (``@hydra.main``,
        ``OmegaConf.load``), with the file and line that set them."""
        from ddplint.code.values.config_reads import ConfigReads

        return ConfigReads(self.source.text, self.source.path, self.options.project_root)

    @cached_property
    def analysis(self) -> ModuleAnalysis:
        """The analysis core over the module's ``ast`` (``ddplint.analysis``)."""
        return ModuleAnalysis(parse_python(self.source.text), self.project.core_facts())

    def ast_range(self, node: ast.AST) -> tuple[int, int, int, int]:
        """1-based (line, column, end_line, end_column) of an ``ast`` node, end exclusive
        (``ast`` counts columns in UTF-8 bytes; these count characters)."""
        lines = self.source.lines
        line = getattr(node, "lineno", 1)
        end_line = getattr(node, "end_lineno", None) or line

        def column(number: int, offset: int) -> int:
            text = lines[number - 1] if number - 1 < len(lines) else ""
            return len(text.encode("utf-8")[:offset].decode("utf-8", "replace")) + 1

        end_offset = getattr(node, "end_col_offset", None) or 0
        return (
            line,
            column(line, getattr(node, "col_offset", 0)),
            end_line,
            column(end_line, end_offset),
        )

    def ast_finding(
        self,
        rule: RuleIdentity,
        node: ast.AST,
        message: str,
        *,
        summary: str = "",
        related: Sequence[tuple[ast.AST, str]] = (),
        fix: Fix | None = None,
    ) -> Finding:
        """A finding of ``rule`` at an ``ast`` node (a compound statement: its header
        line); a suppression on any of its lines applies. ``related``: other nodes it
        names, each with what it is; ``fix``: edits from ``ast`` positions
        (``ddplint.code.edits.ast_edits``), no LibCST parse needed."""
        span = self.ast_range(node)
        if isinstance(node, (ast.If, ast.While, ast.For, ast.AsyncFor, ast.With)):
            header = node.body[0].lineno - 1 if node.body else span[0]
            header_text = self.source.lines[span[0] - 1].rstrip("\r\n")
            span = (span[0], span[1], span[0], len(header_text) + 1)
            statement_lines = (span[0], max(span[0], header))
        else:
            statement_lines = self._statement_lines(node, span)
        places = tuple(
            Related(*self.ast_range(place)[:2], what)
            for place, what in related
            if getattr(place, "lineno", None) is not None
        )
        return Finding.of(
            rule,
            self.source.path,
            span,
            message,
            fix,
            statement_lines=statement_lines,
            summary=summary,
            related=places,
        )

    def _statement_lines(self, node: ast.AST, span: tuple[int, int, int, int]) -> tuple[int, int]:
        """The lines a suppression of a finding at ``node`` may sit on: those of the
        smallest statement holding it (a compound statement's header only), as
        ``finding`` gives for LibCST nodes."""
        statement = _enclosing_statement(self.ast_module, node) if self.ast_module else None
        if statement is None or statement is node:
            return (span[0], span[2])
        first = statement.lineno
        if isinstance(getattr(statement, "body", None), list) or isinstance(statement, ast.Match):
            last = max(span[2], first)  # a compound statement: its header, not its body
        else:
            last = statement.end_lineno or first
        return (min(first, span[0]), max(last, span[2]))

    @cached_property
    def _positions(self) -> StatementPositions:
        # Asked only for files with a finding: it regenerates the statements asked about.
        return StatementPositions(self.module, self.source.text, self.index)

    @cached_property
    def column_map(self) -> ColumnMap:
        """LibCST's columns on the file's own text (they differ on lines that start with
        a form feed, which LibCST leaves out of the code it regenerates)."""
        return ColumnMap(self.source.text, regenerated_code(self.module, self.source.text))

    def range_of(self, node: cst.CSTNode) -> tuple[int, int, int, int]:
        """1-based (line, column, end_line, end_column) of ``node`` in the file's text,
        end exclusive."""
        code_range = self._positions[node]
        start, end = code_range.start, code_range.end
        columns = self.column_map
        return (
            start.line,
            columns.column(start.line, start.column) + 1,
            end.line,
            columns.column(end.line, end.column) + 1,
        )

    def node_text(self, node: cst.CSTNode) -> str:
        line, column, end_line, end_column = self.range_of(node)
        return self.source.text[
            self.source.offset(line, column) : self.source.offset(end_line, end_column)
        ]

    def finding(
        self,
        rule: RuleIdentity,
        node: cst.CSTNode,
        message: str,
        fix: Fix | None = None,
        *,
        summary: str = "",
    ) -> Finding:
        """A finding of ``rule`` spanning ``node``; suppressions on any line of the
        enclosing statement apply to it. ``summary`` is the short clause concise output
        shows (``message`` is the whole explanation)."""
        line, column, end_line, end_column = self.range_of(node)
        statement = self.index.enclosing_statement(node)
        if statement is self.module:
            statement_lines = (line, end_line)
        else:
            s_line, _, s_end_line, _ = self.range_of(statement)
            if isinstance(statement, cst.BaseCompoundStatement):
                # A compound statement's suppression lives on its header, not its body.
                s_end_line = max(end_line, s_line)
            statement_lines = (min(s_line, line), max(s_end_line, end_line))
        span = (line, column, end_line, end_column)
        if fix is not None and not self.column_map.aligned:
            fix = None  # positions on some line are not exact: an edit could land wrong
        return Finding.of(
            rule,
            self.source.path,
            span,
            message,
            fix,
            statement_lines=statement_lines,
            summary=summary,
        )


def _position(node: ast.AST) -> tuple[int, int, int, int]:
    return (
        getattr(node, "lineno", 0),
        getattr(node, "col_offset", 0),
        getattr(node, "end_lineno", None) or 0,
        getattr(node, "end_col_offset", None) or 0,
    )


def _holds(outer: ast.AST, inner: ast.AST) -> bool:
    """Whether ``outer``'s span holds ``inner``'s."""
    start, end = _position(outer), _position(inner)
    return start[:2] <= end[:2] and end[2:] <= start[2:]


def _enclosing_statement(module: ast.Module, node: ast.AST) -> ast.stmt | None:
    """The smallest statement whose span holds ``node`` (``node`` itself when it is
    one), found by descending the statement lists that hold it."""
    found: ast.stmt | None = None
    statements: list[ast.stmt] = module.body
    while statements:
        holder = next((s for s in statements if _holds(s, node)), None)
        if holder is None:
            break
        found = holder
        if holder is node:
            break
        statements = [
            child
            for _, value in ast.iter_fields(holder)
            if isinstance(value, list)
            for item in value
            for child in ([item] if isinstance(item, ast.stmt) else getattr(item, "body", []))
            if isinstance(child, ast.stmt)
        ]
    return found
