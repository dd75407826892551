"""How often a statement costs the host a wait, relative to the step it runs in.

Two questions about a call, answered on the function's control-flow graph:

- ``queue_drained``: on every path that reaches it, the last thing done to the device
  queue was a device-to-host read (``loss.item()`` a line above, ``if x.item() > 1:``
  ... ``elif x.item() < 0:``, a read on each way of a branch), with nothing since that
  can queue device work (a forward must-analysis over the graph, loops and exception
  edges included), so the device queue is already empty and the call waits for
  nothing. A ``synchronize()`` drains the queue too, but it is not counted: DDP101
  reports a synchronisation only where no read follows it, so the read after it is
  where the step's stall is reported (one finding per stall);
- ``filled_once``: it runs only when a persistent cache is still empty (``if
  self.table is None:`` ... ``self.table = ...``; ``if key not in self._cache:`` ...
  ``self._cache[key] = ...``): on the first step, not every step.

What waits, judged by form: a host read; an upload of host data to a device
(``torch.tensor(values, device=...)``, a copy from pageable memory that PyTorch ends with a
stream synchronisation); a test whose value is a tensor (``if not torch.isfinite(loss):``
reads it on the host); a call of a function of the module that returns with the queue
drained on every path (``loss, correct = forward_pass(...)`` whose last act is
``correct.sum().item()``).

What refills the queue, judged by form, without types: a call that may run a forward, a
backward, an optimizer or a collective (any call that is not a read, a shape read, a
call given only host values such as ``meter.update(loss.item(), x.size(0))``, or a kernel
on a tensor already computed). A kernel or two on values already computed (arithmetic, a
comparison, ``x.mean()``, ``x.detach().float()``, ``torch.log(x)``) is not counted: the
read after it waits for those few kernels alone, not for the step's work, and no finding
is worth it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.control_flow import SCOPE_TYPES, EdgeKind, Graph, Node, NodeKind, ScopeGraphs
from ddplint.analysis.dominance import PostDominance
from ddplint.analysis.module_nodes import ModuleNodes
from ddplint.analysis.names import Names

#: Tensor methods that copy the value to the host (and so drain the device queue).
READ_METHODS = frozenset({"item", "cpu", "tolist", "numpy"})
#: Tensor metadata: read on the host without touching the device.
SHAPE_METHODS = frozenset({"size", "dim", "numel", "ndimension", "element_size"})
SHAPE_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "device", "is_cuda"})
#: Tensor methods that queue a kernel or two on a tensor already computed (a reduction, a
#: cast, an elementwise operation, a view): what a read after them waits for is these
#: few kernels, not the step's work.
KERNEL_METHODS = frozenset(
    {
        *("sum", "mean", "max", "min", "norm", "std", "var", "prod", "nansum", "cumsum"),
        *("argmax", "argmin", "count_nonzero", "all", "any", "abs", "neg", "exp", "log"),
        *("sqrt", "square", "pow", "sigmoid", "softmax", "log_softmax", "clamp"),
        *("add", "sub", "mul", "div", "eq", "ne", "gt", "lt", "ge", "le", "masked_fill"),
        *("isnan", "isinf", "isfinite", "float", "double", "half", "bfloat16", "long"),
        *("int", "bool", "type_as", "detach", "detach_", "clone", "copy_", "contiguous"),
        *("view", "reshape", "flatten", "squeeze", "unsqueeze", "permute", "transpose"),
        *("chunk", "split", "expand", "repeat"),
    }
)
#: ``torch`` functions whose result a branch test reads on the host: a tensor's truth
#: (``torch.isfinite(loss)``) or a comparison done on the device (``torch.equal``).
TESTED_ON_HOST = frozenset(
    {
        *("torch.isfinite", "torch.isnan", "torch.isinf", "torch.any", "torch.all"),
        *("torch.equal", "torch.allclose"),
    }
)
#: Factories that copy host data to ``device=`` (a synchronising upload).
UPLOADING_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor"})
#: ``torch`` namespaces whose calls do more than a kernel on their arguments:
#: collectives, device control, autograd, optimizers, gradient clipping over every
#: parameter, modules (``torch.nn.X(...)``; ``torch.nn.functional`` is kernels).
_MORE_THAN_KERNELS = (
    "torch.distributed.",
    "torch.cuda.",
    "torch.autograd.",
    "torch.optim.",
    "torch.utils.",
    "torch.nn.",
)
#: How deep a call is followed into the module's own functions for their summary.
_CALLEE_DEPTH = 3
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: Statements whose node evaluates nothing itself (``try``, ``try``/``except*``, defs).
_HEADERLESS: tuple[type[ast.AST], ...] = (
    *(getattr(ast, name) for name in ("Try", "TryStar") if hasattr(ast, name)),
    *_FUNCTIONS,
    ast.ClassDef,
)
Position = tuple[int, int]
Function = ast.FunctionDef | ast.AsyncFunctionDef


def is_host_read(call: ast.Call) -> bool:
    """``t.item()``, ``t.cpu()``, ``t.tolist()``, ``t.numpy()``, ``t.to("cpu")``."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr in READ_METHODS:
        return not call.args and not call.keywords
    if func.attr == "to" and call.args:
        first = call.args[0]
        return isinstance(first, ast.Constant) and first.value == "cpu"
    return False


def _is_shape_read(expression: ast.expr) -> bool:
    if isinstance(expression, ast.Attribute):
        return expression.attr in SHAPE_ATTRIBUTES
    if isinstance(expression, ast.Call):
        func = expression.func
        if isinstance(func, ast.Name) and func.id == "len":
            return True
        return isinstance(func, ast.Attribute) and func.attr in SHAPE_METHODS
    return False


def _start(node: ast.AST) -> Position:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


def _end(node: ast.AST) -> Position:
    return (getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0)


def walk_own(root: ast.AST) -> Iterator[ast.AST]:
    """``root`` and what it holds, nested scopes (lambdas, comprehensions) left out."""
    pending = [root]
    while pending:
        node = pending.pop()
        yield node
        pending.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, SCOPE_TYPES))


def own_parts(statement: ast.AST) -> list[ast.AST]:
    """What a statement's node evaluates itself: a compound statement's header only."""
    if isinstance(statement, (ast.If, ast.While)):
        return [statement.test]
    if isinstance(statement, (ast.For, ast.AsyncFor)):
        return [statement.iter, statement.target]
    if isinstance(statement, (ast.With, ast.AsyncWith)):
        return [item.context_expr for item in statement.items]
    if isinstance(statement, ast.Match):
        return [statement.subject]
    if isinstance(statement, _HEADERLESS):
        return []
    return [statement]


class HostWaits:
    """The two questions for the calls of one module."""

    def __init__(self, module: ast.Module) -> None:
        self.nodes = ModuleNodes(module)
        self.names = Names(module)
        self.graphs = ScopeGraphs(module)
        self._returns_drained: dict[Function, bool] = {}
        self._summarising: list[Function] = []
        self._top_functions: dict[str, list[Function]] | None = None
        self._calls_at: dict[tuple[Position, Position], ast.Call] = {
            (_start(call), _end(call)): call for call in self.nodes.of_type(ast.Call)
        }
        self._located: dict[int, dict[ast.Call, Node]] = {}
        self._drained: dict[int, dict[int, bool]] = {}
        self._effects: dict[int, dict[int, tuple[bool | None, bool]]] = {}
        self._post: dict[int, PostDominance] = {}
        self._bindings: dict[int, dict[str, list[ast.expr]]] = {}

    def call_at(self, start: Position, end: Position) -> ast.Call | None:
        """The call that spans exactly these places (1-based line, 0-based UTF-8 column;
        ``f(x).item()`` and ``f(x)`` start at the same place)."""
        return self._calls_at.get((start, end))

    # -- where a call runs -------------------------------------------------------------

    def node_of(self, call: ast.Call, *, module_code: bool = False) -> tuple[Graph, Node] | None:
        """The graph of ``call``'s function (or of module code, if asked) and its node."""
        scope = self.nodes.call_scopes.get(id(call))
        if not isinstance(scope, _FUNCTIONS) and not (
            module_code and isinstance(scope, ast.Module)
        ):
            return None
        graph = self.graphs.graph(scope)
        located = self._located.get(id(graph))
        if located is None:
            located = {}
            for statement in graph.statements():
                nodes = graph.nodes_of(statement)
                for part in own_parts(statement):
                    for inner in walk_own(part):
                        if isinstance(inner, ast.Call) and nodes:
                            located.setdefault(inner, nodes[0])
            self._located[id(graph)] = located
        node = located.get(call)
        return (graph, node) if node is not None else None

    # -- the queue is already drained --------------------------------------------------

    def queue_drained(self, call: ast.Call) -> bool:
        """Whether an earlier host read in the same pass of the function leaves nothing
        queued for ``call`` to wait for."""
        found = self.node_of(call)
        if found is None:
            return False
        graph, node = found
        scope = graph.scope
        statement = node.statement
        if statement is None:
            return False
        before_here = self._evaluated_before(statement, call)
        for read in self._reads_in(statement, scope):
            if read is call or _end(read) > _start(call) or _contains(read, call):
                continue
            between = [e for e in before_here if _start(e) >= _end(read)]
            if not any(self._queues_work(e, scope) for e in between):
                return True
        if any(self._queues_work(e, scope) for e in before_here):
            return False
        return self._drained_map(graph).get(node.index, False)

    def _drained_map(self, graph: Graph) -> dict[int, bool]:
        drained = self._drained.get(id(graph))
        if drained is None:
            drained = self._drained[id(graph)] = self._drained_on_entry(graph)
        return drained

    def _effects_of(self, graph: Graph) -> dict[int, tuple[bool | None, bool]]:
        effects = self._effects.get(id(graph))
        if effects is None:
            scope = graph.scope
            effects = {node.index: self._effect(node, scope) for node in graph.nodes}
            self._effects[id(graph)] = effects
        return effects

    def _reads_in(self, statement: ast.AST, scope: ast.AST) -> list[ast.expr]:
        """What in the statement's own parts waits for the device queue: host reads,
        uploads, calls of the module's functions that return drained, and a test whose
        value is a tensor."""
        found: list[ast.expr] = [
            inner
            for part in own_parts(statement)
            for inner in walk_own(part)
            if isinstance(inner, ast.Call) and self._waits_for_queue(inner, scope)
        ]
        if isinstance(statement, (ast.If, ast.While, ast.Assert)):
            found.extend(self._tensor_tests(statement.test))
        return found

    def _waits_for_queue(self, call: ast.Call, scope: ast.AST) -> bool:
        if is_host_read(call) or self._is_upload(call):
            return True
        callee = self._local_function(call, scope)
        return callee is not None and self._returns_drained_from(callee)

    def _is_upload(self, call: ast.Call) -> bool:
        """``torch.tensor(data, device=d)`` with ``d`` not the CPU."""
        if self.names.resolve(call.func) not in UPLOADING_FACTORIES:
            return False
        device = next((k.value for k in call.keywords if k.arg == "device"), None)
        return device is not None and not (
            isinstance(device, ast.Constant) and device.value in ("cpu", None)
        )

    def _tensor_tests(self, test: ast.expr) -> Iterator[ast.expr]:
        """The parts of a branch test that are tensors turned into a bool (a read):
        ``torch.isfinite(loss)``, ``torch.isnan(x).any()`` under ``not`` / ``and`` / ``or``."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            yield from self._tensor_tests(test.operand)
        elif isinstance(test, ast.BoolOp):
            for value in test.values:
                yield from self._tensor_tests(value)
        elif self._tested_on_host(test):
            yield test

    def _tested_on_host(self, expression: ast.expr) -> bool:
        """A tensor's truth by form: ``torch.isfinite(x)``, ``torch.isnan(x).any()``."""
        if not isinstance(expression, ast.Call):
            return False
        func = expression.func
        if self.names.resolve(func) in TESTED_ON_HOST:
            return True
        return (
            isinstance(func, ast.Attribute)
            and func.attr in KERNEL_METHODS
            and self._tested_on_host(func.value)
        )

    def _torch_kernel(self, call: ast.Call) -> bool:
        """A ``torch`` function that runs a kernel on its arguments (``torch.log(x)``,
        ``F.softmax(x)``), not a collective, an optimizer or a module."""
        name = self.names.resolve(call.func) or ""
        if name.startswith("torch.nn.functional."):
            return True
        return name.startswith("torch.") and not name.startswith(_MORE_THAN_KERNELS)

    def _local_function(self, call: ast.Call, scope: ast.AST) -> Function | None:
        """The module's own function ``f(...)`` or method ``self.f(...)`` a call runs."""
        func = call.func
        if isinstance(func, ast.Name):
            found = self._module_functions().get(func.id, [])
            return found[0] if len(found) == 1 else None
        if not (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
        ):
            return None
        owner = self.nodes.scope_of.get(scope)
        if not isinstance(owner, ast.ClassDef):
            return None
        methods = [f for f in owner.body if isinstance(f, _FUNCTIONS) and f.name == func.attr]
        return methods[0] if len(methods) == 1 else None

    def _module_functions(self) -> dict[str, list[Function]]:
        """The functions defined in module code, by name (one list per name: a name
        defined twice names no one function)."""
        if self._top_functions is None:
            self._top_functions = {}
            for function in self.nodes.functions():
                if isinstance(self.nodes.scope_of.get(function), ast.Module):
                    self._top_functions.setdefault(function.name, []).append(function)
        return self._top_functions

    def _returns_drained_from(self, function: Function) -> bool:
        """Whether every normal return of ``function`` leaves the queue drained (its
        last act on every path is a wait with nothing queued after it)."""
        known = self._returns_drained.get(function)
        if known is not None:
            return known
        if function in self._summarising or len(self._summarising) >= _CALLEE_DEPTH:
            return False
        self._summarising.append(function)
        try:
            graph = self.graphs.graph(function)
            drained = self._drained_map(graph)
            exit_node = graph.exit
            answer = bool(exit_node.predecessors) and all(
                _drained_after(drained, self._effects_of(graph), before, edge)
                for before, edge in exit_node.predecessors
            )
        finally:
            self._summarising.pop()
        self._returns_drained[function] = answer
        return answer

    def _drained_on_entry(self, graph: Graph) -> dict[int, bool]:
        """Node index -> whether, on every path that reaches the node, the last thing
        done to the device queue was a host read with no work queued since: a forward
        must-analysis to a fixed point over the graph, its loops and exception edges
        included."""
        effects = self._effects_of(graph)
        drained = {node.index: node is not graph.entry for node in graph.nodes}
        changed = True
        while changed:
            changed = False
            for node in graph.nodes:
                if node is graph.entry:
                    continue
                value = bool(node.predecessors) and all(
                    _drained_after(drained, effects, before, edge)
                    for before, edge in node.predecessors
                )
                if value != drained[node.index]:
                    drained[node.index] = value
                    changed = True
        return drained

    def _effect(self, node: Node, scope: ast.AST) -> tuple[bool | None, bool]:
        """What a node leaves in the device queue (True when it ends with a host read,
        nothing queued after it; False when it may queue work after its last wait; None
        when it touches neither), and whether it may queue work at all."""
        if node.statement is None or node.kind not in (
            NodeKind.STATEMENT,
            NodeKind.TEST,
            NodeKind.STEP,
        ):
            return None, False
        statement = node.statement
        queues = any(
            self._queues_work(e, scope) for part in own_parts(statement) for e in walk_own(part)
        )
        for read in self._reads_in(statement, scope):
            after = self._evaluated_after(statement, read)
            if not any(self._queues_work(e, scope) for e in after):
                return True, queues
        return (False if queues else None), queues

    @staticmethod
    def _evaluated_before(statement: ast.AST, call: ast.Call) -> list[ast.AST]:
        """Expressions of ``statement`` evaluated before ``call``'s own read: its
        receiver and what comes before it in the text (not what encloses it)."""
        receiver = call.func.value if isinstance(call.func, ast.Attribute) else call.func
        found = list(walk_own(receiver))
        for part in own_parts(statement):
            for inner in walk_own(part):
                if _end(inner) <= _start(call) and not _contains(inner, call):
                    found.append(inner)
        return found

    @staticmethod
    def _evaluated_after(statement: ast.AST, read: ast.expr) -> list[ast.AST]:
        """Expressions of ``statement`` evaluated after ``read``: what encloses it and
        what comes after it in the text."""
        found = []
        for part in own_parts(statement):
            for inner in walk_own(part):
                if inner is read or _contains(read, inner):
                    continue
                if _contains(inner, read) or _start(inner) >= _end(read):
                    found.append(inner)
        return found

    def _queues_work(self, expression: ast.AST, scope: ast.AST) -> bool:
        """Whether evaluating this node itself (not its parts) may queue new device work
        worth a wait: a forward, a backward, an optimizer, a collective. A kernel on values
        already computed (an operator, ``x.mean()``, ``torch.log(x)``) is not."""
        if not isinstance(expression, ast.Call):
            return False
        if is_host_read(expression) or _is_shape_read(expression) or self._is_upload(expression):
            return False
        func = expression.func
        if isinstance(func, ast.Attribute) and func.attr in KERNEL_METHODS:
            return False
        if self._torch_kernel(expression):
            return False
        arguments = [*expression.args, *(k.value for k in expression.keywords)]
        return not arguments or not all(self._host_value(a, scope, 0) for a in arguments)

    def _host_value(self, expression: ast.expr, scope: ast.AST, depth: int) -> bool:
        """Whether ``expression`` is known to be a Python value (no tensor)."""
        if isinstance(expression, (ast.Constant, ast.JoinedStr)):
            return True
        if isinstance(expression, ast.Call):
            return is_host_read(expression) or _is_shape_read(expression)
        if _is_shape_read(expression):
            return True
        if isinstance(expression, ast.Subscript):
            return self._host_value(expression.value, scope, depth)
        if isinstance(expression, (ast.Tuple, ast.List)):
            return all(self._host_value(e, scope, depth) for e in expression.elts)
        if isinstance(expression, ast.BinOp):
            return self._host_value(expression.left, scope, depth) and self._host_value(
                expression.right, scope, depth
            )
        if isinstance(expression, ast.UnaryOp):
            return self._host_value(expression.operand, scope, depth)
        if isinstance(expression, ast.Name) and depth < 2:
            values = self._bound(scope).get(expression.id, [])
            return bool(values) and all(self._host_value(v, scope, depth + 1) for v in values)
        return False

    def _bound(self, scope: ast.AST) -> dict[str, list[ast.expr]]:
        table = self._bindings.get(id(scope))
        if table is None:
            table = {}
            for node in walk_own(scope):
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            table.setdefault(target.id, []).append(node.value)
                        else:
                            for name in ast.walk(target):
                                if isinstance(name, ast.Name):
                                    table.setdefault(name.id, []).append(target)
                elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
                    for name in ast.walk(node.target):
                        if isinstance(name, ast.Name):
                            table.setdefault(name.id, []).append(name)
            self._bindings[id(scope)] = table
        return table

    # -- a cache filled once ------------------------------------------------------------

    def filled_once(self, call: ast.Call) -> bool:
        """Whether ``call`` runs only while a persistent cache is still empty."""
        found = self.node_of(call)
        if found is None:
            return False
        graph, node = found
        scope = graph.scope
        if not isinstance(scope, _FUNCTIONS) or not scope.args.args:
            return False
        owner = scope.args.args[0].arg
        if not isinstance(self.nodes.scope_of.get(scope), ast.ClassDef):
            return False
        post = self._post.get(id(graph))
        if post is None:
            post = self._post[id(graph)] = PostDominance(graph)
        for dependence in post.all_dependences(node):
            test = dependence.test.statement
            if (
                isinstance(test, ast.If)
                and dependence.edge is EdgeKind.TRUE
                and _fills_cache(test, owner)
            ):
                return True
        return False


def _drained_after(
    drained: dict[int, bool],
    effects: dict[int, tuple[bool | None, bool]],
    node: Node,
    edge: EdgeKind,
) -> bool:
    """Whether the queue is drained when control leaves ``node`` along ``edge`` (an
    exception may leave after the node queued work and before its own wait)."""
    ends_with, queues = effects[node.index]
    if edge is EdgeKind.EXCEPTION:
        return drained[node.index] and not queues
    return drained[node.index] if ends_with is None else ends_with


def _contains(outer: ast.AST, inner: ast.AST) -> bool:
    return outer is not inner and _start(outer) <= _start(inner) and _end(inner) <= _end(outer)


def _empty_test(test: ast.expr) -> tuple[ast.expr, bool] | None:
    """What an emptiness test asks about: ``E is None`` / ``not E`` (E itself, False),
    ``key not in E`` (E, True: an entry of it)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand, False
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, right = test.ops[0], test.comparators[0]
        if isinstance(op, (ast.Is, ast.Eq)) and isinstance(right, ast.Constant):
            return (test.left, False) if right.value is None else None
        if isinstance(op, ast.NotIn):
            return right, True
    return None


def _rooted_at(expression: ast.expr, owner: str) -> bool:
    """``self.table`` / ``self._cache[key]``: state of the object, kept across steps."""
    while isinstance(expression, (ast.Attribute, ast.Subscript)):
        expression = expression.value
        if isinstance(expression, ast.Name):
            return expression.id == owner
    return False


def _fills_cache(branch: ast.If, owner: str) -> bool:
    """``if E is None:`` whose body stores into the object's state: ``E`` itself when it
    is the object's (``self.table = ...``), else an entry of a table of the object
    (``cached = self._cache.get(k)`` ... ``self._cache[k] = cached``)."""
    asked = _empty_test(branch.test)
    if asked is None:
        return False
    subject, entry = asked
    wanted = ast.unparse(subject)
    for statement in branch.body:
        for node in ast.walk(statement):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets = [node.target]
            for target in targets:
                if not _rooted_at(target, owner):
                    continue
                if entry:
                    if isinstance(target, ast.Subscript) and ast.unparse(target.value) == wanted:
                        return True
                elif ast.unparse(target) == wanted or isinstance(target, ast.Subscript):
                    return True
    return False
