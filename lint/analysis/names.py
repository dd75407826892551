"""What a name stands for in a module: dotted names and the imports that bind them.

The bottom floor of the analysis core, shared with the project summaries: a local name
resolves to the dotted name its import (or a module-level alias such as
``dist = torch.distributed``) gives it, so ``dist.barrier`` and ``from torch.distributed
import barrier as b; b`` both read ``torch.distributed.barrier``.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterable, Iterator, Sequence

from ddplint.analysis.api import RANK_ONLY_DECORATORS

#: The names Python's builtins module defines (``len``, ``print``, ``open``, ...).
BUILTIN_NAMES = frozenset(dir(builtins))


def dotted_name(expression: ast.AST) -> str | None:
    """``a.b.c`` for a chain of names and attributes, None for anything else."""
    parts: list[str] = []
    while isinstance(expression, ast.Attribute):
        parts.append(expression.attr)
        expression = expression.value
    if isinstance(expression, ast.Name):
        parts.append(expression.id)
        return ".".join(reversed(parts))
    return None


#: Subscripted annotations whose arguments are each a type the value may have.
_TYPE_UNIONS = frozenset({"Optional", "Union", "typing.Optional", "typing.Union"})


def annotated_types(annotation: ast.AST | None) -> Iterator[ast.expr]:
    """The types an annotation says a value has: itself, each side of ``X | None``, each
    argument of ``Optional[...]`` / ``Union[...]``, and a quoted annotation's parse."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        yield from annotated_types(annotation.left)
        yield from annotated_types(annotation.right)
    elif isinstance(annotation, ast.Subscript) and dotted_name(annotation.value) in _TYPE_UNIONS:
        inner = annotation.slice
        for item in inner.elts if isinstance(inner, ast.Tuple) else [inner]:
            yield from annotated_types(item)
    elif isinstance(annotation, ast.expr):
        yield annotation


def bound_names(target: ast.AST) -> Iterator[str]:
    """The plain or dotted names an assignment target binds, through tuples, lists and
    starred parts (an item stored into a container binds none)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from bound_names(element)
    elif isinstance(target, ast.Starred):
        yield from bound_names(target.value)
    else:
        spelled = dotted_name(target)
        if spelled is not None:
            yield spelled


def call_argument(call: ast.Call, position: int, keyword: str) -> ast.expr | None:
    """The argument a call passes for the parameter at ``position`` named ``keyword``
    (the keyword wins, as in Python), None when it passes none."""
    given: ast.expr | None = call.args[position] if len(call.args) > position else None
    for argument in call.keywords:
        if argument.arg == keyword:
            given = argument.value
    return given


def keyword_argument(call: ast.Call, name: str) -> ast.keyword | None:
    """The ``name=...`` argument of ``call`` (its whole ``keyword`` node)."""
    return next((k for k in call.keywords if k.arg == name), None)


def keyword_true(call: ast.Call, name: str) -> bool:
    """Whether ``call`` passes ``name=True`` (the literal)."""
    return any(
        k.arg == name and isinstance(k.value, ast.Constant) and k.value.value is True
        for k in call.keywords
    )


def passed_argument(call: ast.Call, name: str, position: int | None = None) -> ast.expr | None:
    """The argument for parameter ``name``: by keyword, else at 0-based ``position``
    unless a ``*args`` before it makes the position unknowable."""
    given = keyword_argument(call, name)
    if given is not None:
        return given.value
    if position is None:
        return None
    for seen, argument in enumerate(call.args):
        if isinstance(argument, ast.Starred):
            return None
        if seen == position:
            return argument
    return None


def is_none(expression: ast.AST | None) -> bool:
    """Whether ``expression`` is the literal ``None``."""
    return isinstance(expression, ast.Constant) and expression.value is None


def has_star_arguments(call: ast.Call) -> bool:
    """Whether ``*args`` or ``**kwargs`` may supply arguments that cannot be seen."""
    return any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    )


#: Nodes that hold statements: an import is a statement, so it lies under these only.
_STATEMENT_HOLDERS = (ast.stmt, ast.excepthandler, ast.match_case)


def import_bindings(statements: Sequence[ast.stmt]) -> Iterator[tuple[int, str, str]]:
    """(depth, local, dotted) of every import in the statements, in ``ast.walk`` order
    (expressions are not entered: no import lies inside one)."""
    level: list[ast.AST] = list(statements)
    depth = 1
    while level:
        for node in level:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        yield depth, alias.asname, alias.name
                    else:
                        head = alias.name.split(".", 1)[0]
                        yield depth, head, head
            elif isinstance(node, ast.ImportFrom):
                module = "." * node.level + (node.module or "")
                separator = "" if module.endswith(".") or not module else "."
                for alias in node.names:
                    if alias.name != "*":
                        yield depth, alias.asname or alias.name, f"{module}{separator}{alias.name}"
        level = [child for node in level for child in _statements_in(node)]
        depth += 1


#: Fields in which a statement holds statements, clauses or cases.
_BLOCK_FIELDS = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})
_BLOCKS: dict[type[ast.AST], tuple[str, ...]] = {}


def _statements_in(node: ast.AST) -> list[ast.AST]:
    """The statements, ``except`` clauses and ``case`` blocks directly inside a
    statement, clause or case (the statement holders of ``ast.iter_child_nodes(node)``,
    in its order; only their blocks are read, never an expression)."""
    fields = _BLOCKS.get(type(node))
    if fields is None:
        fields = _BLOCKS[type(node)] = tuple(f for f in node._fields if f in _BLOCK_FIELDS)
    found: list[ast.AST] = []
    for field in fields:
        value = getattr(node, field, None)
        if value.__class__ is list:
            found.extend(item for item in value if isinstance(item, _STATEMENT_HOLDERS))
    return found


def module_aliases(statements: Sequence[ast.stmt]) -> Iterator[tuple[str, str]]:
    """(name, dotted value) of each top-level ``name = a.b.c``."""
    for statement in statements:
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and (value := dotted_name(statement.value)) is not None
        ):
            yield statement.targets[0].id, value


def joined_imports(
    bindings: Iterable[tuple[int, str, str]], aliases: Iterable[tuple[str, str]]
) -> dict[str, str]:
    """Local name -> dotted name it stands for (``"..comm"`` for a relative import), in
    ``ast.walk`` order over the whole module (shallower bindings first, then file
    order), plus module-level aliases (``dist = torch.distributed``)."""
    ordered = sorted(bindings, key=lambda binding: binding[0])  # stable within a depth
    bound = {local: name for _, local, name in ordered}
    for target, value in aliases:
        head, dot, rest = value.partition(".")
        if head in bound:
            bound[target] = bound[head] + dot + rest
    return bound


class Names:
    """A module's names resolved through its imports."""

    def __init__(self, module: ast.Module) -> None:
        self.imports = joined_imports(import_bindings(module.body), module_aliases(module.body))

    @classmethod
    def bound(cls, imports: dict[str, str]) -> Names:
        """The names of a module whose imports are already resolved (local name ->
        dotted name), as the project summaries read them."""
        names = cls.__new__(cls)
        names.imports = imports
        return names

    def resolve(self, expression: ast.AST) -> str | None:
        """The dotted name an expression spells, its head replaced by what the module
        imported under it (``dist.barrier`` -> ``torch.distributed.barrier``)."""
        spelled = dotted_name(expression)
        if spelled is None:
            return None
        head, dot, rest = spelled.partition(".")
        bound = self.imports.get(head)
        return spelled if bound is None else bound + dot + rest

    def rank_only_decorator(self, function: ast.AST) -> tuple[ast.expr, ast.expr] | None:
        """The decorator that runs ``function`` on one rank only (``@rank_zero_only``,
        ``@accelerator.on_main_process``) and what it calls (the decorator itself, or
        the callee of a called form), or None."""
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        for decorator in function.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            resolved = self.resolve(target) or ""
            if resolved.rsplit(".", 1)[-1] in RANK_ONLY_DECORATORS:
                return decorator, target
        return None

    def imported(self, expression: ast.AST) -> str | None:
        """The dotted name an expression spells when its head is imported (or a
        module-level alias of an import), None otherwise: ``signal.alarm`` only where the
        module imports ``signal``."""
        spelled = dotted_name(expression)
        if spelled is None or spelled.partition(".")[0] not in self.imports:
            return None
        return self.resolve(expression)
