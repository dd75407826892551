"""Which forms a module holds at all, read off CPython's ``ast`` in one walk: a rule
whose forms a module lacks cannot report there, so the engine need not parse the module
with LibCST for it (``CodeRule.may_report``). Each answer is a superset: it may say yes
where the rule then finds nothing, never no where it would report.

The names here are shared with the questions (``set_iteration``, DDP209; DDP217),
so both sides read the same forms.
"""

from __future__ import annotations

import ast

from ddplint.analysis.children import walk
from ddplint.analysis.names import Names, dotted_name

#: Calls that build a set from their argument.
SET_BUILDERS = frozenset({"set", "frozenset"})
#: Annotations that make a name a set (``names: set[str]``, ``typing.AbstractSet``).
SET_ANNOTATIONS = frozenset({"set", "frozenset", "Set", "FrozenSet", "AbstractSet", "MutableSet"})
#: Calls that pick the values present in their input (``labels.unique()``,
#: ``set(batch["lang"])``): their length is data, not shape.
VALUE_SELECTIONS = frozenset({"unique", "nonzero", "bincount", "set", "tolist", "argwhere"})

_LOOPS = (ast.For, ast.AsyncFor, ast.comprehension)
#: The nodes ``_builds_a_set`` can say yes of.
_SET_FORMS = (ast.Set, ast.SetComp, ast.Call, ast.AnnAssign, ast.arg)


_Kinds = dict[type[ast.AST], list[ast.AST]]
_walked: list[tuple[ast.Module, _Kinds]] = []


def _walked_once(module: ast.Module) -> _Kinds:
    """The module's nodes by type, each list in ``ast.walk`` order, walked once for all
    the screens asked of one module (the last module walked is kept, by identity)."""
    last = _walked[0] if _walked else None
    if last is not None and last[0] is module:
        return last[1]
    kinds: _Kinds = {}
    for node in walk(module):
        kinds.setdefault(type(node), []).append(node)
    _walked[:] = [(module, kinds)]
    return kinds


def nodes_of(module: ast.Module, *kinds: type[ast.AST]) -> list[ast.AST]:
    """The module's nodes of these exact types, kind after kind (each in ``ast.walk``
    order): a screen reads only the kinds it asks about, not every node."""
    by_kind = _walked_once(module)
    return [node for kind in kinds for node in by_kind.get(kind, ())]


def _last_name(expr: ast.expr | None) -> str | None:
    """``b`` of ``a.b`` / ``b`` / ``a.b[...]``: the name a call or annotation ends in."""
    if isinstance(expr, ast.Subscript):
        expr = expr.value
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return None


def _builds_a_set(node: ast.AST) -> bool:
    """A set literal or comprehension, ``set(...)`` / ``frozenset(...)``, or a set
    annotation: every set a name or attribute can hold comes from one of these."""
    if isinstance(node, (ast.Set, ast.SetComp)):
        return True
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Name) and node.func.id in SET_BUILDERS
    if isinstance(node, (ast.AnnAssign, ast.arg)):
        return _last_name(node.annotation) in SET_ANNOTATIONS
    return False


def may_iterate_a_set(module: ast.Module) -> bool:
    """Whether a loop or comprehension of the module may iterate a set: the module
    loops, and builds or annotates a set somewhere."""
    return bool(nodes_of(module, *_LOOPS)) and any(
        _builds_a_set(node) for node in nodes_of(module, *_SET_FORMS)
    )


def holds_a_loop_statement(module: ast.Module) -> bool:
    """Whether the module holds a ``for`` or ``while`` statement."""
    return bool(nodes_of(module, ast.For, ast.AsyncFor, ast.While))


def loops_over_selected_values(module: ast.Module) -> bool:
    """Whether a loop or comprehension iterates over something built by a call that
    selects the values present in its input (``for c in y.unique():``)."""
    for node in nodes_of(module, *_LOOPS):
        if isinstance(node, _LOOPS) and any(
            isinstance(part, ast.Call) and _last_name(part.func) in VALUE_SELECTIONS
            for part in walk(node.iter)
        ):
            return True
    return False


#: Calls whose result, indexed by the rank, is one rank's contiguous chunk.
ARRAY_SPLITS = frozenset({"numpy.array_split", "torch.tensor_split", "torch.chunk"})
_ARRAY_SPLIT_NAMES = frozenset(name.rsplit(".", 1)[-1] for name in ARRAY_SPLITS)


def _called(call: ast.Call, names: frozenset[str], imports: dict[str, str]) -> bool:
    """Whether ``call`` may call a function of one of ``names`` (its last name), as
    spelled or through an import that renamed it."""
    if _last_name(call.func) in names:
        return True
    head = call.func
    while isinstance(head, ast.Attribute):
        head = head.value
    bound = imports.get(head.id) if isinstance(head, ast.Name) else None
    return bound is not None and bound.rsplit(".", 1)[-1] in names


def _may_shard(node: ast.AST, imports: dict[str, str]) -> bool:
    """A slice with a start and a step (``x[rank::world]``), one bounded by two floor
    divisions (``x[rank * n // w:(rank + 1) * n // w]``), an index into an array split
    (``array_split(x, w)[rank]``), ``islice`` with four arguments, or an equality test
    on a remainder (``i % world == rank``)."""
    if isinstance(node, ast.Slice):
        bounds = (node.lower, node.upper)
        return (node.lower is not None and node.step is not None and node.upper is None) or (
            node.step is None
            and all(isinstance(b, ast.BinOp) and isinstance(b.op, ast.FloorDiv) for b in bounds)
        )
    if isinstance(node, ast.Subscript):
        split = node.value
        return isinstance(split, ast.Call) and _called(split, _ARRAY_SPLIT_NAMES, imports)
    if isinstance(node, ast.Call):
        arguments = len(node.args) + len(node.keywords)
        return arguments == 4 and _called(node, frozenset({"islice"}), imports)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        return isinstance(node.ops[0], (ast.Eq, ast.NotEq)) and any(
            isinstance(side, ast.BinOp) and isinstance(side.op, ast.Mod)
            for side in (node.left, node.comparators[0])
        )
    return False


def may_shard_by_rank(module: ast.Module) -> bool:
    """Whether the module may pick one rank's part of a list in a way whose parts can
    differ in length (``analysis/rank_shards``): it holds one of the forms of
    ``_may_shard``, whatever names they use."""
    imports = Names(module).imports
    forms = nodes_of(module, ast.Slice, ast.Subscript, ast.Call, ast.Compare)
    return any(_may_shard(node, imports) for node in forms)


def passes_true(module: ast.Module, keyword: str) -> bool:
    """Whether some call passes ``keyword=True`` (a literal ``True``)."""
    return any(
        node.arg == keyword and isinstance(node.value, ast.Constant) and node.value.value is True
        for node in nodes_of(module, ast.keyword)
        if isinstance(node, ast.keyword)
    )


def defines(module: ast.Module, function: str) -> bool:
    """Whether a function (or method) of that name is defined anywhere in the module."""
    return any(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function
        for node in nodes_of(module, ast.FunctionDef, ast.AsyncFunctionDef)
    )


def caught_exception_names(module: ast.Module) -> list[list[str]]:
    """For each ``except`` clause that names its exceptions, the last dotted part of
    each (``""`` for one that is not a dotted name): ``[["ValueError", "KeyError"]]``
    for ``except (ValueError, errors.KeyError):``."""
    found: list[list[str]] = []
    for node in nodes_of(module, ast.ExceptHandler):
        if isinstance(node, ast.ExceptHandler) and node.type is not None:
            caught = node.type
            elements = caught.elts if isinstance(caught, ast.Tuple) else [caught]
            found.append([(dotted_name(e) or "").rsplit(".", 1)[-1] for e in elements])
    return found


def mentions(module: ast.Module, names: frozenset[str]) -> bool:
    """Whether one of ``names`` is spelled in the module as a name, the last part of an
    attribute, or an imported name: every call of such a function, however renamed,
    spells it somewhere."""
    for node in nodes_of(module, ast.Name, ast.Attribute, ast.alias):
        if isinstance(node, ast.Name):
            spelled = [node.id]
        elif isinstance(node, ast.Attribute):
            spelled = [node.attr]
        elif isinstance(node, ast.alias):
            spelled = node.name.split(".")
        else:
            continue
        if any(name in names for name in spelled):
            return True
    return False
