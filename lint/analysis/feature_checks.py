"""Calls that run only where the code has checked that the installed library takes
them: under a test that reads a version or a signature (``if torch.__version__ >=
"2.12":``, ``if "timeout" in inspect.signature(dist.barrier).parameters:``), or in the
body of a ``try`` with an ``except TypeError`` fallback (an unexpected keyword
argument raises ``TypeError``). Both branches of such a test count: the code chose
between the two by what is installed. A name bound once to such a reading
(``TAKES_TIMEOUT = "timeout" in inspect.signature(dist.barrier).parameters``) is one
too (``constants``). A nested function, class or lambda starts afresh (it runs where
it is called).
"""

from __future__ import annotations

import ast

from ddplint.analysis.constants import Owner, ScopedConstants

#: What a test reads when it checks what is installed: a version, a signature, the
#: parameters a signature lists.
_VERSION_WORDS = ("version", "signature", "parameters")
_NEW_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
#: How many names bound once a test is followed through.
_NAME_HOPS = 2


def checked_calls(module: ast.Module, constants: ScopedConstants) -> set[int]:
    """The ``id`` of every call of the module that runs only where it was checked."""
    found: set[int] = set()
    _Walk(constants, found).visit(module, module, False)
    return found


class _Walk:
    def __init__(self, constants: ScopedConstants, found: set[int]) -> None:
        self._constants = constants
        self._found = found

    def visit(self, node: ast.AST, owner: Owner, checked: bool) -> None:
        if isinstance(node, _NEW_SCOPES):
            checked = False
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                owner = node
        if isinstance(node, ast.Call) and checked:
            self._found.add(id(node))
        if isinstance(node, (ast.If, ast.IfExp)) and self._reads_version(node.test, owner):
            checked = True
        if isinstance(node, (ast.Try, ast.TryStar)) and any(
            map(_catches_type_error, node.handlers)
        ):
            for statement in node.body:
                self.visit(statement, owner, True)
            for part in (*node.handlers, *node.orelse, *node.finalbody):
                self.visit(part, owner, checked)
            return
        for child in ast.iter_child_nodes(node):
            self.visit(child, owner, checked)

    def _reads_version(self, test: ast.expr, owner: Owner, hops: int = 0) -> bool:
        for node in ast.walk(test):
            word = node.id if isinstance(node, ast.Name) else getattr(node, "attr", "")
            if isinstance(word, str) and any(w in word.lower() for w in _VERSION_WORDS):
                return True
            if isinstance(node, ast.Name) and hops < _NAME_HOPS:
                bound = self._constants.single_assignment(owner, node.id)
                if bound is not None and self._reads_version(bound[0], bound[1], hops + 1):
                    return True
        return False


def _catches_type_error(handler: ast.ExceptHandler) -> bool:
    caught = handler.type
    if caught is None:
        return False
    candidates = caught.elts if isinstance(caught, ast.Tuple) else [caught]
    return any(isinstance(c, ast.Name) and c.id == "TypeError" for c in candidates)
