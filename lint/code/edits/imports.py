"""Making a name importable for a fix: reuse what the file imports (``import module``,
``from module import name as alias``), else add an import in the file's style through
``edits.ensure_import``."""

from __future__ import annotations

import libcst as cst

from ddplint.code.context import CodeContext
from ddplint.code.edits.edits import can_import, ensure_import, insert_import_line
from ddplint.code.syntax.names import dotted_name
from ddplint.finding import Edit


def _alias(alias: cst.ImportAlias) -> str | None:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return None


def _existing_spelling(ctx: CodeContext, module: str, name: str) -> str | None:
    """How a module-level import already names ``module.name``, if one does."""
    for line in ctx.module.body:
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        for statement in line.body:
            if isinstance(statement, cst.Import):
                for alias in statement.names:
                    if dotted_name(alias.name) == module:
                        return f"{_alias(alias) or module}.{name}"
            elif (
                isinstance(statement, cst.ImportFrom)
                and not statement.relative
                and statement.module is not None
                and dotted_name(statement.module) == module
                and not isinstance(statement.names, cst.ImportStar)
            ):
                for alias in statement.names:
                    if dotted_name(alias.name) == name:
                        return _alias(alias) or name
    return None


def import_edit(ctx: CodeContext, module: str, name: str) -> tuple[str, Edit | None] | None:
    """The expression that names ``module.name`` in this file, and the import to add
    when none is there yet (None when no import is needed).

    ``import datetime as dt`` gives ``dt.timedelta``; ``from datetime import timedelta``
    gives ``timedelta``; otherwise ``from module import name`` is added (joining an
    existing ``from module import ...`` line), or ``import module`` when ``name`` is
    taken. Returns None when both spellings would clash with a name the file binds.
    """
    existing = _existing_spelling(ctx, module, name)
    if existing is not None:
        return existing, None
    if can_import(ctx, module, name):
        return name, ensure_import(ctx, module, name)
    head = module.split(".", 1)[0]
    if can_import(ctx, head, head) and head not in ctx.names.bindings:
        return f"{module}.{name}", insert_import_line(ctx, f"import {module}")
    return None
