"""Text edits for code fixes, computed from node positions (never a full re-print):
replace a node, add an import a fix needs."""

from __future__ import annotations

import libcst as cst

from ddplint.code.context import CodeContext
from ddplint.code.syntax.names import dotted_name
from ddplint.finding import Edit


def replace_node(ctx: CodeContext, node: cst.CSTNode, content: str) -> Edit:
    """Replace exactly the text of ``node``."""
    line, column, end_line, end_column = ctx.range_of(node)
    return Edit(line, column, end_line, end_column, content)


class ImportConflict(ValueError):
    """The name a fix wants to import is already bound to something else."""


def can_import(ctx: CodeContext, module: str, name: str) -> bool:
    """Whether ``from module import name`` may be added without shadowing a different
    ``name`` (an import of something else, or a module-level def, class or assignment)."""
    bound = ctx.names.bindings.get(name)
    if bound is not None and bound != f"{module}.{name}":
        return False
    return not any(_defines(statement, name) for statement in ctx.module.body)


def ensure_import(ctx: CodeContext, module: str, name: str) -> Edit | None:
    """The edit that makes ``name`` from ``module`` available at module level, or None
    when a module-level import already binds it.

    The name joins an existing ``from module import ...`` line of the file's leading
    imports when there is one; otherwise a ``from module import name`` line goes after
    the last leading import (or after the docstring, or before the first statement),
    with the file's line ending. Several fixes asking for the same import get the same
    edit, which is applied once. Raises ``ImportConflict`` when ``name`` is bound to
    something else (check ``can_import`` first).
    """
    if _imported_at_module_level(ctx, module, name):
        return None
    if not can_import(ctx, module, name):
        raise ImportConflict(f"`{name}` is already bound in {ctx.source.path}")
    imports, _ = _leading_imports(ctx.module)
    for import_line in imports:
        for statement in import_line.body:
            if _extends(statement, module):
                assert isinstance(statement, cst.ImportFrom)
                assert not isinstance(statement.names, cst.ImportStar)
                last = statement.names[-1]
                end = last.asname.name if last.asname is not None else last.name
                _, _, end_line, end_column = ctx.range_of(end)
                return Edit(end_line, end_column, end_line, end_column, f", {name}")
    return insert_import_line(ctx, f"from {module} import {name}")


def insert_import_line(ctx: CodeContext, text: str) -> Edit:
    """Insert the import statement ``text`` after the last leading import (or after the
    docstring, or before the first statement), with the file's line ending."""
    imports, docstring = _leading_imports(ctx.module)
    anchor = imports[-1] if imports else docstring
    if anchor is not None:
        return _insert_after(ctx, anchor, text)
    newline = ctx.source.newline()
    if ctx.module.body:
        first = ctx.module.body[0]
        first_line = ctx.range_of(first)[0] - len(first.leading_lines)
        return Edit(first_line, 1, first_line, 1, text + newline)
    lines = ctx.source.lines
    if lines and not lines[-1].endswith(("\n", "\r")):
        return Edit(len(lines), len(lines[-1]) + 1, len(lines), len(lines[-1]) + 1, newline + text)
    return Edit(len(lines) + 1, 1, len(lines) + 1, 1, text + newline)


def _insert_after(ctx: CodeContext, statement: cst.CSTNode, text: str) -> Edit:
    """Insert the line ``text`` after the line where ``statement`` ends."""
    newline = ctx.source.newline()
    end_line = ctx.range_of(statement)[2]
    last = ctx.source.lines[end_line - 1]
    if last.endswith(("\n", "\r")):
        return Edit(end_line + 1, 1, end_line + 1, 1, text + newline)
    return Edit(end_line, len(last) + 1, end_line, len(last) + 1, newline + text)


def _leading_imports(
    module: cst.Module,
) -> tuple[list[cst.SimpleStatementLine], cst.SimpleStatementLine | None]:
    """The import lines at the top of the module (up to the first other statement),
    and the module docstring's line."""
    imports: list[cst.SimpleStatementLine] = []
    docstring: cst.SimpleStatementLine | None = None
    for position, statement in enumerate(module.body):
        if not isinstance(statement, cst.SimpleStatementLine):
            break
        if all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in statement.body):
            imports.append(statement)
        elif position == 0 and _is_docstring(statement):
            docstring = statement
        else:
            break
    return imports, docstring


def _is_docstring(line: cst.SimpleStatementLine) -> bool:
    return (
        len(line.body) == 1
        and isinstance(line.body[0], cst.Expr)
        and isinstance(line.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _extends(statement: cst.BaseSmallStatement, module: str) -> bool:
    """``from module import a, b`` (absolute, not ``*``): a line a new name can join."""
    return (
        isinstance(statement, cst.ImportFrom)
        and not statement.relative
        and statement.module is not None
        and dotted_name(statement.module) == module
        and not isinstance(statement.names, cst.ImportStar)
    )


def _imported_at_module_level(ctx: CodeContext, module: str, name: str) -> bool:
    for line in ctx.module.body:
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        for statement in line.body:
            if not _extends(statement, module):
                continue
            assert isinstance(statement, cst.ImportFrom)
            assert not isinstance(statement.names, cst.ImportStar)
            for alias in statement.names:
                local = alias.asname.name if alias.asname is not None else alias.name
                if (
                    isinstance(local, cst.Name)
                    and local.value == name
                    and dotted_name(alias.name) == name
                ):
                    return True
    return False


def _defines(statement: cst.BaseStatement, name: str) -> bool:
    """A module-level def, class or plain assignment of ``name``."""
    if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
        return statement.name.value == name
    if isinstance(statement, cst.SimpleStatementLine):
        return any(
            isinstance(small, cst.Assign)
            and any(
                isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets
            )
            for small in statement.body
        )
    return False
