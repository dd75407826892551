"""One walk over a module's ``ast``: its nodes by type, and each call by the scope that
makes it (the innermost function, lambda, comprehension, class body or the module).

Everything else in the core reads these lists instead of walking the tree again.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from typing import TypeVar

from ddplint.analysis.children import child_nodes
from ddplint.analysis.control_flow import SCOPE_TYPES, Scope

Node = TypeVar("Node", bound=ast.AST)


class ModuleNodes:
    """A module's nodes by type, and its calls by scope."""

    def __init__(self, module: ast.Module) -> None:
        self.module = module
        self._by_type: dict[type[ast.AST], list[ast.AST]] = defaultdict(list)
        self.calls_by_scope: dict[Scope, list[ast.Call]] = defaultdict(list)
        self.scope_of: dict[ast.AST, Scope] = {}
        #: ``id(call)`` -> the scope that makes the call.
        self.call_scopes: dict[int, Scope] = {}
        pending: list[tuple[ast.AST, Scope]] = [(module, module)]
        while pending:
            node, scope = pending.pop()
            self._by_type[type(node)].append(node)
            if isinstance(node, ast.Call):
                self.calls_by_scope[scope].append(node)
                self.call_scopes[id(node)] = scope
            inner = node if isinstance(node, SCOPE_TYPES) else scope
            if inner is not scope:
                self.scope_of[node] = scope
            pending.extend((child, inner) for child in child_nodes(node))

    def of_type(self, kind: type[Node]) -> list[Node]:
        """Every node of exactly this type, in no particular order."""
        return self._by_type.get(kind, [])  # type: ignore[return-value]

    def scope_of_call(self, call: ast.Call) -> Scope:
        """The scope that makes ``call`` (the module for a call it does not hold)."""
        return self.call_scopes.get(id(call), self.module)

    def calls_in_order(self) -> list[ast.Call]:
        """Every call of the module, in the order of the text."""
        found = [call for calls in self.calls_by_scope.values() for call in calls]
        return sorted(found, key=lambda call: (call.lineno, call.col_offset))

    def functions(self) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
        return [*self.of_type(ast.FunctionDef), *self.of_type(ast.AsyncFunctionDef)]

    def owner_class(self, scope: Scope) -> str | None:
        """The class a method (or a scope nested in one) belongs to: how ``self.x`` is
        keyed."""
        current: ast.AST | None = scope
        while current is not None and not isinstance(current, ast.Module):
            parent = self.scope_of.get(current)
            if isinstance(parent, ast.ClassDef):
                return parent.name
            current = parent
        return None
