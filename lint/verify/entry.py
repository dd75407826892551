"""Check the entry before launching any rank: its file exists, compiles, and (for
``module:function``) defines the function. Nothing is imported or run."""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path


class EntryError(Exception):
    """The entry cannot be run: the run is refused before launch (exit 2)."""


def entry_file(entry: str) -> Path:
    """The file behind a script or ``module[:function]`` entry, found without importing."""
    if entry.endswith(".py") or os.path.isfile(entry):
        path = Path(entry)
        if not path.is_file():
            raise EntryError(f"no such script: {entry}")
        return path.resolve()
    module = entry.partition(":")[0]
    parts = module.split(".")
    for root in (os.getcwd(), *sys.path):
        base = Path(root or os.curdir).joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate.resolve()
    raise EntryError(f"cannot find module `{module}` (entry `{entry}`) from {os.getcwd()}")


def parse_entry(path: Path) -> ast.Module:
    """The entry's syntax tree; the compiler's own message when it does not compile."""
    try:
        source = path.read_bytes()
    except OSError as exc:
        raise EntryError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        tree = ast.parse(source, filename=str(path))
        compile(tree, str(path), "exec", dont_inherit=True)
    except SyntaxError as exc:
        where = f"{exc.filename or path}:{exc.lineno or 0}"
        column = f":{exc.offset}" if exc.offset else ""
        raise EntryError(
            f"{where}{column}: {type(exc).__name__}: {exc.msg} (the entry does not "
            "compile; no rank was launched)"
        ) from exc
    except ValueError as exc:  # null bytes in the source
        raise EntryError(f"{path}: {exc} (the entry does not compile)") from exc
    return tree


def top_level_names(tree: ast.Module) -> set[str] | None:
    """Names the module binds at its top level; None when that cannot be known without
    running it (``from x import *``, a module ``__getattr__``, ``globals()`` writes)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return None
        if isinstance(node, ast.Name) and node.id in ("globals", "setattr", "vars"):
            return None
    for node in _top_statements(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).partition(".")[0] for a in node.names)
        else:
            for child in ast.walk(node):
                if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                    names.add(child.id)
    if "__getattr__" in names:
        return None
    return names


def _top_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """Top-level statements, with those inside top-level if/try/with blocks."""
    out: list[ast.stmt] = []
    for node in body:
        out.append(node)
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(node, field, None)
            if isinstance(inner, list) and not isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            ):
                out.extend(_top_statements(inner))
        for handler in getattr(node, "handlers", []) or []:
            out.extend(_top_statements(handler.body))
    return out


def check_entry(entry: str) -> Path:
    """The entry's file, once it is known to compile and to define its function."""
    path = entry_file(entry)
    tree = parse_entry(path)
    module, _, function = entry.partition(":")
    if function and not entry.endswith(".py"):
        name = function.split(".")[0]
        names = top_level_names(tree)
        if names is not None and name not in names:
            raise EntryError(
                f"`{module}` ({path}) defines no `{name}` at its top level (entry `{entry}`)"
            )
    return path
