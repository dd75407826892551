"""Module summaries: what one Python file defines and what each of its functions does,
as plain data (JSON-ready dicts and lists), read with CPython's ``ast``. This module
reads functions and classes; ``module_summary`` puts a module's summary together.

A summary depends on the file's bytes only (never on its path), so it is cached by
content hash. Names are kept as the file spells them (``utils.save_checkpoint``,
``self.barrier``, ``..comm.is_main_process`` for a relative import); the project index
resolves them when it links the summaries.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from ddplint.analysis.api import (
    DATA_LOADERS,
    DATALOADER_POSITIONS,
    DDP_WRAPPERS,
    DEVICE_CHOICES,
    DISTRIBUTED_SAMPLER_SHUFFLE_POSITION,
    DISTRIBUTED_SAMPLERS,
    RANK_ATTRIBUTES,
    RANK_ENV_VARS,
    RANK_FUNCTION_NAMES,
    RANK_ONLY_DECORATORS,
    SHARDING_WRAPPERS,
)
from ddplint.analysis.children import child_nodes
from ddplint.analysis.constants import call_parameters
from ddplint.analysis.control_flow import build_graph
from ddplint.analysis.divergence import Divergence, State, summarise_call
from ddplint.analysis.dominance import PostDominance
from ddplint.analysis.endless_iterables import drawn_source, is_endless_generator
from ddplint.analysis.literal_values import scalar_literal
from ddplint.analysis.names import Names, passed_argument
from ddplint.analysis.names import dotted_name as dotted
from ddplint.analysis.returns import BINDERS, returned_reach
from ddplint.analysis.wait_screen import ending_wait
from ddplint.code.collectives.kinds import CollectiveKind, kind_of_function, kind_of_method

_PROPERTY_DECORATORS = frozenset({"property", "cached_property"})
FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
Summary = dict[str, Any]
_Node = TypeVar("_Node", bound=ast.AST)


def qualify(name: str, imports: dict[str, str]) -> str | None:
    """``torch.distributed.barrier`` for ``dist.barrier`` under ``import torch.distributed
    as dist``; None when the head is not imported."""
    head, _, rest = name.partition(".")
    bound = imports.get(head)
    if bound is None:
        return None
    return f"{bound}.{rest}" if rest else bound


def own_nodes(function: ast.AST) -> list[ast.AST]:
    """Nodes of a function body, nested defs, lambdas and classes left out, in source
    order (contexts and operators left out too)."""
    found: list[ast.AST] = []
    stack = list(reversed(getattr(function, "body", [])))
    while stack:
        node = stack.pop()
        found.append(node)
        if isinstance(node, _SCOPES):
            continue
        children = child_nodes(node, leaves=False)  # a fresh list: reversed in place
        children.reverse()
        stack += children
    return found


#: A function's own nodes by type, each list in source order (``by_kind``).
Kinds = dict[type[ast.AST], list[ast.AST]]


def by_kind(nodes: list[ast.AST]) -> Kinds:
    """``nodes`` by type, each list in their order: each reader of a function's nodes
    then reads only the kinds it asks about."""
    kinds: Kinds = {}
    for node in nodes:
        kinds.setdefault(type(node), []).append(node)
    return kinds


def _of(kinds: Kinds, kind: type[_Node]) -> list[_Node]:
    """The function's own nodes of this type, in source order."""
    return kinds.get(kind, [])  # type: ignore[return-value]


def _stored_names(kinds: Kinds) -> list[ast.Name]:
    """The names the function's own code stores, in source order."""
    return [name for name in _of(kinds, ast.Name) if isinstance(name.ctx, ast.Store)]


def _collective(name: str | None, imports: dict[str, str]) -> CollectiveKind | None:
    """The collective a call of ``name`` (as spelled) issues, if any."""
    if name is None:
        return None
    qualified = qualify(name, imports)
    if qualified is not None:
        kind = kind_of_function(qualified)
        if kind is not None:
            return kind
    receiver, _, method = name.rpartition(".")
    return kind_of_method(receiver, method) if receiver else None


def _falsy_default(default: ast.expr | None) -> bool:
    return isinstance(default, ast.Constant) and default.value in (False, None, 0)


def _opt_in_parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, int]:
    """Parameters whose default is ``False`` / ``None`` / ``0``, with their position
    among the positional arguments of a call (``self`` / ``cls`` not counted; -1 for
    keyword-only ones)."""
    arguments = function.args
    positional = call_parameters(function)
    found: dict[str, int] = {}
    for offset, default in enumerate(arguments.defaults):
        index = len(positional) - len(arguments.defaults) + offset
        if _falsy_default(default):
            found[positional[index].arg] = index
    for argument, keyword_default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
        if _falsy_default(keyword_default):
            found[argument.arg] = -1
    return found


def _parameter_defaults(
    function: ast.FunctionDef | ast.AsyncFunctionDef,
) -> dict[str, tuple[int, tuple[Any, ...]]]:
    """Each parameter a call can pass: its position among the positional arguments of a
    call (-1 for a keyword-only one) and its literal default (``()``: none)."""
    arguments = function.args
    positional = call_parameters(function)
    found: dict[str, tuple[int, tuple[Any, ...]]] = {
        argument.arg: (index, ()) for index, argument in enumerate(positional)
    }
    for offset, default in enumerate(arguments.defaults):
        index = len(positional) - len(arguments.defaults) + offset
        if index >= 0:
            found[positional[index].arg] = (index, scalar_literal(default))
    for argument, keyword_default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
        found[argument.arg] = (-1, scalar_literal(keyword_default))
    return found


def _literal_defaults(function: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, list[Any]]:
    """The parameters with a literal default: ``{"rank": [-1]}``."""
    return {
        name: list(default)
        for name, (_, default) in _parameter_defaults(function).items()
        if default
    }


def _compared_parameter(
    test: ast.expr, parameters: dict[str, tuple[int, tuple[Any, ...]]]
) -> tuple[str, bool, list[Any]] | None:
    """``(parameter, member, values)`` for a test of a parameter against literals:
    ``rank not in [-1, 0]`` (member False: true for any value but those), ``rank == 0``
    (member True: true only for those)."""
    if not (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.left, ast.Name)
        and test.left.id in parameters
    ):
        return None
    operator, right = test.ops[0], test.comparators[0]
    if isinstance(operator, (ast.In, ast.NotIn)) and isinstance(
        right, (ast.List, ast.Tuple, ast.Set)
    ):
        values = [scalar_literal(element) for element in right.elts]
        member = isinstance(operator, ast.In)
    elif isinstance(operator, (ast.Eq, ast.NotEq)):
        values = [scalar_literal(right)]
        member = isinstance(operator, ast.Eq)
    else:
        return None
    if not values or not all(values):
        return None
    return test.left.id, member, [value for (value,) in values]


def _condition_switches(
    function: ast.FunctionDef | ast.AsyncFunctionDef, kinds: Kinds
) -> dict[int, list[Any]]:
    """``id(node)`` -> ``[parameter, position, False, member, values, default]`` for the
    nodes that run only under ``if`` a parameter compared with literals
    (``if local_rank not in [-1, 0]:``, ``if local_rank == 0:``; a conjunct of the test
    too): a call that passes that parameter a literal (or leaves it at a literal
    default) decides whether they run."""
    parameters = _parameter_defaults(function)
    found: dict[int, list[Any]] = {}
    for node in _of(kinds, ast.If):
        tests = (
            node.test.values
            if isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.And)
            else [node.test]
        )
        compared = next(
            (c for c in map(lambda t: _compared_parameter(t, parameters), tests) if c), None
        )
        if compared is None:
            continue
        name, member, values = compared
        position, default = parameters[name]
        entry = [name, position, False, member, values, list(default)]
        for statement in node.body:
            for inner in ast.walk(statement):
                found.setdefault(id(inner), list(entry))
    return found


def _opt_in_switches(
    function: ast.FunctionDef | ast.AsyncFunctionDef, kinds: Kinds
) -> dict[int, list[Any]]:
    """``id(node)`` -> ``[parameter, position, off]`` for the nodes that run only under
    ``if <parameter>:`` (or ``if <parameter> and ...:``) where the parameter is off by
    default (``barrier_after=False``): they run only when a caller switches it on; with
    ``off`` true, under ``if not <parameter>:`` (also in a conjunction): they run unless
    a caller switches it on (``evaluate=True``). ``kinds``: the function's ``own_nodes``
    by kind."""
    parameters = _opt_in_parameters(function)
    found: dict[int, list[Any]] = {}
    if not parameters:
        return found
    for node in _of(kinds, ast.If):
        tests = (
            node.test.values
            if isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.And)
            else [node.test]
        )
        switch = next((t.id for t in tests if isinstance(t, ast.Name) and t.id in parameters), None)
        negated = next(
            (
                t.operand.id
                for t in tests
                if isinstance(t, ast.UnaryOp)
                and isinstance(t.op, ast.Not)
                and isinstance(t.operand, ast.Name)
                and t.operand.id in parameters
            ),
            None,
        )
        if switch is not None:
            entry = [switch, parameters[switch], False]
        elif negated is not None:
            entry = [negated, parameters[negated], True]
        else:
            continue
        for statement in node.body:
            for inner in ast.walk(statement):
                found.setdefault(id(inner), list(entry))
    return found


_GROUP_KEYWORDS = frozenset({"group", "pg", "process_group"})


def _on_a_group(call: ast.Call) -> bool:
    """The collective names a process group (``group=pg``): which ranks take part is
    then a question of that group's membership, not decided here."""
    for keyword in call.keywords:
        if keyword.arg in _GROUP_KEYWORDS:
            return not (isinstance(keyword.value, ast.Constant) and keyword.value.value is None)
        if keyword.arg is None:
            return True  # ``**kwargs`` may hold one
    name = (dotted(call.func) or "").rsplit(".", 1)[-1]
    return name in ("barrier", "monitored_barrier") and bool(call.args)


def _decorator_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    names = []
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        names.append((dotted(target) or "").rsplit(".", 1)[-1])
    return names


def function_summary(
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    imports: dict[str, str],
    owner: str | None,
    kinds: Kinds | None = None,
) -> Summary:
    """What one function does: its direct collectives and calls in source order, whether
    it returns a rank test, chooses the rank's GPU (``torch.cuda.set_device``), runs on
    rank zero only, is a property, is a generator that never runs out (``endless``) or
    yields the items of one parameter or field until they run out (``draws``);
    which of its parameters it shards (``fully_shard``, ``FSDP(...)``) and which it
    passes on to other calls (``[target, argument position, parameter position]``);
    where it passes a model it wrapped in ``DistributedDataParallel`` (``[target,
    argument position]``) and where it passes the rank, and where it passes a loader it
    built on a distributed sampler (both ``[target, argument position or keyword]``);
    its positional parameters.
    ``kinds``: its ``own_nodes`` by kind, where the caller has them."""
    if kinds is None:
        kinds = by_kind(own_nodes(function))
    collectives: list[list[Any]] = []
    calls: list[list[Any]] = []
    returns_rank = False
    sets_device = False
    return_calls: list[str] = []
    switches = {**_condition_switches(function, kinds), **_opt_in_switches(function, kinds)}
    positions = _parameter_positions(function)
    shards: set[int] = set()
    forwards: list[list[Any]] = []
    wrapped = _ddp_wrapped_names(kinds, imports)
    wrapped_args: list[list[Any]] = []
    rank_args = rank_arguments(kinds)
    sampled = _distributed_loader_names(kinds, imports)
    loader_args: list[list[Any]] = []
    allocations = _allocations(kinds)
    made_args: list[list[Any]] = []
    for node in _of(kinds, ast.Call):
        target = dotted(node.func)
        kind = _collective(target, imports)
        if kind is not None:
            collectives.append(
                [
                    kind.api,
                    kind.op,
                    kind.family,
                    kind.creates_group,
                    kind.saves_checkpoint,
                    _on_a_group(node),
                    switches.get(id(node)),
                    node.lineno,
                ]
            )
            continue
        if target is not None:
            calls.append([target, node.lineno])
            sets_device = sets_device or qualify(target, imports) in DEVICE_CHOICES
            passed = _passed_parameters(node, positions)
            if qualify(target, imports) in SHARDING_WRAPPERS:
                shards.update(own for argument, own in passed if argument == 0)
            else:
                forwards.extend([target, argument, own] for argument, own in passed)
            wrapped_args.extend([target, at] for at in _positions_of(node, wrapped))
            loader_args.extend([target, at] for at in _named_arguments(node, sampled))
            made_args.extend(
                [target, at, made] for at, made in _allocated_arguments(node, allocations)
            )
    rank_names = _rank_bound_names(kinds)[0]

    def reads_rank(value: ast.expr) -> bool:
        """The rank or a test of it, read in place or through a name bound to one."""
        return is_rank_test(value) or (isinstance(value, ast.Name) and value.id in rank_names)

    rank_items: set[int] = set()
    returns = _of(kinds, ast.Return)
    # Whether every ``return`` hands back a call's result (``return sync(flag, device)``).
    calls_only = bool(returns) and all(
        returning.value is not None
        and all(
            isinstance(branch, ast.Call)
            for branch in (
                [returning.value.body, returning.value.orelse]
                if isinstance(returning.value, ast.IfExp)
                else [returning.value]
            )
        )
        for returning in returns
    )
    for returning in returns:
        if returning.value is not None:
            # ``return a(x) if local else b(x)``: either branch may be what is returned.
            value = returning.value
            returned = [value.body, value.orelse] if isinstance(value, ast.IfExp) else [value]
            for branch in returned:
                if reads_rank(branch):
                    returns_rank = True
                elif isinstance(branch, ast.Tuple):
                    # ``return rank, local_rank, world_size``
                    rank_items.update(i for i, item in enumerate(branch.elts) if reads_rank(item))
                elif isinstance(branch, ast.Call):
                    called = dotted(branch.func)
                    if called is not None:
                        return_calls.append(called)
    decorators = _decorator_names(function)
    generator = bool(_of(kinds, ast.Yield) or _of(kinds, ast.YieldFrom))
    return {
        "line": function.lineno,
        "owner": owner,
        "collectives": collectives,
        "calls": calls,
        "returns_rank": returns_rank,
        "sets_device": sets_device,
        "shards": sorted(shards),
        "forwards": forwards,
        "wrapped_args": wrapped_args,
        "rank_args": rank_args,
        **({"rank_items": sorted(rank_items)} if rank_items else {}),
        **({"item_args": item_args} if (item_args := item_arguments(kinds)) else {}),
        "loader_args": loader_args,
        "made_args": made_args,
        "params": list(positions),
        **({"param_defaults": defaults} if (defaults := _literal_defaults(function)) else {}),
        "return_calls": return_calls,
        **({"returns_calls_only": True} if calls_only and return_calls else {}),
        "returned_made": _returned_made(kinds),
        "zero_only": any(d in RANK_ONLY_DECORATORS for d in decorators)
        or _whole_body_guarded(function),
        "property": any(d in _PROPERTY_DECORATORS for d in decorators),
        "endless": generator and is_endless_generator(function),
        "draws": drawn_source(function) if generator or function.name == "__iter__" else None,
        "agreement": _agreement(function, imports)
        if collectives and _statements(function) <= AGREEMENT_STATEMENTS
        else _returned_from(function, imports, kinds),
        **_ending_wait(kinds, imports),
    }


def _ending_wait(kinds: Kinds, imports: dict[str, str]) -> Summary:
    """``may_wait``: whether the function's own code may make the host wait for the
    device with no substantial work after (``analysis.wait_screen``); ``wait_tail``:
    else, the calls (as spelled) of its last work, through which it may end with a
    wait (the project index follows them)."""

    def resolve(expression: ast.expr) -> str | None:
        spelled = dotted(expression)
        return qualify(spelled, imports) if spelled is not None else None

    waits, tail = ending_wait(kinds, resolve)
    spelled = sorted({name for call in tail if (name := dotted(call.func)) is not None})
    return {"may_wait": waits, "wait_tail": spelled}


#: Functions longer than this get no agreement fact (one analysis per parameter): the
#: helpers that reduce a value for their callers are short.
AGREEMENT_STATEMENTS = 30


def _statements(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    return sum(isinstance(node, ast.stmt) for node in ast.walk(function))


def _agreement(
    function: ast.FunctionDef | ast.AsyncFunctionDef, imports: dict[str, str]
) -> list[Any] | None:
    """For a function that issues a collective, what a call of it does with its
    arguments by the analysis core's divergence (``divergence.summarise_call``):
    ``[parameters, reaching (None: any), agreeing]``; None where it tells nothing (every
    argument may reach the result and none is made to agree)."""
    graph = build_graph(function)
    dominance = PostDominance(graph)
    names = Names.bound(imports)

    def solved(given: State) -> Divergence:
        return Divergence(graph, dominance, names, fields=given)

    summary = summarise_call(function, [a.arg for a in call_parameters(function)], solved)
    if summary is None or (summary.reaching is None and not summary.agreeing):
        return None
    reaching = summary.reaching
    return [
        list(summary.parameters),
        None if reaching is None else sorted(reaching),
        sorted(summary.agreeing),
    ]


def _allocations(kinds: Kinds) -> dict[str, tuple[str, int]]:
    """Names the function binds to one call's result only (``acc = Accelerator()``),
    with the callee as spelled and the first line; a name bound otherwise too is left
    out."""
    made: dict[str, tuple[str, int]] = {}
    recorded: set[int] = set()
    for node in _of(kinds, ast.Assign):
        binding = _call_binding(node)
        if (
            binding is not None
            and (callee := dotted(binding[1].func)) is not None
            and made.get(binding[0].id, (callee,))[0] == callee
        ):
            made.setdefault(binding[0].id, (callee, binding[2]))
            recorded.add(id(binding[0]))
    others = {name.id for name in _stored_names(kinds) if id(name) not in recorded}
    return {name: made[name] for name in made.keys() - others}


def _allocated_arguments(
    call: ast.Call, allocations: dict[str, tuple[str, int]]
) -> list[tuple[int | str, str]]:
    """``(position or keyword, callee)`` for each argument of ``call`` that is an
    allocation: a name bound to one call's result on an earlier line, or a call in
    place."""
    found: list[tuple[int | str, str]] = []
    labelled: list[tuple[int | str, ast.expr]] = [
        *enumerate(a for a in call.args if not isinstance(a, ast.Starred)),
        *((k.arg, k.value) for k in call.keywords if k.arg is not None),
    ]
    if any(isinstance(a, ast.Starred) for a in call.args):
        labelled = [(k, v) for k, v in labelled if isinstance(k, str)]
    for at, value in labelled:
        if isinstance(value, ast.Name) and value.id in allocations:
            callee, line = allocations[value.id]
            if line < call.lineno:
                found.append((at, callee))
        elif isinstance(value, ast.Call) and (in_place := dotted(value.func)) is not None:
            found.append((at, in_place))
    return found


def _returned_made(kinds: Kinds) -> list[list[Any]]:
    """``[callee, item]`` for each returned local name bound to a call's result
    (``acc = Accelerator(...)``, ``return acc``): item -1 for the whole result, else the
    position the name takes in a tuple it unpacks (``engine, *_ = deepspeed.initialize(...)``).
    Direct ``return f(...)`` is ``return_calls``'."""
    returned = {
        node.value.id for node in _of(kinds, ast.Return) if isinstance(node.value, ast.Name)
    }
    if not returned:
        return []
    made: list[list[Any]] = []
    for node in _of(kinds, ast.Assign):
        if not isinstance(node.value, ast.Call):
            continue
        callee = dotted(node.value.func)
        if callee is None:
            continue
        for target in node.targets:
            if isinstance(target, ast.Name) and target.id in returned:
                made.append([callee, -1])
            elif isinstance(target, (ast.Tuple, ast.List)):
                made.extend(
                    [callee, item]
                    for item, element in enumerate(target.elts)
                    if isinstance(element, ast.Name) and element.id in returned
                )
    return made


def _returned_from(
    function: ast.FunctionDef | ast.AsyncFunctionDef, imports: dict[str, str], kinds: Kinds
) -> list[Any] | None:
    """For a function that issues no collective (or is too long to solve per
    parameter), the parameters that may reach what it returns, as a whole and per item
    of a returned tuple (``returns.returned_reach``), as an agreement fact that makes
    none agree: ``[parameters, reaching (None: any), [], items (None: not a tuple)]``;
    None where every argument may reach every part of it. ``kinds``: its ``own_nodes`` by kind."""
    parameters = [a.arg for a in call_parameters(function)]
    if not parameters:
        return None
    read = [ast.Return, *BINDERS]
    nodes = [node for kind in read for node in kinds.get(kind, [])]
    reach = returned_reach(function, parameters, Names.bound(imports), nodes)

    def told(reaching: frozenset[str] | None) -> list[str] | None:
        """A reach that leaves out a parameter, sorted; None where any may reach."""
        return None if reaching is None or set(parameters) <= reaching else sorted(reaching)

    items = None if reach.items is None else [told(item) for item in reach.items]
    if items is not None and all(item is None for item in items):
        items = None
    whole = told(reach.whole)
    if whole is None and items is None:
        return None
    return [parameters, whole, [], items]


def _ddp_wrapped_names(kinds: Kinds, imports: dict[str, str]) -> dict[str, int]:
    """Names the function binds to ``DistributedDataParallel(...)`` that keeps
    broadcasting buffers (no ``broadcast_buffers=False``), with the first such line."""
    wrapped: dict[str, int] = {}
    for bound, call, line in _call_bindings(kinds):
        name = dotted(call.func)
        if name is None or qualify(name, imports) not in DDP_WRAPPERS:
            continue
        local = any(
            k.arg == "broadcast_buffers"
            and isinstance(k.value, ast.Constant)
            and k.value.value is False
            for k in call.keywords
        )
        if not local:
            wrapped.setdefault(bound, line)
    return wrapped


def _call_bindings(kinds: Kinds) -> Iterator[tuple[str, ast.Call, int]]:
    """``(name, call, line)`` for each ``name = call(...)`` of the function."""
    for node in _of(kinds, ast.Assign):
        binding = _call_binding(node)
        if binding is not None:
            yield binding[0].id, binding[1], binding[2]


def _call_binding(node: ast.AST) -> tuple[ast.Name, ast.Call, int] | None:
    """``(name, call, line of the binding)`` when ``node`` is ``name = call(...)``."""
    if (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Call)
    ):
        return node.targets[0], node.value, node.lineno
    return None


def _distributed_loader_names(kinds: Kinds, imports: dict[str, str]) -> dict[str, int]:
    """Names the function binds to a data loader built on a distributed sampler (its
    ``sampler``, or an argument of its ``batch_sampler``, is a ``DistributedSampler``
    made in place or bound to a name the function binds to one, on some path), with the
    first such line. A sampler made with ``shuffle=False`` does not count."""
    samplers: set[str] = set()
    loaders: list[tuple[str, ast.Call, int]] = []
    for bound, call, line in _call_bindings(kinds):
        called = qualify(dotted(call.func) or "", imports)
        if called in DISTRIBUTED_SAMPLERS and _shuffles(call):
            samplers.add(bound)
        elif called in DATA_LOADERS:
            loaders.append((bound, call, line))
    if not loaders:
        return {}

    def distributed(value: ast.expr | None) -> bool:
        if isinstance(value, ast.IfExp):
            return distributed(value.body) or distributed(value.orelse)
        if isinstance(value, ast.Name):
            return value.id in samplers
        return (
            isinstance(value, ast.Call)
            and qualify(dotted(value.func) or "", imports) in DISTRIBUTED_SAMPLERS
            and _shuffles(value)
        )

    found: dict[str, int] = {}
    for name, call, line in loaders:
        given = passed_argument(call, "sampler", DATALOADER_POSITIONS["sampler"])
        batches = passed_argument(call, "batch_sampler")
        inner = (
            [*batches.args, *(k.value for k in batches.keywords)]
            if isinstance(batches, ast.Call)
            else []
        )
        if distributed(given) or any(distributed(value) for value in inner):
            found.setdefault(name, line)
    return found


def _shuffles(sampler: ast.Call) -> bool:
    """Whether a ``DistributedSampler(...)`` call leaves shuffling on (no
    ``shuffle=False``)."""
    shuffle = passed_argument(sampler, "shuffle", DISTRIBUTED_SAMPLER_SHUFFLE_POSITION)
    return not (isinstance(shuffle, ast.Constant) and shuffle.value is False)


def _named_arguments(call: ast.Call, names: dict[str, int]) -> list[int | str]:
    """The positions and keywords at which ``call`` passes one of ``names`` as it is,
    on a line after the name was first bound."""
    return _arguments_where(
        call,
        lambda value: (
            isinstance(value, ast.Name) and names.get(value.id, call.lineno) < call.lineno
        ),
    )


def _arguments_where(call: ast.Call, test: Callable[[ast.expr], bool]) -> list[int | str]:
    """The positions (up to a ``*args``) and keywords of ``call``'s arguments that
    pass ``test``."""
    found: list[int | str] = []
    for index, argument in enumerate(call.args):
        if isinstance(argument, ast.Starred):
            break
        if test(argument):
            found.append(index)
    found.extend(k.arg for k in call.keywords if k.arg is not None and test(k.value))
    return found


def _rank_bound_names(kinds: Kinds) -> tuple[dict[str, int], set[str]]:
    """Names the function binds to the process's rank or a test of it
    (``local_rank = int(os.environ["LOCAL_RANK"])``), with the first such line; and
    every name it binds otherwise (``for rank in range(world_size)`` is not the rank)."""
    bound: dict[str, int] = {}
    for node in _of(kinds, ast.Assign):
        if (
            len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and is_rank_test(node.value)
        ):
            bound.setdefault(node.targets[0].id, node.lineno)
    others = {name.id for name in _stored_names(kinds)}
    return bound, others - bound.keys()


def rank_bindings(kinds: Kinds) -> tuple[frozenset[str], frozenset[str]]:
    """The names the code in ``kinds`` binds to the rank (or a test of it), and those
    it binds to anything else."""
    bound, others = _rank_bound_names(kinds)
    return frozenset(bound), frozenset(others)


def name_arguments(kinds: Kinds) -> list[tuple[str, int | str, str]]:
    """``(target, argument position or keyword, name)`` for each plain name the code in
    ``kinds`` passes to a call."""
    found: list[tuple[str, int | str, str]] = []
    for node in _of(kinds, ast.Call):
        target = dotted(node.func)
        if target is None:
            continue
        found.extend((target, at, name) for at, name in _named_arguments_at(node))
    return found


def item_arguments(kinds: Kinds) -> list[list[Any]]:
    """``[called, item, target, argument position or keyword]`` for each name the code
    in ``kinds`` binds once, to item ``item`` of what a call of ``called`` returns
    (``rank, world = setup(args)``; -1: the whole result), and then passes as it is to a
    call of ``target``: the project model tells at linking whether that item is the
    rank (``setup`` in another module returns it there)."""
    stores = Counter(name.id for name in _stored_names(kinds))
    bound: dict[str, tuple[str, int, int]] = {}
    for assign in _of(kinds, ast.Assign):
        called = dotted(assign.value.func) if isinstance(assign.value, ast.Call) else None
        if called is None or len(assign.targets) != 1:
            continue
        bound_to = assign.targets[0]
        if isinstance(bound_to, ast.Name):
            bound[bound_to.id] = (called, -1, assign.lineno)
        elif isinstance(bound_to, (ast.Tuple, ast.List)) and not any(
            isinstance(element, ast.Starred) for element in bound_to.elts
        ):
            for item, element in enumerate(bound_to.elts):
                if isinstance(element, ast.Name):
                    bound[element.id] = (called, item, assign.lineno)
    once = {name: found for name, found in bound.items() if stores[name] == 1}
    if not once:
        return []
    handed: list[list[Any]] = []
    for call in _of(kinds, ast.Call):
        target = dotted(call.func)
        if target is None:
            continue
        for at, name in _named_arguments_at(call):
            if name in once and once[name][2] < call.lineno:
                source, item, _line = once[name]
                handed.append([source, item, target, at])
    return handed


def _named_arguments_at(call: ast.Call) -> list[tuple[int | str, str]]:
    """``(argument position or keyword, name)`` for each plain name ``call`` passes
    (positions up to a ``*args``)."""
    passed: dict[int | str, ast.expr] = dict(enumerate(call.args))
    passed.update((k.arg, k.value) for k in call.keywords if k.arg is not None)
    return [
        (at, value.id)
        for at in _arguments_where(call, lambda value: isinstance(value, ast.Name))
        if isinstance(value := passed[at], ast.Name)
    ]


def rank_arguments(kinds: Kinds) -> list[list[Any]]:
    """``[target, argument position or keyword]`` for each call of the code in ``kinds``
    (a function's, or a module's top level) that passes the rank (``_rank_arguments``)."""
    names = _rank_bound_names(kinds)
    return [
        [target, at]
        for node in _of(kinds, ast.Call)
        if (target := dotted(node.func)) is not None
        for at in _rank_arguments(node, names)
    ]


def _rank_arguments(call: ast.Call, names: tuple[dict[str, int], set[str]]) -> list[int | str]:
    """The positions and keywords at which ``call`` passes the rank: a name bound to it
    on an earlier line, the rank read in place (``Trainer(cfg, dist.get_rank())``), or
    a parameter spelled as the rank that the function never binds."""
    ranks, others = names

    def is_rank(value: ast.expr) -> bool:
        if isinstance(value, ast.Name):
            if value.id in ranks:
                return ranks[value.id] < call.lineno
            if value.id in others:
                return False
        return is_rank_test(value)

    return _arguments_where(call, is_rank)


def _positions_of(call: ast.Call, names: dict[str, int]) -> list[int]:
    """The positions at which ``call`` passes one of ``names`` as it is, on a line after
    the name was first bound to the wrapper (before it, the name holds the bare model)."""
    bound = {name: 0 for name, line in names.items() if line < call.lineno}
    return [argument for argument, _ in _passed_parameters(call, bound)]


def _parameter_positions(function: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, int]:
    """Positional parameters by name, with their position in a call."""
    return {argument.arg: index for index, argument in enumerate(call_parameters(function))}


def _passed_parameters(call: ast.Call, positions: dict[str, int]) -> list[tuple[int, int]]:
    """``(argument position, parameter position)`` for each parameter of the calling
    function passed as it is, by position, to ``call``."""
    passed = []
    for index, argument in enumerate(call.args):
        if isinstance(argument, ast.Starred):
            break
        if isinstance(argument, ast.Name) and argument.id in positions:
            passed.append((index, positions[argument.id]))
    return passed


_ENVIRONMENT_READERS = frozenset({"os.environ.get", "os.getenv", "environ.get"})
_TEST_SHAPES = (
    ast.Compare,
    ast.BoolOp,
    ast.UnaryOp,
    ast.IfExp,
    ast.Name,
    ast.Attribute,
    ast.Subscript,
)


def is_rank_test(value: ast.expr) -> bool:
    """Whether a returned or stored value is the rank or a test of it (``rank == 0``,
    ``dist.get_rank()``, ``self.local_rank in (-1, 0)``); a container, a string or a
    call that merely takes the rank as an argument is not."""
    if isinstance(value, ast.Call):
        name = dotted(value.func) or ""
        if name in ("int", "bool") and len(value.args) == 1:
            return is_rank_test(value.args[0])
        return _global_rank_read(value)
    if not isinstance(value, _TEST_SHAPES):
        return False
    if isinstance(value, ast.Compare) and all(
        isinstance(c, ast.Constant) and c.value is None for c in value.comparators
    ):
        return False  # ``rank is None`` asks whether an argument was given
    return reads_global_rank(value)


def _global_rank_read(node: ast.AST) -> bool:
    """``dist.get_rank()``, ``os.environ["RANK"]``: the process's own rank. A rank
    asked of a group (``dist.get_rank(group=pg)``, ``tp_group.rank()``) is not: it
    tests membership of that group, which the group's own collectives respect."""
    if isinstance(node, ast.Call):
        name = dotted(node.func) or ""
        if name.rsplit(".", 1)[-1] in RANK_FUNCTION_NAMES:
            return not node.args and not node.keywords
        if name in _ENVIRONMENT_READERS and node.args:
            key = node.args[0]
            return isinstance(key, ast.Constant) and key.value in RANK_ENV_VARS
        return False
    if isinstance(node, ast.Subscript) and dotted(node.value) in ("os.environ", "environ"):
        return isinstance(node.slice, ast.Constant) and node.slice.value in RANK_ENV_VARS
    if isinstance(node, ast.Attribute):
        return node.attr in RANK_ATTRIBUTES
    return isinstance(node, ast.Name) and node.id in RANK_ATTRIBUTES


def reads_global_rank(expression: ast.AST) -> bool:
    """Whether ``expression`` reads the process's own rank (see ``_global_rank_read``);
    the arguments of a call and the method name of ``group.rank()`` are not followed."""
    stack = [expression]
    while stack:
        node = stack.pop()
        if _global_rank_read(node):
            return True
        if isinstance(node, ast.Call):
            stack.append(node.func.value if isinstance(node.func, ast.Attribute) else node.func)
            continue
        stack.extend(child_nodes(node, leaves=False))
    return False


def _whole_body_guarded(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """The body (after a docstring) is one ``if <rank test>:`` with no ``else``."""
    body = list(function.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return (
        len(body) == 1
        and isinstance(body[0], ast.If)
        and not body[0].orelse
        and is_rank_test(body[0].test)
    )


def class_summary(
    cls: ast.ClassDef, imports: dict[str, str], functions: dict[str, Summary]
) -> Summary:
    """Bases as spelled, methods (also recorded as ``Class.method`` functions), the
    ``self.x`` attributes some method assigns a rank test to, those assigned the
    result of a call (a rank test when the callee returns one: the index decides) or
    the first item of the tuple a call returns (``first_items``: ``self.engine, *_ =
    deepspeed.initialize(...)``), and those assigned a parameter of the method
    (``[method, position]``: a rank when the project's callers pass one there)."""
    methods: list[str] = []
    rank_attributes: set[str] = set()
    attribute_calls: dict[str, list[str]] = {}
    first_items: dict[str, list[str]] = {}
    parameter_attributes: dict[str, list[list[Any]]] = {}
    for statement in cls.body:
        if not isinstance(statement, FUNCTION_TYPES):
            continue
        methods.append(statement.name)
        kinds = by_kind(own_nodes(statement))
        functions[f"{cls.name}.{statement.name}"] = function_summary(
            statement, imports, cls.name, kinds
        )
        positions = _parameter_positions(statement)
        for node in _of(kinds, ast.Assign):
            called = dotted(node.value.func) if isinstance(node.value, ast.Call) else None
            for target in node.targets:
                first = _first_self_item(target)
                if first is not None and called is not None:
                    first_items.setdefault(first, []).append(called)
                if not (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                ):
                    continue
                if is_rank_test(node.value):
                    rank_attributes.add(target.attr)
                elif called is not None:
                    attribute_calls.setdefault(target.attr, []).append(called)
                elif isinstance(node.value, ast.Name) and node.value.id in positions:
                    stored = [statement.name, positions[node.value.id]]
                    parameter_attributes.setdefault(target.attr, []).append(stored)
    bases = [name for base in cls.bases if (name := dotted(base)) is not None]
    return {
        "bases": bases,
        "methods": methods,
        "rank_attributes": sorted(rank_attributes),
        "attribute_calls": attribute_calls,
        "first_items": first_items,
        "parameter_attributes": parameter_attributes,
    }


def _first_self_item(target: ast.expr) -> str | None:
    """``x`` of ``self.x, *_ = ...``: the field the first item of a tuple is stored in."""
    if not isinstance(target, (ast.Tuple, ast.List)) or not target.elts:
        return None
    first = target.elts[0]
    if (
        isinstance(first, ast.Attribute)
        and isinstance(first.value, ast.Name)
        and first.value.id == "self"
    ):
        return first.attr
    return None
