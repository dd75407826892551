"""Is a call reached on one rank only? The small form the code facts need, over Python's
own ``ast`` (cheap: facts are wanted from files no code rule parses), with the rank
spellings of ``analysis.api``: inside an ``if`` / ``else`` whose test reads a rank
(``trainer.is_global_zero``, ``global_rank == 0``, ``dist.get_rank()``,
``os.environ["RANK"]``), or in a function decorated ``@rank_zero_only`` (or
accelerate's ``@on_main_process``). Early exits (``if not is_global_zero: return``)
are not followed."""

from __future__ import annotations

import ast

from ddplint.analysis.api import (
    RANK_ATTRIBUTES,
    RANK_ENV_VARS,
    RANK_FUNCTION_NAMES,
    RANK_ONLY_DECORATORS,
)
from ddplint.analysis.names import dotted_name as dotted

_ENVIRONMENT_READERS = frozenset({"os.environ.get", "os.getenv", "environ.get"})

Parents = dict[ast.AST, ast.AST]


def _is_rank_variable(name: str) -> bool:
    return name.rsplit(".", 1)[-1] in RANK_FUNCTION_NAMES


def _reads_environment_rank(node: ast.AST) -> bool:
    key: ast.AST | None = None
    if isinstance(node, ast.Subscript) and dotted(node.value) in ("os.environ", "environ"):
        key = node.slice
    elif isinstance(node, ast.Call) and dotted(node.func) in _ENVIRONMENT_READERS and node.args:
        key = node.args[0]
    return isinstance(key, ast.Constant) and key.value in RANK_ENV_VARS


def reads_rank(expression: ast.AST) -> bool:
    """Whether ``expression`` reads the process rank."""
    for node in ast.walk(expression):
        if isinstance(node, ast.Attribute) and node.attr in RANK_ATTRIBUTES:
            return True
        if isinstance(node, ast.Name) and node.id in RANK_ATTRIBUTES:
            return True
        if isinstance(node, ast.Call) and _is_rank_variable(dotted(node.func) or ""):
            return True
        if _reads_environment_rank(node):
            return True
    return False


def _rank_zero_only(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if (dotted(target) or "").rsplit(".", 1)[-1] in RANK_ONLY_DECORATORS:
            return True
    return False


def rank_guard(node: ast.AST, parents: Parents) -> ast.AST | None:
    """The ``if`` or ``def`` that makes ``node`` run on some ranks only, or None."""
    child, parent = node, parents.get(node)
    while parent is not None:
        if isinstance(parent, ast.If) and child is not parent.test and reads_rank(parent.test):
            return parent
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return parent if _rank_zero_only(parent) else None
        if isinstance(parent, (ast.Lambda, ast.ClassDef)):
            return None
        child, parent = parent, parents.get(parent)
    return None
