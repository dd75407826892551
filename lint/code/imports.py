"""Making a name importable for a fix: reuse a module-level import when there is one,
else add ``from module import name`` after the leading imports."""

from __future__ import annotations

import libcst as cst

from lint.code.context import CodeContext
from lint.code.names import dotted_name
from lint.finding import Edit


def import_edit(ctx: CodeContext, module: str, name: str) -> tuple[str, Edit | None] | None:
    """The expression that names ``module.name`` in this file, and the import to add
    when none is there yet (None when no import is needed).

    ``from datetime import timedelta`` gives ``timedelta``; ``import datetime as dt``
    gives ``dt.timedelta``; otherwise ``from module import name`` is added. Returns None
    when both spellings would clash with a name the file already binds.
    """
    local_names = _module_level_names(ctx)
    for statement in _top_level_imports(ctx.module):
        if isinstance(statement, cst.ImportFrom):
            if (
                statement.relative
                or isinstance(statement.names, cst.ImportStar)
                or statement.module is None
                or dotted_name(statement.module) != module
            ):
                continue
            for alias in statement.names:
                if dotted_name(alias.name) == name:
                    return _local_name(alias) or name, None
        else:
            for alias in statement.names:
                if dotted_name(alias.name) == module:
                    return f"{_local_name(alias) or module}.{name}", None
    if name not in local_names:
        return name, _insert_import(ctx, f"from {module} import {name}")
    head = module.split(".", 1)[0]
    if head not in local_names:
        return f"{module}.{name}", _insert_import(ctx, f"import {module}")
    return None


def _local_name(alias: cst.ImportAlias) -> str | None:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return None


def _top_level_imports(module: cst.Module) -> list[cst.Import | cst.ImportFrom]:
    imports: list[cst.Import | cst.ImportFrom] = []
    for line in module.body:
        if isinstance(line, cst.SimpleStatementLine):
            imports.extend(s for s in line.body if isinstance(s, (cst.Import, cst.ImportFrom)))
    return imports


def _module_level_names(ctx: CodeContext) -> set[str]:
    """Names the file binds: every import (anywhere) and module-level definitions."""
    names = set(ctx.names.bindings)
    for line in ctx.module.body:
        if isinstance(line, (cst.FunctionDef, cst.ClassDef)):
            names.add(line.name.value)
        elif isinstance(line, cst.SimpleStatementLine):
            for statement in line.body:
                if isinstance(statement, cst.Assign):
                    names.update(
                        t.target.value for t in statement.targets if isinstance(t.target, cst.Name)
                    )
    return names


def _is_import_line(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in statement.body
    )


def _is_docstring(statement: cst.CSTNode) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _insert_import(ctx: CodeContext, text: str) -> Edit:
    """Insert ``text`` as a line after the leading imports (or the docstring)."""
    anchor: cst.CSTNode | None = None
    for position, statement in enumerate(ctx.module.body):
        if _is_import_line(statement) or (position == 0 and _is_docstring(statement)):
            anchor = statement
            continue
        break
    newline = ctx.source.newline()
    if anchor is None:
        # Before the first statement, below any shebang or comments that head the file.
        line = ctx.range_of(ctx.module.body[0])[0] if ctx.module.body else 1
        return Edit(line, 1, line, 1, text + newline)
    end_line = ctx.range_of(anchor)[2]
    lines = ctx.source.lines
    if end_line >= len(lines) and not lines[-1].endswith(("\n", "\r")):
        end = len(lines[-1]) + 1
        return Edit(end_line, end, end_line, end, newline + text)
    return Edit(end_line + 1, 1, end_line + 1, 1, text + newline)
