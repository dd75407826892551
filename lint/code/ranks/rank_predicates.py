"""Rank predicates: expressions whose value differs between ranks.

``dist.get_rank() == 0``, ``self.trainer.is_global_zero``, ``accelerator.is_main_process``,
``int(os.environ["LOCAL_RANK"])``, NeMo's ``is_global_rank_zero()``, a parameter named
``rank``, and names assigned from any of these (``is_main = rank == 0``), followed through
simple assignments in the same function and at module level. ``world_size > 1`` and
``dist.is_initialized()`` are the same on every rank and are not rank predicates, nor is
a loop variable (``for rank in range(world_size)``) or a name assigned from something
else. Functions decorated with ``@rank_zero_only`` (or accelerate's
``@on_main_process``) run on some ranks only.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import libcst as cst

from ddplint.analysis.api import (
    RANK_ATTRIBUTES as RANK_ATTRIBUTES,
)
from ddplint.analysis.api import (
    RANK_ENV_VARS as RANK_ENV_VARS,
)
from ddplint.analysis.api import (
    RANK_FUNCTION_NAMES as RANK_FUNCTION_NAMES,
)
from ddplint.analysis.api import (
    RANK_ONLY_DECORATORS as RANK_ONLY_DECORATORS,
)
from ddplint.code.collectives.catalogue import classify_call
from ddplint.code.syntax.module_index import ModuleIndex, children_of
from ddplint.code.syntax.names import ImportTable, dotted_name

if TYPE_CHECKING:
    from ddplint.code.project.view import ProjectView

RANK_FUNCTIONS = frozenset(
    {
        "torch.distributed.get_rank",
        "torch.distributed.get_node_local_rank",
        "torch.distributed.distributed_c10d.get_rank",
        "torch.distributed.get_group_rank",
        "deepspeed.comm.get_rank",
        "deepspeed.comm.get_local_rank",
        "nemo.utils.get_rank.is_global_rank_zero",
        "nemo.utils.is_global_rank_zero",
        "lightning.fabric.utilities.rank_zero.rank_zero_only.rank",
        "megatron.core.parallel_state.get_data_parallel_rank",
        "megatron.core.parallel_state.get_tensor_model_parallel_rank",
        "megatron.core.parallel_state.get_pipeline_model_parallel_rank",
        "accelerate.state.PartialState.is_main_process",
    }
)


def _env_key(call_or_subscript: cst.CSTNode, names: ImportTable) -> str | None:
    """``"RANK"`` for ``os.environ["RANK"]``, ``os.environ.get("RANK")``, ``os.getenv("RANK")``."""
    key: cst.BaseExpression | None = None
    if isinstance(call_or_subscript, cst.Subscript):
        if (
            names.qualified_name(call_or_subscript.value) == "os.environ"
            and call_or_subscript.slice
        ):
            element = call_or_subscript.slice[0].slice
            if isinstance(element, cst.Index):
                key = element.value
    elif (
        isinstance(call_or_subscript, cst.Call)
        and call_or_subscript.args
        and names.qualified_name(call_or_subscript.func) in ("os.environ.get", "os.getenv")
    ):
        key = call_or_subscript.args[0].value
    if isinstance(key, cst.SimpleString):
        return key.evaluated_value if isinstance(key.evaluated_value, str) else None
    return None


def _config_key(node: cst.CSTNode) -> str | None:
    """``"local_rank"`` for ``args["local_rank"]`` or ``kwargs.get("local_rank")``."""
    key: cst.BaseExpression | None = None
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        element = node.slice[0].slice
        if isinstance(element, cst.Index):
            key = element.value
    elif (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "get"
        and node.args
    ):
        key = node.args[0].value
    if isinstance(key, cst.SimpleString) and isinstance(key.evaluated_value, str):
        return key.evaluated_value
    return None


def _names_rank(key: str | None) -> bool:
    """A mapping key that holds the rank: ``"local_rank"``, ``"RANK"`` (``env["RANK"]``)."""
    return key in RANK_ATTRIBUTES or key in RANK_ENV_VARS


#: Keyword arguments that say where a result is placed, not what it holds.
_PLACEMENT_KEYWORDS = frozenset({"map_location", "device", "output_device"})


def _expression_children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """Children whose rank-dependence makes ``node`` rank-dependent. Not an attribute's
    name (``x.rank`` is read as a whole), a keyword's name (``f(rank=0)`` reads ``0``),
    an index (``sizes[rank]`` or ``sizes.get(rank)`` is per-rank data, not the rank: a
    condition on it is a data condition), nor a test against None (the rank is never
    None: ``rank is None`` asks whether an argument was given)."""
    if isinstance(node, (cst.Attribute, cst.Arg, cst.Subscript)):
        return [node.value]
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == "get"
    ):
        return [node.func.value]
    if isinstance(node, cst.Call):
        # Where a value is placed is not what it is: ``torch.load(f, map_location=device)``
        # holds the same checkpoint on every rank whatever GPU ``device`` names.
        return [
            child
            for child in children_of(node)
            if not (
                isinstance(child, cst.Arg)
                and child.keyword is not None
                and child.keyword.value in _PLACEMENT_KEYWORDS
            )
        ]
    if isinstance(node, cst.Comparison) and all(
        isinstance(c.operator, (cst.Is, cst.IsNot))
        and isinstance(c.comparator, cst.Name)
        and c.comparator.value == "None"
        for c in node.comparisons
    ):
        return []
    return children_of(node)


_Binding = tuple[cst.CSTNode, cst.BaseExpression]


class RankPredicates:
    """Answers "does this expression differ between ranks?" for one module."""

    def __init__(
        self, index: ModuleIndex, names: ImportTable, project: ProjectView | None = None
    ) -> None:
        self._index = index
        self._names = names
        self._project = project
        self._assignments = self._collect_assignments()
        self._loop_targets = self._collect_loop_targets()
        self._synced = self._collect_synced_names()

    def _collect_assignments(self) -> dict[tuple[cst.CSTNode | None, str], list[_Binding]]:
        """What each plain name is bound to, per enclosing function (None = module), in
        source order."""
        found: dict[tuple[cst.CSTNode | None, str], list[_Binding]] = {}
        for node in self._index.nodes(cst.Assign):
            scope = self._index.enclosing_function(node)
            for target in node.targets:
                for name, value in _paired_targets(target.target, node.value):
                    found.setdefault((scope, name), []).append((node, value))
        for annotated in self._index.nodes(cst.AnnAssign):
            if annotated.value is not None and isinstance(annotated.target, cst.Name):
                scope = self._index.enclosing_function(annotated)
                found.setdefault((scope, annotated.target.value), []).append(
                    (annotated, annotated.value)
                )
        for bindings in found.values():
            bindings.sort(key=lambda binding: self._index.order[binding[0]])
        return found

    def _collect_synced_names(self) -> dict[tuple[cst.CSTNode | None, str], list[cst.Call]]:
        """Names a collective makes the same on every rank in place:
        ``broadcast_object_list(flag, src=0)``, ``all_reduce(flag)``."""
        found: dict[tuple[cst.CSTNode | None, str], list[cst.Call]] = {}
        for call in self._index.nodes(cst.Call):
            if not call.args or call.args[0].keyword is not None:
                continue
            first = call.args[0].value
            if not isinstance(first, cst.Name):
                continue
            collective = classify_call(call, self._names)
            if collective is not None and collective.result_is_uniform:
                scope = self._index.enclosing_function(call)
                found.setdefault((scope, first.value), []).append(call)
        return found

    def _collect_loop_targets(self) -> set[tuple[cst.CSTNode | None, str]]:
        """Names bound by a ``for`` statement, per enclosing function (a comprehension's
        names are local to it: see ``_bound_by_comprehension``)."""
        found: set[tuple[cst.CSTNode | None, str]] = set()
        for loop in self._index.nodes(cst.For):
            scope = self._index.enclosing_function(loop)
            found.update((scope, name.value) for name in _target_names(loop.target))
        return found

    def is_rank_dependent(self, expr: cst.CSTNode, _seen: frozenset[str] = frozenset()) -> bool:
        """Whether ``expr`` reads the rank, directly or through a name assigned from it."""
        return next(self._reads(expr, _seen), None) is not None

    def rank_reads(self, expr: cst.CSTNode) -> list[cst.CSTNode]:
        """Where ``expr`` reads the rank: the calls, attributes and subscripts that read
        it (``get_pipeline_model_parallel_rank()``, ``self.rank``), found through the
        names bound to them; a name that holds the rank by its name only (a parameter
        ``rank``) is its own read."""
        return list(self._reads(expr, frozenset()))

    def _reads(self, expr: cst.CSTNode, seen: frozenset[str]) -> Iterator[cst.CSTNode]:
        """The reads of the rank in ``expr``."""
        scope = self._index.enclosing_function(expr)
        stack: list[cst.CSTNode] = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, (cst.Lambda, cst.FunctionDef)) or self._uniform_result(node):
                continue
            if isinstance(node, cst.Name):
                yield from self._name_reads(node, scope, seen)
                continue
            if self._reads_rank(node):
                yield node
                continue
            if isinstance(node, cst.Call) and self._known_not_rank(node):
                continue  # its arguments (the rank among them) do not make its result
            stack.extend(_expression_children(node))

    def _known_not_rank(self, call: cst.Call) -> bool:
        return self._project is not None and self._project.returns_no_rank_test(call)

    def truth_is_rank_dependent(self, expr: cst.BaseExpression) -> bool:
        """Whether the truth value of ``expr`` differs between ranks. As
        ``is_rank_dependent``, except that a name bound to a non-empty list/tuple/dict/set
        display is true everywhere, whatever ranks its items hold."""
        if isinstance(expr, cst.Name) and not self._bound_by_comprehension(expr):
            scope = self._index.enclosing_function(expr)
            key = (scope, expr.value)
            if key not in self._assignments:
                key = (None, expr.value)
            values = self._reaching_values(expr, key)
            if values and all(_non_empty_display(v) for v in values):
                return False
        return self.is_rank_dependent(expr)

    def _uniform_result(self, node: cst.CSTNode) -> bool:
        """A collective whose result is the same on every rank (``strategy.broadcast(x)``)."""
        if not isinstance(node, cst.Call):
            return False
        collective = classify_call(node, self._names)
        return collective is not None and collective.result_is_uniform

    def _reads_rank(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Call):
            qualified = self._names.qualified_name(node.func)
            if qualified in RANK_FUNCTIONS:
                return True
            dotted = dotted_name(node.func)
            if dotted is not None and dotted.rsplit(".", 1)[-1] in RANK_FUNCTION_NAMES:
                return True
            if self._project is not None and self._project.returns_rank_test(node):
                return True
            return _env_key(node, self._names) in RANK_ENV_VARS or _names_rank(_config_key(node))
        if isinstance(node, cst.Subscript):
            return _env_key(node, self._names) in RANK_ENV_VARS or _names_rank(_config_key(node))
        if isinstance(node, cst.Attribute):
            return (
                node.attr.value in RANK_ATTRIBUTES
                or self._names.qualified_name(node) in RANK_FUNCTIONS
                or (self._project is not None and self._project.holds_rank_test(node))
            )
        return False

    def _name_reads(
        self,
        name_node: cst.Name,
        scope: cst.CSTNode | None,
        seen: frozenset[str],
    ) -> Iterator[cst.CSTNode]:
        """A name holds the rank when it is assigned from a rank read, or, when nothing
        in the file binds it (a parameter, a global), when its name says so or it is a
        parameter the project's callers pass the rank in. A loop
        variable (``for rank in range(world_size)``) is not the process rank."""
        name = name_node.value
        if name in seen or self._bound_by_comprehension(name_node):
            return
        key = (scope, name)
        if key not in self._assignments and key not in self._loop_targets:
            key = (None, name)
        values = self._reaching_values(name_node, key)
        if values is not None:
            for value in values:
                if value is not None:
                    yield from self._reads(value, seen | {name})
            return
        if key in self._loop_targets:
            return
        if name in RANK_ATTRIBUTES or self._handed_rank(name, scope):
            yield name_node

    def _handed_rank(self, name: str, scope: cst.CSTNode | None) -> bool:
        """A parameter of ``scope`` that the project's callers pass the rank in."""
        return (
            isinstance(scope, cst.FunctionDef)
            and self._project is not None
            and name in self._project.rank_parameter_names(scope)
        )

    def _reaching_values(
        self, use: cst.Name, key: tuple[cst.CSTNode | None, str]
    ) -> list[cst.BaseExpression | None] | None:
        """The values of ``use`` that can reach it: from the last binding before it that
        every path goes through, on (None for a collective that made the name the same on
        every rank). All values when none comes before it; None when nothing binds it."""
        bindings: list[tuple[cst.CSTNode, cst.BaseExpression | None]] = [
            *self._assignments.get(key, ()),
            *((call, None) for call in self._synced.get(key, ())),
        ]
        if not bindings:
            return None
        order = self._index.order
        position = order.get(use, 0)
        earlier = sorted((b for b in bindings if order[b[0]] < position), key=lambda b: order[b[0]])
        if not earlier:
            return [value for _, value in bindings]
        start = 0
        for number, (anchor, _) in enumerate(earlier):
            if self._dominates(anchor, use):
                start = number
        return [value for _, value in earlier[start:]]

    def _dominates(self, anchor: cst.CSTNode, use: cst.CSTNode) -> bool:
        """Whether ``anchor`` sits in a block that also holds ``use`` (so that every path
        to ``use`` through that block passes ``anchor`` first)."""
        statement = self._index.enclosing_statement(anchor)
        block = self._index.parent.get(statement)
        return block is not None and self._index.is_inside(use, block)

    def assigned_value(self, name_node: cst.Name) -> cst.BaseExpression | None:
        """The value of ``name_node`` when its scope (else the module) assigns it exactly
        once and no loop rebinds it: ``rank == 0`` for ``is_main`` in ``is_main = rank == 0``."""
        scope = self._index.enclosing_function(name_node)
        for key in ((scope, name_node.value), (None, name_node.value)):
            bindings = self._assignments.get(key)
            if bindings is not None or key in self._loop_targets:
                if bindings is None or len(bindings) != 1 or key in self._loop_targets:
                    return None
                return bindings[0][1]
        return None

    def _bound_by_comprehension(self, name_node: cst.Name) -> bool:
        for ancestor in self._index.ancestors(name_node):
            if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
                return False
            if isinstance(ancestor, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
                clause: cst.CompFor | None = ancestor.for_in
                while clause is not None:
                    if any(n.value == name_node.value for n in _target_names(clause.target)):
                        return True
                    clause = clause.inner_for_in
        return False

    def is_rank_zero_only(self, function: cst.FunctionDef) -> bool:
        """Decorated with ``@rank_zero_only`` (Lightning, lightning_utilities, NeMo) or
        accelerate's ``@accelerator.on_main_process`` and kin: runs on some ranks only."""
        return self.rank_only_decorator(function) is not None

    def rank_only_decorator(self, function: cst.FunctionDef) -> cst.Decorator | None:
        """The decorator that makes ``function`` run on some ranks only, if any."""
        for decorator in function.decorators:
            target = decorator.decorator
            if isinstance(target, cst.Call):
                target = target.func
            if _names_rank_only_decorator(target):
                return decorator
        return None

    @staticmethod
    def rank_only_wrapped(call: cst.Call) -> cst.BaseExpression | None:
        """``fn`` for ``rank_zero_only(fn)(...)``: a call that runs ``fn`` on rank 0 only."""
        inner = call.func
        if (
            isinstance(inner, cst.Call)
            and _names_rank_only_decorator(inner.func)
            and len(inner.args) == 1
            and inner.args[0].keyword is None
        ):
            return inner.args[0].value
        return None


def _non_empty_display(value: cst.BaseExpression | None) -> bool:
    """``{"rank": rank}``, ``[x]``: a literal container with items is always true."""
    if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
        elements: Sequence[cst.CSTNode] = value.elements
    elif isinstance(value, cst.Dict):
        elements = value.elements
    else:
        return False
    return bool(elements) and not any(
        isinstance(e, (cst.StarredElement, cst.StarredDictElement)) for e in elements
    )


def _names_rank_only_decorator(expr: cst.BaseExpression) -> bool:
    dotted = dotted_name(expr)
    return dotted is not None and dotted.rsplit(".", 1)[-1] in RANK_ONLY_DECORATORS


def _paired_targets(
    target: cst.BaseExpression, value: cst.BaseExpression
) -> Iterator[tuple[str, cst.BaseExpression]]:
    """The plain names an assignment binds, each with its own value: ``x = v``, and
    ``a, b = u, v`` item by item (an unpacking of anything else binds no known value)."""
    if isinstance(target, cst.Name):
        yield target.value, value
    elif (
        isinstance(target, (cst.Tuple, cst.List))
        and isinstance(value, (cst.Tuple, cst.List))
        and len(target.elements) == len(value.elements)
        and not any(isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements))
    ):
        for left, right in zip(target.elements, value.elements, strict=True):
            yield from _paired_targets(left.value, right.value)


def _target_names(target: cst.BaseExpression) -> list[cst.Name]:
    """The names a ``for`` target binds (``rank`` in ``for rank, x in ...``)."""
    names: list[cst.Name] = []
    stack: list[cst.CSTNode] = [target]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            names.append(node)
        elif isinstance(node, (cst.Tuple, cst.List)):
            stack.extend(element.value for element in node.elements)
    return names
