"""Names resolved through imports: ``dist.barrier`` -> ``torch.distributed.barrier``.

The import table is per module and ignores scopes: an import anywhere in the file binds
its name for the whole file, and module-level aliases (``dist = torch.distributed``)
count too. That is exact for the usual layout (imports at the top) and cheap.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ddplint.code.syntax.module_index import ModuleIndex


def dotted_name(expr: cst.BaseExpression) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, None for anything else."""
    parts: list[str] = []
    while isinstance(expr, cst.Attribute):
        parts.append(expr.attr.value)
        expr = expr.value
    if isinstance(expr, cst.Name):
        parts.append(expr.value)
        return ".".join(reversed(parts))
    return None


def _module_dotted(node: cst.BaseExpression | None) -> str:
    if node is None:
        return ""
    return dotted_name(node) or ""


class ImportTable:
    """Which fully qualified name each local name stands for."""

    def __init__(self, index: ModuleIndex) -> None:
        self.bindings: dict[str, str] = {}
        for node in index.nodes(cst.Import):
            for alias in node.names:
                full = _module_dotted(alias.name)
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    self.bindings[alias.asname.name.value] = full
                else:
                    head = full.split(".", 1)[0]
                    self.bindings[head] = head
        for source in index.nodes(cst.ImportFrom):
            if isinstance(source.names, cst.ImportStar):
                continue
            module = "." * len(source.relative) + _module_dotted(source.module)
            for alias in source.names:
                name = _module_dotted(alias.name)
                local = name
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    local = alias.asname.name.value
                self.bindings[local] = f"{module}.{name}" if module else name
        self._module_level_aliases(index)

    def _module_level_aliases(self, index: ModuleIndex) -> None:
        """``dist = torch.distributed`` at module level binds ``dist``."""
        for line in index.module.body:
            if not isinstance(line, cst.SimpleStatementLine):
                continue
            for statement in line.body:
                if (
                    isinstance(statement, cst.Assign)
                    and len(statement.targets) == 1
                    and isinstance(statement.targets[0].target, cst.Name)
                    and isinstance(statement.value, (cst.Name, cst.Attribute))
                ):
                    resolved = self.qualified_name(statement.value)
                    if resolved is not None:
                        self.bindings[statement.targets[0].target.value] = resolved

    def qualified_name(self, expr: cst.BaseExpression) -> str | None:
        """The fully qualified name of a Name/Attribute chain rooted in an import."""
        dotted = dotted_name(expr)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        bound = self.bindings.get(head)
        if bound is None:
            return None
        return f"{bound}.{rest}" if rest else bound

    def imports_module(self, prefix: str) -> bool:
        """Whether any import binds a name from ``prefix`` (e.g. ``"torch"``)."""
        return any(v == prefix or v.startswith(prefix + ".") for v in self.bindings.values())


def bound_names(target: cst.CSTNode) -> Iterator[str]:
    """Plain names a binding target binds (``a``, ``a, (b, *c)``); attributes and
    subscripts bind none."""
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from bound_names(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from bound_names(target.value)
