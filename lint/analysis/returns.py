"""Which parameters of a function may reach what it returns, without solving it: a
slice of the names its ``return`` values read, followed through the function's own
bindings.

This is the call summary of a function that issues no collective (those get the
divergence's own summary, ``divergence.summarise_call``): a helper handed the rank
only to pick who logs (``load_checkpoint(model, rank, path)`` returning the step in the
checkpoint's name) returns a value every rank computes alike from its other arguments.
The slice ignores order (any binding of a name counts), so it holds more parameters
than reach, never fewer; where the returned value may read one of the function's own
(the rank, a clock, a field of ``self``, a module global), there is no summary. A
function it calls is read through the arguments it is given, as a call of another
module's function is read where it is made. Where every ``return`` hands back a tuple
display of one length, each item gets its own slice (``return model, start_step``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ddplint.analysis.api import RANK_ATTRIBUTES, RANK_FUNCTION_NAMES
from ddplint.analysis.children import child_nodes, walk
from ddplint.analysis.control_flow import own_nodes
from ddplint.analysis.divergence import PLACEMENT_METHODS
from ddplint.analysis.names import BUILTIN_NAMES, Names
from ddplint.analysis.single_process import reads_rank_variable

#: Calls whose result reads a local clock (the divergence's probes, by module).
_CLOCK_MODULES = ("time.", "datetime.", "random.", "numpy.random.", "torch.rand")


def parameters_reaching_returns(
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    parameters: list[str],
    names: Names,
    body_nodes: Iterable[ast.AST] | None = None,
) -> frozenset[str] | None:
    """The ``parameters`` whose values may reach a value ``function`` returns; None
    where a returned value may read a value of the function's own, or it returns
    none. ``body_nodes``: the own nodes of its body in any order (nested scopes not
    entered; the returns and ``BINDERS`` among them are all it reads), where the caller
    has walked them already; its signature is walked here."""
    return returned_reach(function, parameters, names, body_nodes).whole


@dataclass(frozen=True)
class ReturnedReach:
    """Which parameters may reach what a function returns: the whole value (None: a
    value of its own may, or it returns none), and each item where every ``return``
    hands back a tuple display of the same length (``items`` None otherwise; an item
    None where a value of its own may reach it)."""

    whole: frozenset[str] | None
    items: tuple[frozenset[str] | None, ...] | None


def returned_reach(
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    parameters: list[str],
    names: Names,
    body_nodes: Iterable[ast.AST] | None = None,
) -> ReturnedReach:
    """``parameters_reaching_returns``, and the same per item of a returned tuple
    (``return model, start_step``: the step may read none of what the model does)."""
    returned: list[ast.AST] = []
    binders: list[ast.AST] = []
    if body_nodes is None:
        body_nodes, signature_read = list(own_nodes(function)), True
    else:
        signature_read = False  # its signature is read below, once something is returned
    for node in body_nodes:
        if isinstance(node, ast.Return):
            if node.value is not None:
                returned.append(node.value)
        elif isinstance(node, BINDERS):
            binders.append(node)
    if not returned:
        return ReturnedReach(None, None)
    if not signature_read:
        binders.extend(node for node in _signature(function) if isinstance(node, BINDERS))
    bindings: dict[str, list[ast.AST]] = {}
    for node in binders:
        if type(node) is not ast.Call or _on_a_name(node):
            for name, value in _bound(node):
                if name not in names.imports:  # ``torch.zeros(n)`` fills no ``torch``
                    bindings.setdefault(name, []).append(value)
    whole = _reaching(returned, bindings, parameters, names)
    return ReturnedReach(whole, _item_reach(returned, bindings, parameters, names))


def _item_reach(
    returned: list[ast.AST],
    bindings: dict[str, list[ast.AST]],
    parameters: list[str],
    names: Names,
) -> tuple[frozenset[str] | None, ...] | None:
    """The reach of each item where every returned value is a tuple display of the same
    length (no starred item); None otherwise."""
    tuples = [value for value in returned if isinstance(value, ast.Tuple)]
    if len(tuples) != len(returned) or len({len(t.elts) for t in tuples}) != 1:
        return None
    if any(isinstance(element, ast.Starred) for t in tuples for element in t.elts):
        return None
    return tuple(
        _reaching([t.elts[position] for t in tuples], bindings, parameters, names)
        for position in range(len(tuples[0].elts))
    )


def _reaching(
    starts: list[ast.AST],
    bindings: dict[str, list[ast.AST]],
    parameters: list[str],
    names: Names,
) -> frozenset[str] | None:
    """The parameters the values ``starts`` may read, followed through ``bindings``;
    None where they may read a value of the function's own."""
    reaching: set[str] = set()
    seen: set[str] = set()
    callees: set[int] = set()
    pending = list(starts)
    while pending:
        expression = pending.pop()
        for node in _read(expression):
            if _own_source(node, names):
                return None
            if isinstance(node, ast.Call):
                callees.add(id(node.func))
            if not isinstance(node, ast.Name) or node.id in seen:
                continue
            if id(node) in callees and node.id not in parameters and node.id not in bindings:
                continue  # a function called: its result is read through its arguments
            seen.add(node.id)
            if node.id in parameters:
                reaching.add(node.id)  # and what the function stores in it, below
            if node.id in bindings:
                pending.extend(bindings[node.id])
            elif not (
                node.id in parameters or node.id in names.imports or node.id in BUILTIN_NAMES
            ):
                return None  # ``self``, a global value of the module: not followed
    return frozenset(reaching)


def _signature(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """The own nodes of ``function`` outside its body (parameters, defaults,
    annotations, decorators), as ``own_nodes`` reaches them."""
    body = {id(statement) for statement in function.body}
    for child in child_nodes(function):
        if id(child) not in body and not isinstance(child, _SCOPES):
            yield child
            yield from own_nodes(child)


#: The nodes ``_bound`` reads; the others bind nothing (with the returns, all a reach reads).
BINDERS = (
    ast.Assign,
    ast.AnnAssign,
    ast.AugAssign,
    ast.For,
    ast.AsyncFor,
    ast.comprehension,
    ast.withitem,
    ast.NamedExpr,
    ast.Call,  # a method call on a name (``_on_a_name``)
)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _bound(node: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """(name, the value it may take from) for each name ``node`` binds or fills: a
    target's names, the container of an item or field stored (``d[k] = v``), the
    receiver of a method call (``items.append(v)``)."""
    targets: list[ast.expr] = []
    values: list[ast.AST] = []
    if isinstance(node, ast.Assign):
        targets, values = list(node.targets), [node.value]
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
        targets, values = [node.target], [node.value]
    elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        targets, values = [node.target], [node.iter]
    elif isinstance(node, ast.withitem) and node.optional_vars is not None:
        targets, values = [node.optional_vars], [node.context_expr]
    elif isinstance(node, ast.NamedExpr):
        targets, values = [node.target], [node.value]
    elif isinstance(node, ast.Call) and _on_a_name(node):
        assert isinstance(node.func, ast.Attribute)
        targets = [node.func.value]
        values = [*node.args, *(k.value for k in node.keywords)]
    for target in targets:
        if type(target) is ast.Name:  # the common case: nothing inside to walk
            yield from ((target.id, value) for value in values)
            continue
        for inner in walk(target):
            if isinstance(inner, ast.Name):
                for value in values:
                    yield inner.id, value
            if isinstance(inner, ast.Subscript):
                yield from ((n.id, inner.slice) for n in _names_in(inner.value))


def _on_a_name(call: ast.Call) -> bool:
    """``items.append(v)``: a method called on a name, which it may fill."""
    return isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)


def _names_in(expression: ast.AST) -> Iterator[ast.Name]:
    return (n for n in walk(expression) if isinstance(n, ast.Name))


def _read(expression: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``expression`` whose values may reach it, as the divergence's
    library summaries read them: a call's keyword arguments are options (a device, a
    flag) and carry nothing, nor do the arguments of a placement (``.to(device)``)."""
    pending = [expression]
    while pending:
        node = pending.pop()
        yield node
        if isinstance(node, ast.Call):
            pending.append(node.func)
            placement = isinstance(node.func, ast.Attribute) and node.func.attr in PLACEMENT_METHODS
            if not placement:
                pending.extend(node.args)
            continue
        pending.extend(child_nodes(node))


def _own_source(node: ast.AST, names: Names) -> bool:
    """A read of the rank, the environment's rank or a clock."""
    if isinstance(node, ast.Attribute) and node.attr in RANK_ATTRIBUTES:
        return True
    if reads_rank_variable(node, names):
        return True
    if not isinstance(node, ast.Call):
        return False
    resolved = names.resolve(node.func) or ""
    return resolved.rsplit(".", 1)[-1] in RANK_FUNCTION_NAMES or resolved.startswith(_CLOCK_MODULES)
