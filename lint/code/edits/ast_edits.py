"""Text edits for fixes computed from CPython ``ast`` positions: a rule that answers on
the analysis core offers a fix without a LibCST parse of the file."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ddplint.finding import Edit

if TYPE_CHECKING:
    from ddplint.code.context import CodeContext


def replace_ast_node(ctx: CodeContext, node: ast.expr, content: str) -> Edit:
    """Replace exactly the text of an expression ``node`` (its ``ast`` span, in the
    character columns edits count)."""
    line, column, end_line, end_column = ctx.ast_range(node)
    return Edit(line, column, end_line, end_column, content)


def ast_node_text(ctx: CodeContext, node: ast.AST) -> str:
    """The source text of ``node`` (an expression, statement or alias), as written."""
    return ast.get_source_segment(ctx.source.text, node) or ""


def insert_before_ast_node(ctx: CodeContext, node: ast.AST, content: str) -> Edit:
    """Insert ``content`` right before ``node`` (an empty edit at its start)."""
    line, column, _, _ = ctx.ast_range(node)
    return Edit(line, column, line, column, content)


def remove_ast_statement(ctx: CodeContext, statement: ast.stmt, block: list[ast.stmt]) -> Edit:
    """Remove ``statement``, alone on its lines in ``block`` (the body it stands in):
    its lines go, line end included; the only statement of its block becomes ``pass``."""
    line, column, end_line, end_column = ctx.ast_range(statement)
    if len(block) == 1:
        return Edit(line, column, end_line, end_column, "pass")
    last = ctx.source.lines[end_line - 1]
    if end_line < len(ctx.source.lines) or last.endswith(("\n", "\r")):
        return Edit(line, 1, end_line + 1, 1, "")
    return Edit(line, 1, end_line, len(last) + 1, "")


def shares_a_line(statement: ast.stmt, block: list[ast.stmt]) -> bool:
    """Whether another statement of ``block`` stands on one of ``statement``'s lines
    (``a(); b()``): then its lines cannot simply go."""
    last = statement.end_lineno or statement.lineno
    return any(
        other is not statement
        and other.lineno <= last
        and statement.lineno <= (other.end_lineno or other.lineno)
        for other in block
    )


def shift_continuation_lines(text: str, delta: int) -> str:
    """Move the second and later lines of ``text`` left by ``delta`` columns (right when
    negative), for a statement moved to another indentation level."""
    lines = text.split("\n")
    shifted = [lines[0]]
    for line in lines[1:]:
        if delta >= 0:
            cut = len(line) - len(line.lstrip(" \t"))
            shifted.append(line[min(delta, cut) :])
        else:
            shifted.append(" " * -delta + line if line else line)
    return "\n".join(shifted)


def ast_import_edit(ctx: CodeContext, module: str, name: str) -> tuple[str, Edit | None] | None:
    """The expression that names ``module.name`` in this file, and the import to add
    when none is there yet (None when no import is needed): the ``ast`` counterpart of
    ``imports.import_edit``, with the same edits.

    ``import datetime as dt`` gives ``dt.timedelta``; ``from datetime import timedelta``
    gives ``timedelta``; otherwise ``from module import name`` is added (joining a
    leading ``from module import ...`` line), or ``import module`` when ``name`` is
    taken. Returns None when both spellings would clash with a name the file binds.
    """
    tree = ctx.ast_module
    if tree is None:
        return None
    existing = _existing_spelling(tree, module, name)
    if existing is not None:
        return existing, None
    if _can_import(ctx, tree, module, name):
        return name, _ensure_import(ctx, tree, module, name)
    head = module.split(".", 1)[0]
    if _can_import(ctx, tree, head, head) and head not in ctx.analysis.names.imports:
        return f"{module}.{name}", _insert_import_line(ctx, tree, f"import {module}")
    return None


def _imports_from(statement: ast.stmt, module: str) -> bool:
    """``from module import a, b`` (absolute, not ``*``): a line a new name can join."""
    return (
        isinstance(statement, ast.ImportFrom)
        and statement.level == 0
        and statement.module == module
        and not any(alias.name == "*" for alias in statement.names)
    )


def _existing_spelling(tree: ast.Module, module: str, name: str) -> str | None:
    """How a module-level import already names ``module.name``, if one does."""
    for statement in tree.body:
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.name == module:
                    return f"{alias.asname or module}.{name}"
        elif _imports_from(statement, module):
            assert isinstance(statement, ast.ImportFrom)
            for alias in statement.names:
                if alias.name == name:
                    return alias.asname or name
    return None


def _can_import(ctx: CodeContext, tree: ast.Module, module: str, name: str) -> bool:
    """Whether ``from module import name`` may be added without shadowing a different
    ``name`` (an import of something else, or a module-level def, class or assignment)."""
    bound = ctx.analysis.names.imports.get(name)
    if bound is not None and bound != f"{module}.{name}":
        return False
    return not any(_defines(statement, name) for statement in tree.body)


def _defines(statement: ast.stmt, name: str) -> bool:
    """A module-level def, class or plain assignment of ``name``."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return statement.name == name
    return isinstance(statement, ast.Assign) and any(
        isinstance(target, ast.Name) and target.id == name for target in statement.targets
    )


def _ensure_import(ctx: CodeContext, tree: ast.Module, module: str, name: str) -> Edit | None:
    """The edit that makes ``name`` from ``module`` available at module level (None when
    a module-level import binds it already): joining a leading ``from module import``
    line, else a ``from module import name`` line after the leading imports."""
    for statement in tree.body:
        if _imports_from(statement, module):
            assert isinstance(statement, ast.ImportFrom)
            if any(a.name == name and (a.asname or a.name) == name for a in statement.names):
                return None
    imports, _ = _leading_imports(tree)
    for statement in imports:
        if _imports_from(statement, module):
            assert isinstance(statement, ast.ImportFrom)
            _, _, end_line, end_column = ctx.ast_range(statement.names[-1])
            return Edit(end_line, end_column, end_line, end_column, f", {name}")
    return _insert_import_line(ctx, tree, f"from {module} import {name}")


def _leading_imports(tree: ast.Module) -> tuple[list[ast.stmt], ast.stmt | None]:
    """The import statements at the top of the module (up to the first other
    statement), and the module docstring."""
    imports: list[ast.stmt] = []
    docstring: ast.stmt | None = None
    for position, statement in enumerate(tree.body):
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            imports.append(statement)
        elif (
            position == 0
            and isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, (str, bytes))
        ):
            docstring = statement
        else:
            break
    return imports, docstring


def _insert_import_line(ctx: CodeContext, tree: ast.Module, text: str) -> Edit:
    """Insert the import statement ``text`` after the last leading import (or after the
    docstring, or before the first statement), with the file's line ending."""
    imports, docstring = _leading_imports(tree)
    anchor = imports[-1] if imports else docstring
    newline = ctx.source.newline()
    lines = ctx.source.lines
    if anchor is not None:
        end_line = anchor.end_lineno or anchor.lineno
        last = lines[end_line - 1]
        if last.endswith(("\n", "\r")):
            return Edit(end_line + 1, 1, end_line + 1, 1, text + newline)
        return Edit(end_line, len(last) + 1, end_line, len(last) + 1, newline + text)
    if tree.body:
        first = tree.body[0]
        decorators = getattr(first, "decorator_list", None) or [first]
        first_line = min(node.lineno for node in decorators)
        return Edit(first_line, 1, first_line, 1, text + newline)
    if lines and not lines[-1].endswith(("\n", "\r")):
        return Edit(len(lines), len(lines[-1]) + 1, len(lines), len(lines[-1]) + 1, newline + text)
    return Edit(len(lines) + 1, 1, len(lines) + 1, 1, text + newline)


def remove_ast_argument(ctx: CodeContext, call: ast.Call, argument: ast.AST) -> Edit:
    """Remove ``argument`` (a positional expression or a ``keyword``) from ``call``,
    with its separating comma."""
    given: list[ast.expr | ast.keyword] = [*call.args, *call.keywords]
    arguments = sorted(given, key=lambda a: (a.lineno, a.col_offset))
    position = next(i for i, a in enumerate(arguments) if a is argument)
    if len(arguments) == 1:
        start = _after_open_paren(ctx, call)
        end_line, end_column = ctx.ast_range(call)[2:]
        return Edit(*start, end_line, end_column - 1, "")
    if position + 1 < len(arguments):
        start = ctx.ast_range(argument)[:2]
        following = ctx.ast_range(arguments[position + 1])[:2]
        return Edit(*start, *following, "")
    previous_end = ctx.ast_range(arguments[position - 1])[2:]
    return Edit(*previous_end, *ctx.ast_range(argument)[2:], "")


def _after_open_paren(ctx: CodeContext, call: ast.Call) -> tuple[int, int]:
    """The (line, column) just after the ``(`` that opens the arguments of ``call``."""
    line, column = ctx.ast_range(call.func)[2:]
    starts = ctx.source.line_starts
    offset = ctx.source.text.index("(", ctx.source.offset(line, column)) + 1
    while line < len(starts) and starts[line] <= offset:
        line += 1
    return line, offset - starts[line - 1] + 1


def insert_ast_statement_before(ctx: CodeContext, statement: ast.stmt, code: str) -> Edit:
    """A new line holding ``code`` just above ``statement`` (a statement that starts its
    own line), indented like it and ended with the file's line end."""
    line = statement.lineno
    text = ctx.source.line_text(line)
    indent = text[: len(text) - len(text.lstrip())]
    return Edit(line, 1, line, 1, f"{indent}{code}{ctx.source.newline()}")


def call_statement(tree: ast.Module, call: ast.Call) -> tuple[ast.Expr, list[ast.stmt]] | None:
    """The statement that is only ``call`` (``torch.cuda.synchronize()``) and the block
    it stands in; None when the call is part of a larger expression."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            for statement in block:
                if isinstance(statement, ast.Expr) and statement.value is call:
                    return statement, block
    return None


def remove_ast_call_statement(ctx: CodeContext, call: ast.Call) -> Edit | None:
    """Remove the statement that is only ``call`` (also from a line it shares); None
    when the call is part of a larger expression."""
    found = call_statement(ctx.analysis.module, call)
    if found is None:
        return None
    statement, block = found
    if shares_a_line(statement, block):
        return _remove_from_line(ctx, statement, block)
    return remove_ast_statement(ctx, statement, block)


def _remove_from_line(ctx: CodeContext, statement: ast.stmt, block: list[ast.stmt]) -> Edit:
    """Remove ``statement`` from a line it shares (``a(); b()``): up to the next
    statement's start, or from the previous statement's end when it is the last."""
    index = block.index(statement)
    line, column, end_line, end_column = ctx.ast_range(statement)
    if index + 1 < len(block):
        following = ctx.ast_range(block[index + 1])
        return Edit(line, column, following[0], following[1], "")
    previous = ctx.ast_range(block[index - 1])
    return Edit(previous[2], previous[3], end_line, end_column, "")


def add_ast_keyword(ctx: CodeContext, call: ast.Call, text: str) -> Edit:
    """Append ``text`` (``name=value``) to the arguments of ``call``."""
    given: list[ast.expr | ast.keyword] = [*call.args, *call.keywords]
    if given:
        last = max(given, key=lambda a: (a.end_lineno or 0, a.end_col_offset or 0))
        _, _, end_line, end_column = ctx.ast_range(last)
        return Edit(end_line, end_column, end_line, end_column, f", {text}")
    _, _, end_line, end_column = ctx.ast_range(call)
    return Edit(end_line, end_column - 1, end_line, end_column - 1, text)
