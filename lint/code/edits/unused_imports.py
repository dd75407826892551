"""Imports a fix leaves unused: when the code a fix removes held the only uses of a
module-level import (``timedelta`` in a dropped ``timeout=timedelta(...)``), the fix
removes the import too, so that it does not leave ruff's F401 behind."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

import libcst as cst

from ddplint.code.context import CodeContext
from ddplint.code.edits.edits import remove_small_statement
from ddplint.finding import Edit


def _local_name(alias: cst.ImportAlias) -> str | None:
    """The name an alias binds, when it is one plain name (``import a.b`` is left alone)."""
    if alias.asname is not None:
        bound = alias.asname.name
        return bound.value if isinstance(bound, cst.Name) else None
    return alias.name.value if isinstance(alias.name, cst.Name) else None


def _module_imports(ctx: CodeContext) -> Iterable[cst.Import | cst.ImportFrom]:
    """Import statements at module level (not under ``if``/``try``, not ``__future__``)."""
    for line in ctx.module.body:
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        for statement in line.body:
            if isinstance(statement, cst.Import) or (
                isinstance(statement, cst.ImportFrom)
                and not isinstance(statement.names, cst.ImportStar)
                and _module_name(statement) != "__future__"
            ):
                yield statement


def _module_name(statement: cst.ImportFrom) -> str | None:
    return statement.module.value if isinstance(statement.module, cst.Name) else None


def _is_use(ctx: CodeContext, name: cst.Name) -> bool:
    """Whether a ``Name`` node reads or binds the name (not an attribute after a dot, a
    keyword argument's name, or part of an import statement)."""
    parent = ctx.index.parent.get(name)
    if isinstance(parent, cst.Attribute) and parent.attr is name:
        return False
    if isinstance(parent, cst.Arg) and parent.keyword is name:
        return False
    return ctx.index.enclosing(name, cst.Import, cst.ImportFrom) is None


def _uses_outside(ctx: CodeContext, removed: Sequence[cst.CSTNode]) -> set[str]:
    """Names used anywhere but inside ``removed``, plus every word of a string literal
    other than a docstring (``__all__``, string annotations) so that those keep their
    imports."""
    inside = {
        id(n) for root in removed for n in (root, *ctx.index.walk_within(root, into_functions=True))
    }
    used = {n.value for n in ctx.index.nodes(cst.Name) if id(n) not in inside and _is_use(ctx, n)}
    for string in ctx.index.nodes(cst.SimpleString):
        if not isinstance(ctx.index.parent.get(string), cst.Expr):  # a docstring is prose
            used.update(re.findall(r"[A-Za-z_]\w*", string.value))
    return used


def orphaned_import_edits(ctx: CodeContext, removed: Sequence[cst.CSTNode]) -> dict[str, Edit]:
    """For each module-level import that only the nodes in ``removed`` use, the edit that
    removes it, by the name it binds. Aliases of one statement share one edit (the whole
    statement when none of its names is left), so fixes that need the same removal carry
    the same edit and it is applied once."""
    if not removed:
        return {}
    used_elsewhere = _uses_outside(ctx, removed)
    used_inside = {
        n.value
        for root in removed
        for n in (root, *ctx.index.walk_within(root, into_functions=True))
        if isinstance(n, cst.Name) and _is_use(ctx, n)
    }
    found: dict[str, Edit] = {}
    for statement in _module_imports(ctx):
        aliases = list(statement.names) if not isinstance(statement.names, cst.ImportStar) else []
        names = [_local_name(alias) for alias in aliases]
        orphaned = [
            name
            for name in names
            if name is not None and name in used_inside and name not in used_elsewhere
        ]
        if not orphaned:
            continue
        kept = [a for a, name in zip(aliases, names, strict=True) if name not in orphaned]
        edit = _remove_line(ctx, statement) if not kept else _keep_only(ctx, aliases, kept)
        if edit is not None:
            found.update(dict.fromkeys(orphaned, edit))
    return found


def _remove_line(ctx: CodeContext, statement: cst.Import | cst.ImportFrom) -> Edit | None:
    """Remove the import statement; when it stood alone between blank lines (or at the
    top of the file) one of the blank lines goes too, so none doubles up."""
    edit = remove_small_statement(ctx, statement)
    lines = ctx.source.lines
    if edit is None or edit.content or (edit.column, edit.end_column) != (1, 1):
        return edit
    blank_above = edit.line == 1 or not lines[edit.line - 2].strip()
    if blank_above and edit.end_line <= len(lines) and not lines[edit.end_line - 1].strip():
        return replace(edit, end_line=edit.end_line + 1)
    return edit


def _keep_only(
    ctx: CodeContext, aliases: list[cst.ImportAlias], kept: list[cst.ImportAlias]
) -> Edit:
    """Rewrite the names of an import statement, from its first name to its last, as the
    ``kept`` ones (a trailing comma and parentheses stay)."""
    line, column, _, _ = ctx.range_of(aliases[0])
    last = aliases[-1]
    _, _, end_line, end_column = ctx.range_of(last.asname if last.asname else last.name)
    text = ", ".join(
        ctx.module.code_for_node(a.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for a in kept
    )
    return Edit(line, column, end_line, end_column, text)
