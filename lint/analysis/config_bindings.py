"""Which names of a module hold a configuration loaded from a file, and which key of it
an expression reads: the parameter of a ``@hydra.main(config_path=..., config_name=...)``
function, a name bound to ``OmegaConf.load("path")``; ``cfg.data.num_workers`` and
``cfg["data"]["num_workers"]`` read the key path ``("data", "num_workers")``.

Only literal arguments count (a path built at run time is unknown), and a name bound
twice in its scope is left out. Nothing is imported or run.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ddplint.analysis.names import Names

HYDRA_MAIN = frozenset({"hydra.main"})
OMEGACONF_LOAD = frozenset({"omegaconf.OmegaConf.load"})


@dataclass(frozen=True)
class ConfigBinding:
    """``name`` holds a config between ``first_line`` and ``last_line``: Hydra's
    ``config_name`` under ``config_path`` (relative to the module's folder), or the file
    ``OmegaConf.load`` reads (relative to the working directory)."""

    name: str
    first_line: int
    last_line: int
    config_path: str | None = None
    config_name: str | None = None
    loaded_file: str | None = None

    def holds(self, name: str, line: int) -> bool:
        return name == self.name and self.first_line <= line <= self.last_line


def _literal(call: ast.Call, keyword: str, position: int | None = None) -> str | None:
    found = next((k.value for k in call.keywords if k.arg == keyword), None)
    if found is None and position is not None and len(call.args) > position:
        found = call.args[position]
    if isinstance(found, ast.Constant) and isinstance(found.value, str):
        return found.value
    return None


def _hydra_binding(
    function: ast.FunctionDef | ast.AsyncFunctionDef, names: Names
) -> ConfigBinding | None:
    for decorator in function.decorator_list:
        if not isinstance(decorator, ast.Call) or names.resolve(decorator.func) not in HYDRA_MAIN:
            continue
        config_name = _literal(decorator, "config_name", 1)
        parameters = [*function.args.posonlyargs, *function.args.args]
        if config_name is None or not parameters:
            return None
        return ConfigBinding(
            parameters[0].arg,
            function.lineno,
            function.end_lineno or function.lineno,
            config_path=_literal(decorator, "config_path", 0) or "",
            config_name=config_name,
        )
    return None


def _scopes(tree: ast.Module) -> list[ast.AST]:
    return [
        tree,
        *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))),
    ]


def _own_statements(scope: ast.AST) -> list[ast.AST]:
    """The nodes of a scope, not of the functions nested in it."""
    found: list[ast.AST] = []
    pending = list(ast.iter_child_nodes(scope))
    while pending:
        node = pending.pop()
        found.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            pending.extend(ast.iter_child_nodes(node))
    return found


def _load_bindings(scope: ast.AST, names: Names) -> list[ConfigBinding]:
    """``name = OmegaConf.load("literal")`` in the scope, for names bound once there."""
    assigned: dict[str, list[ast.AST]] = {}
    for node in _own_statements(scope):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            assigned.setdefault(node.id, []).append(node)
    last_line = getattr(scope, "end_lineno", None) or 10**9
    found: list[ConfigBinding] = []
    for node in _own_statements(scope):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target, value = node.targets[0], node.value
        if not (isinstance(target, ast.Name) and isinstance(value, ast.Call)):
            continue
        if names.resolve(value.func) not in OMEGACONF_LOAD or len(assigned[target.id]) != 1:
            continue
        path = _literal(value, "file_", 0)
        if path is not None:
            found.append(ConfigBinding(target.id, node.lineno, last_line, loaded_file=path))
    return found


def config_bindings(tree: ast.Module) -> list[ConfigBinding]:
    """Every config binding of the module."""
    names = Names(tree)
    found: list[ConfigBinding] = []
    for scope in _scopes(tree):
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            hydra = _hydra_binding(scope, names)
            if hydra is not None:
                found.append(hydra)
        found.extend(_load_bindings(scope, names))
    return found


def read_key(expression: ast.AST) -> tuple[str, tuple[str, ...]] | None:
    """(name, key path) of ``name.a.b`` / ``name["a"]["b"]`` (a mix too), or None."""
    keys: list[str] = []
    while True:
        if isinstance(expression, ast.Attribute):
            keys.append(expression.attr)
            expression = expression.value
        elif (
            isinstance(expression, ast.Subscript)
            and isinstance(expression.slice, ast.Constant)
            and isinstance(expression.slice.value, str)
        ):
            keys.append(expression.slice.value)
            expression = expression.value
        else:
            break
    if not isinstance(expression, ast.Name) or not keys:
        return None
    return expression.id, tuple(reversed(keys))
