"""Imports a fix leaves unused, on CPython's ``ast``: when the code a fix removes held
the only uses of a module-level import (``timedelta`` in a dropped
``timeout=timedelta(...)``), the fix removes the import too, so that it leaves no ruff
F401 behind. The ``ast`` counterpart of ``unused_imports`` (the same edits)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ddplint.code.edits.ast_edits import ast_node_text, remove_ast_statement, shares_a_line
from ddplint.finding import Edit

if TYPE_CHECKING:
    from ddplint.code.context import CodeContext

_Import = ast.Import | ast.ImportFrom


def orphaned_ast_import_edits(ctx: CodeContext, removed: Sequence[ast.AST]) -> dict[str, Edit]:
    """For each module-level import that only the nodes in ``removed`` use, the edit that
    removes it, by the name it binds. Aliases of one statement share one edit (the whole
    statement when none of its names is left), so fixes that need the same removal carry
    the same edit and it is applied once."""
    tree = ctx.ast_module
    if not removed or tree is None:
        return {}
    inside = {id(node) for root in removed for node in ast.walk(root)}
    used_inside = {
        node.id for root in removed for node in ast.walk(root) if isinstance(node, ast.Name)
    }
    used_elsewhere = _uses_outside(tree, inside)
    found: dict[str, Edit] = {}
    for statement in _module_imports(tree):
        names = [_local_name(alias) for alias in statement.names]
        orphaned = [
            name
            for name in names
            if name is not None and name in used_inside and name not in used_elsewhere
        ]
        if not orphaned:
            continue
        kept = [a for a, name in zip(statement.names, names, strict=True) if name not in orphaned]
        edit = _remove_line(ctx, tree, statement) if not kept else _keep_only(ctx, statement, kept)
        if edit is not None:
            found.update(dict.fromkeys(orphaned, edit))
    return found


def _module_imports(tree: ast.Module) -> Iterator[_Import]:
    """Import statements at module level (not under ``if``/``try``, not ``__future__``,
    not ``*``)."""
    for statement in tree.body:
        if isinstance(statement, ast.Import) or (
            isinstance(statement, ast.ImportFrom)
            and statement.module != "__future__"
            and not any(alias.name == "*" for alias in statement.names)
        ):
            yield statement


def _local_name(alias: ast.alias) -> str | None:
    """The name an alias binds, when it is one plain name (``import a.b`` is left alone)."""
    if alias.asname is not None:
        return alias.asname
    return None if "." in alias.name else alias.name


def _uses_outside(tree: ast.Module, inside: set[int]) -> set[str]:
    """Names used or bound anywhere but inside the removed nodes (a parameter, a
    ``def`` of that name), plus every word of a string literal other than a docstring
    (``__all__``, string annotations), so that those keep their imports."""
    used: set[str] = set()
    docstrings = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    for node in ast.walk(tree):
        if id(node) in inside:
            continue
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.arg):  # a parameter of that name: left alone
            used.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            used.add(node.name)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            used.update(re.findall(r"[A-Za-z_]\w*", node.value))
    return used


def _remove_line(ctx: CodeContext, tree: ast.Module, statement: _Import) -> Edit | None:
    """Remove the import statement (None when another statement shares its line); when
    it stood alone between blank lines (or at the top of the file) one of the blank
    lines goes too, so none doubles up."""
    if shares_a_line(statement, tree.body):
        return None
    edit = remove_ast_statement(ctx, statement, tree.body)
    lines = ctx.source.lines
    if edit.content or (edit.column, edit.end_column) != (1, 1):
        return edit
    blank_above = edit.line == 1 or not lines[edit.line - 2].strip()
    if blank_above and edit.end_line <= len(lines) and not lines[edit.end_line - 1].strip():
        return replace(edit, end_line=edit.end_line + 1)
    return edit


def _keep_only(ctx: CodeContext, statement: _Import, kept: list[ast.alias]) -> Edit:
    """Rewrite the names of an import statement, from its first name to its last, as the
    ``kept`` ones (a trailing comma and parentheses stay)."""
    line, column = ctx.ast_range(statement.names[0])[:2]
    end_line, end_column = ctx.ast_range(statement.names[-1])[2:]
    text = ", ".join(ast_node_text(ctx, alias) for alias in kept)
    return Edit(line, column, end_line, end_column, text)
