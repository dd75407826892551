"""The calls a piece of code makes in the order they run, entering the functions of the
same module it calls, on CPython's ``ast``: for questions about order ("is the short
timeout set before the work one rank does while the others wait?"). Source order
stands for run order; branches and loops are flattened.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.functions import ModuleAnalysis

#: How many same-module calls deep a trace follows (each hop is a guess about order).
MAX_DEPTH = 3

_Function = ast.FunctionDef | ast.AsyncFunctionDef
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def entry_points(analysis: ModuleAnalysis) -> list[ast.Module | _Function]:
    """The module itself and each function no code of the module calls (a worker
    handed to ``mp.spawn``, a ``main`` run from elsewhere)."""
    called: set[int] = set()
    for function in (analysis.module, *analysis.nodes.functions()):
        for call in own_calls_in_order(function):
            callee = analysis.callee_of(call)
            if callee is not None and callee is not function:
                called.add(id(callee))
    functions = [f for f in analysis.nodes.functions() if id(f) not in called]
    functions.sort(key=lambda function: (function.lineno, function.col_offset))
    return [analysis.module, *functions]


def run_order(analysis: ModuleAnalysis, root: ast.Module | _Function) -> list[ast.Call]:
    """The calls ``root`` makes, in source order, each call of a same-module function
    followed by that function's own calls."""
    return list(_trace(analysis, root, 0, frozenset()))


def _trace(
    analysis: ModuleAnalysis, root: ast.Module | _Function, depth: int, entered: frozenset[int]
) -> Iterator[ast.Call]:
    for call in own_calls_in_order(root):
        yield call
        callee = analysis.callee_of(call)
        if callee is None or id(callee) in entered or depth >= MAX_DEPTH:
            continue
        yield from _trace(analysis, callee, depth + 1, entered | {id(root), id(callee)})


def own_calls_in_order(root: ast.Module | _Function) -> list[ast.Call]:
    """The calls of ``root``'s own code (not of the functions and classes it defines),
    in source order."""
    found: list[ast.Call] = []
    pending: list[ast.AST] = list(root.body)
    while pending:
        node = pending.pop()
        if isinstance(node, _NESTED):
            continue
        if isinstance(node, ast.Call):
            found.append(node)
        pending.extend(ast.iter_child_nodes(node))
    return sorted(found, key=lambda call: (call.lineno, call.col_offset))
