"""Where a call on the training-step path runs, what it reads, and whether it fills a
cache once.

- what waits for the device, judged by form: a host read (``t.item()``, ``t.cpu()``,
  ``t.to("cpu")``) and the factories that upload host data (``UPLOADING_FACTORIES``);
- ``node_of``: the graph of a call's function and the node that evaluates it;
- ``filled_once``: a call that runs only when a persistent cache is still empty (``if
  self.table is None:`` ... ``self.table = ...``; ``if key not in self._cache:`` ...
  ``self._cache[key] = ...``): on the first step, not every step.

Whether the device queue is already drained at a call is ``device_queue``'s question.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ddplint.analysis.control_flow import (
    COMPREHENSIONS,
    SCOPE_TYPES,
    EdgeKind,
    Graph,
    Node,
    ScopeGraphs,
)
from ddplint.analysis.dominance import PostDominance
from ddplint.analysis.module_nodes import ModuleNodes
from ddplint.analysis.names import Names

#: Tensor methods that copy the value to the host (and so drain the device queue).
READ_METHODS = frozenset({"item", "cpu", "tolist", "numpy"})
#: Libraries that compute on the host alone (a call of theirs returns a Python or NumPy
#: value and queues no device work: ``scipy.optimize.linear_sum_assignment(cost)``).
HOST_MODULES = ("numpy.", "scipy.", "math.", "statistics.", "random.")
#: Factories that copy host data to ``device=`` (a synchronising upload).
UPLOADING_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor"})
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: Statements whose node evaluates nothing itself (``try``, ``try``/``except*``, defs).
_HEADERLESS: tuple[type[ast.AST], ...] = (
    *(getattr(ast, name) for name in ("Try", "TryStar") if hasattr(ast, name)),
    *_FUNCTIONS,
    ast.ClassDef,
)
Position = tuple[int, int]


#: Tensor methods and ``torch`` functions whose result's size the device computes: the
#: host waits for it to allocate the result (``mask.nonzero()``, ``torch.unique(x)``).
SIZED_ON_DEVICE = frozenset(
    {"nonzero", "argwhere", "masked_select", "unique", "unique_consecutive"}
)
#: ``torch`` functions a boolean mask is made by (besides comparisons and ``~``).
MASK_FUNCTIONS = frozenset(
    {
        *("torch.isnan", "torch.isinf", "torch.isfinite", "torch.logical_and"),
        *("torch.logical_or", "torch.logical_not", "torch.eq", "torch.ne", "torch.gt"),
        *("torch.lt", "torch.ge", "torch.le"),
    }
)
#: Tensor methods that make a boolean mask.
MASK_METHODS = frozenset(
    {"bool", "isnan", "isinf", "isfinite", "eq", "ne", "gt", "lt", "ge", "le", "logical_not"}
)
#: ``torch`` functions whose result a branch test reads on the host: a tensor's truth
#: (``torch.isfinite(loss)``) or a comparison done on the device (``torch.equal``).
TESTED_ON_HOST = frozenset(
    {
        *("torch.isfinite", "torch.isnan", "torch.isinf", "torch.any", "torch.all"),
        *("torch.equal", "torch.allclose"),
    }
)
#: Functions that block the host until the device has finished its queue.
SYNC_FUNCTIONS = frozenset(
    {
        "torch.cuda.synchronize",
        "torch.accelerator.synchronize",
        "torch.xpu.synchronize",
        "torch.mps.synchronize",
    }
)


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


def start_of(node: ast.AST) -> Position:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


def end_of(node: ast.AST) -> Position:
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
    """Where the calls of one module run, and which fill a cache once."""

    def __init__(
        self,
        module: ast.Module,
        nodes: ModuleNodes | None = None,
        names: Names | None = None,
        graphs: ScopeGraphs | None = None,
    ) -> None:
        """``nodes``, ``names``, ``graphs``: the module's own, where an analysis of it
        has built them already (they are built here otherwise)."""
        self.nodes = nodes if nodes is not None else ModuleNodes(module)
        self.names = names if names is not None else Names(module)
        self.graphs = graphs if graphs is not None else ScopeGraphs(module)
        self._calls_at: dict[tuple[Position, Position], ast.Call] = {
            (start_of(call), end_of(call)): call for call in self.nodes.of_type(ast.Call)
        }
        self._located: dict[int, dict[ast.Call, Node]] = {}
        self._post: dict[int, PostDominance] = {}

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

    def comprehension_of(self, call: ast.Call) -> ast.AST | None:
        """The outermost comprehension that evaluates ``call`` (``[x.item() for x in
        losses]``), run in place by a statement of a function or of module code."""
        nodes = self.nodes
        comprehension: ast.AST | None = nodes.call_scopes.get(id(call))
        while isinstance(comprehension, COMPREHENSIONS):
            outer = nodes.scope_of.get(comprehension)
            if not isinstance(outer, COMPREHENSIONS):
                break
            comprehension = outer
        if not isinstance(comprehension, COMPREHENSIONS):
            return None
        scope = nodes.scope_of.get(comprehension)
        return comprehension if isinstance(scope, (*_FUNCTIONS, ast.Module)) else None

    def inline_node(self, call: ast.Call) -> tuple[Graph, Node] | None:
        """The graph node of the statement whose comprehension evaluates ``call``."""
        comprehension = self.comprehension_of(call)
        if comprehension is None:
            return None
        graph = self.graphs.graph(self.nodes.scope_of[comprehension])
        for statement in graph.statements():
            if any(n is comprehension for p in own_parts(statement) for n in ast.walk(p)):
                return graph, graph.nodes_of(statement)[0]
        return None

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
