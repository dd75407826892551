"""Statements that run only when the job is one process: no peer to wait for or to
part from, so no rank hazard and no per-step cost shared with peers.

A test *asks for several processes* when its answer is the same in every multi-process
run: ``dist.is_initialized()`` (and ``is_available() and is_initialized()``), the world
size compared with 1 (``get_world_size() > 1``, ``int(os.environ["WORLD_SIZE"]) == 1``,
``trainer.world_size``, a name bound only to such reads), or a *switch*: a name (in its
function) or an attribute (anywhere in the module) whose every binding is such a test,
``False``, or ``True`` beside the call that starts a process group (``args.distributed =
True; init_process_group(...)``). The branch a multi-process run never takes is a
single-process branch; one that starts a process group itself (``if not
dist.is_initialized(): init_process_group()``) is not.

The ``__main__`` block of a module that, run as its own program, starts and joins no
process group (``ProjectFacts.main_runs_alone``: a self-test or a one-GPU script another
program imports for its functions) is a single-process branch too.

A statement is on a single-process path when no way from its scope's entry reaches it
without taking a single-process branch (the ``else`` of ``if args.distributed:``, what
follows ``if dist.is_initialized(): raise``), or when its function is a local one
called only from such statements (and never handed on as a value). A flag the user
sets (``if args.use_ddp:``) or a rank test (``if rank == 0:``) asks nothing of the
process count.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Protocol

from ddplint.analysis.api import (
    DISTRIBUTED_QUERIES,
    RANK_ENV_VARS,
    RANK_FUNCTION_NAMES,
    RANK_NUMBER_ATTRIBUTES,
    WORLD_SIZE_ATTRIBUTES,
    WORLD_SIZE_ENV_VARS,
    WORLD_SIZE_FUNCTION_NAMES,
)
from ddplint.analysis.children import child_nodes, walk
from ddplint.analysis.control_flow import EdgeKind, Graph, Node, NodeKind, Scope, ScopeGraphs
from ddplint.analysis.host_waits import walk_own
from ddplint.analysis.module_nodes import ModuleNodes
from ddplint.analysis.names import Names, dotted_name
from ddplint.analysis.project import NO_PROJECT, ProjectFacts

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: How deep a test is followed through switches.
_DEPTH = 3
#: Calls that read one variable of the environment (the launcher's).
ENVIRONMENT_READERS = frozenset({"os.environ.get", "os.getenv"})
#: ``torch.distributed`` calls that do the distributed work of a run (not probes).
_DISTRIBUTED_WORK = frozenset(
    {
        "init_process_group",
        "all_reduce",
        "all_gather",
        "all_gather_object",
        "all_gather_into_tensor",
        "reduce",
        "reduce_scatter",
        "reduce_scatter_tensor",
        "broadcast",
        "broadcast_object_list",
        "gather",
        "scatter",
    }
)
#: Wrappers that make a model data-parallel.
DDP_WRAPPERS = frozenset(
    {
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.parallel.distributed.DistributedDataParallel",
        "torch.nn.SyncBatchNorm.convert_sync_batchnorm",
        "apex.parallel.DistributedDataParallel",
    }
)
#: Calls that start a process group.
_STARTS_GROUP = frozenset({"torch.distributed.init_process_group", "deepspeed.init_distributed"})
#: For ``world_size <op> bound``: True when it holds exactly with several processes,
#: False when exactly with one.
_SEVERAL_WHEN = {
    (ast.Gt, 1): True,
    (ast.GtE, 2): True,
    (ast.NotEq, 1): True,
    (ast.Eq, 1): False,
    (ast.LtE, 1): False,
    (ast.Lt, 2): False,
}


def several_when(op: ast.cmpop, bound: object) -> bool | None:
    """For ``world_size <op> bound``: True when it holds exactly with several
    processes, False when exactly with one, None otherwise."""
    if not isinstance(bound, int) or isinstance(bound, bool):
        return None
    return _SEVERAL_WHEN.get((type(op), bound))


class Switches(Protocol):
    """How a test's names are followed, by whoever asks: what a name or attribute
    bound to tests says of the process count, and whether one holds the world size."""

    def switch(self, expression: ast.expr, depth: int) -> bool | None: ...

    def world_size(self, expression: ast.expr, depth: int) -> bool: ...

    def launcher_rank(self, expression: ast.expr, depth: int) -> bool: ...


def asks_several(
    test: ast.expr, names: Names, switches: Switches, depth: int = _DEPTH
) -> bool | None:
    """True when ``test`` holds in every multi-process run (its false branch runs one
    process), False when it fails in every one (its true branch runs one), None when
    it asks something else. The one reading of such tests the core has: the
    single-process paths and the divergence's one-process branches both ask it."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = asks_several(test.operand, names, switches, depth)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        answers = [asks_several(value, names, switches, depth) for value in test.values]
        # ``a and b`` holds in every multi-process run when each does, fails in every
        # one when one does; ``or`` the converse.
        wanted = isinstance(test.op, ast.And)
        if all(answer is wanted for answer in answers):
            return wanted
        if any(answer is (not wanted) for answer in answers):
            return not wanted
        return None
    if isinstance(test, ast.Call) and names.resolve(test.func) in DISTRIBUTED_QUERIES:
        return True
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        if reads_launcher_rank(test.left, names, switches, depth):
            return launch_answer(test.ops[0], literal_or_none(test.comparators[0]))
        if not reads_world_size(test.left, names, switches, depth):
            return None
        return several_when(test.ops[0], literal_or_none(test.comparators[0]))
    return switches.switch(test, depth - 1) if depth > 0 else None


#: For ``rank <op> bound``: what every rank of a launched job answers (a launcher gives
#: no rank -1; -1 is the programs' own "not launched distributed").
_LAUNCHED_ANSWERS = {
    (ast.Eq, -1): False,
    (ast.Is, -1): False,
    (ast.NotEq, -1): True,
    (ast.IsNot, -1): True,
    (ast.Gt, -1): True,
    (ast.GtE, -1): True,
    (ast.Lt, -1): False,
    (ast.LtE, -1): False,
    (ast.GtE, 0): True,
    (ast.Lt, 0): False,
}


def launch_answer(op: ast.cmpop, bound: object) -> bool | None:
    """For ``rank <op> bound`` (``local_rank != -1``, ``rank >= 0``): True when every
    rank of a launched job answers yes, False when every one answers no, None when the
    answer depends on the rank."""
    if not isinstance(bound, int) or isinstance(bound, bool):
        return None
    return _LAUNCHED_ANSWERS.get((type(op), bound))


def reads_world_size(expression: ast.expr, names: Names, switches: Switches, depth: int) -> bool:
    """``dist.get_world_size()`` (of the default group), ``WORLD_SIZE`` from the
    environment (through ``int()``), a library's ``world_size`` attribute, or a name
    the asker's switches say holds one."""
    expression = _without_int(expression)
    if isinstance(expression, ast.IfExp):  # ``get_world_size() if ... else 1``
        return all(
            literal_or_none(arm) == 1 or reads_world_size(arm, names, switches, depth)
            for arm in (expression.body, expression.orelse)
        )
    if isinstance(expression, ast.Call):
        resolved = names.resolve(expression.func) or ""
        if resolved.rsplit(".", 1)[-1] in WORLD_SIZE_FUNCTION_NAMES:
            return not expression.args and not expression.keywords
        if resolved in ENVIRONMENT_READERS and expression.args:
            return _is_world_size_key(expression.args[0])
        return False
    if isinstance(expression, ast.Subscript):
        return names.resolve(expression.value) == "os.environ" and _is_world_size_key(
            expression.slice
        )
    if isinstance(expression, ast.Attribute) and expression.attr in WORLD_SIZE_ATTRIBUTES:
        return True
    return switches.world_size(expression, depth - 1) if depth > 0 else False


def reads_launcher_rank(expression: ast.expr, names: Names, switches: Switches, depth: int) -> bool:
    """The rank a launcher hands in, as read (through ``int()``): ``RANK`` /
    ``LOCAL_RANK`` from the environment, a library's rank attribute
    (``args.local_rank``), ``dist.get_rank()``, or a name the asker's switches say holds
    one; not arithmetic on it. Compared with -1 it asks whether a launcher started the
    run, never which rank."""
    expression = _without_int(expression)
    if reads_rank_variable(expression, names):
        return True
    if isinstance(expression, ast.Call):
        resolved = names.resolve(expression.func) or ""
        return resolved.rsplit(".", 1)[-1] in RANK_FUNCTION_NAMES and not expression.args
    if isinstance(expression, ast.Attribute):
        return expression.attr in RANK_NUMBER_ATTRIBUTES
    if isinstance(expression, ast.Name):
        return switches.launcher_rank(expression, depth - 1) if depth > 0 else False
    return False


def reads_rank_variable(expression: ast.AST, names: Names) -> bool:
    """A read of the launcher's ``RANK`` / ``LOCAL_RANK`` from the environment:
    ``os.environ["RANK"]``, ``os.environ.get("RANK", ...)``, ``os.getenv("RANK")``."""
    if isinstance(expression, ast.Subscript):
        return names.resolve(expression.value) == "os.environ" and _is_rank_key([expression.slice])
    if isinstance(expression, ast.Call):
        resolved = names.resolve(expression.func) or ""
        return resolved in ENVIRONMENT_READERS and _is_rank_key(expression.args[:1])
    return False


def _without_int(expression: ast.expr) -> ast.expr:
    """What ``int(...)`` (nested or not) converts, else the expression itself."""
    while (
        isinstance(expression, ast.Call)
        and isinstance(expression.func, ast.Name)
        and expression.func.id == "int"
        and len(expression.args) == 1
    ):
        expression = expression.args[0]
    return expression


def _is_rank_key(keys: list[ast.expr]) -> bool:
    return bool(keys) and isinstance(keys[0], ast.Constant) and keys[0].value in RANK_ENV_VARS


#: A binding's key: ("attr", attribute) module-wide, or ("name", scope id, name).
Key = tuple[str, ...]


class _ScopeSwitches:
    """A module's switches as seen from one scope (its names, the module's attributes)."""

    def __init__(self, paths: SingleProcessPaths, scope: ast.AST | None) -> None:
        self._paths = paths
        self._scope = scope

    def switch(self, expression: ast.expr, depth: int) -> bool | None:
        key = self._paths.key(expression, self._scope)
        return None if key is None else self._paths.switch(key, depth)

    def world_size(self, expression: ast.expr, depth: int) -> bool:
        key = self._paths.key(expression, self._scope)
        return key is not None and self._paths.world_size_key(key, depth)

    def launcher_rank(self, expression: ast.expr, depth: int) -> bool:
        """A name bound only to the launcher's rank, in the scope or, where the scope
        binds it nowhere, at the module's top level."""
        return self._paths.launcher_rank_name(expression, self._scope, depth)


class SingleProcessPaths:
    """Which statements of a module run only when the job is one process."""

    def __init__(
        self,
        nodes: ModuleNodes,
        names: Names,
        graphs: ScopeGraphs,
        project: ProjectFacts = NO_PROJECT,
    ) -> None:
        #: Every program that runs the module is one process (the project says so).
        self.program_alone = project.runs_alone()
        self._project = project
        self._switch_truths: dict[str, bool] | None = None
        self._nodes = nodes
        self._names = names
        self._graphs = graphs
        self._parents: dict[ast.AST, ast.AST] | None = None
        self._statement_scopes = _statement_scopes(nodes.module)
        self._bindings = _bindings(self._statement_scopes)
        self._several_keys: dict[Key, bool | None] = {}
        self._world_keys: dict[Key, bool] = {}
        self._reached: dict[int, set[int]] = {}
        self._alone_functions: set[ast.AST] | None = None
        self._world_handed: set[Key] | None = None
        self._statements_by_line: dict[int, ast.AST] | None = None

    # -- where a node runs ---------------------------------------------------------------

    def holds(self, node: ast.AST) -> bool:
        """Whether ``node`` (a statement or an expression) runs only in a
        single-process job."""
        statement, scope = self._statement_of(node)
        if statement is None or scope is None:
            return False
        if self.program_alone:
            return True
        if self._alone_in_scope(statement, scope):
            return True
        return self.alone_scope(scope)

    def holds_at(self, line: int) -> bool:
        """``holds`` of the innermost statement (or ``except`` clause) that spans
        ``line``: where a finding on that line sits."""
        if self._statements_by_line is None:
            self._statements_by_line = {}
            # The innermost: starts last, and of those ends first.
            for statement in sorted(self._statement_scopes, key=_nesting_order):
                first, last = _nesting_order(statement)
                for at in range(first, -last + 1):
                    self._statements_by_line[at] = statement
        found = self._statements_by_line.get(line)
        return found is not None and self.holds(found)

    def swallows_alone(self, handler: ast.ExceptHandler) -> bool:
        """Whether every way that leaves ``handler`` without raising runs only in a
        single-process job (``except E: if dist.is_initialized(): raise`` ...)."""
        scope = self._statement_scopes.get(handler)
        if scope is None:
            return False
        if self.program_alone or self.alone_scope(scope):
            return True
        graph = self._graphs.graph(scope)
        inside = {id(node) for part in handler.body for node in walk(part)}
        together = self._reached_together(graph)
        for node in graph.nodes:
            if id(node.statement) not in inside or node.index not in together:
                continue
            alone = self.single_process_edge(node)
            for successor, edge in node.successors:
                if edge in (EdgeKind.RAISE, EdgeKind.EXCEPTION) or edge is alone:
                    continue
                if id(successor.statement) not in inside:
                    return False
        return True

    def alone_scope(self, scope: ast.AST) -> bool:
        """The scope, or one around it, is a local function reached only from
        single-process statements."""
        if self._alone_functions is None:
            self._alone_functions = self._functions_reached_alone()
        current: ast.AST | None = scope
        while current is not None and not isinstance(current, ast.Module):
            if current in self._alone_functions:
                return True
            current = self._nodes.scope_of.get(current)
        return False

    def _alone_in_scope(self, statement: ast.AST, scope: Scope) -> bool:
        graph = self._graphs.graph(scope)
        found = graph.nodes_of(statement)
        if not found:
            return False
        together = self._reached_together(graph)
        return all(node.index not in together for node in found) and any(
            _reachable(graph, node) for node in found
        )

    def _reached_together(self, graph: Graph) -> set[int]:
        """Nodes a way from the entry reaches without a single-process branch."""
        known = self._reached.get(id(graph))
        if known is None:
            known = {graph.entry.index}
            pending = [graph.entry]
            while pending:
                node = pending.pop()
                alone = self.single_process_edge(node)
                for successor, edge in node.successors:
                    if edge is not alone and successor.index not in known:
                        known.add(successor.index)
                        pending.append(successor)
            self._reached[id(graph)] = known
        return known

    def one_process_branch(self, node: Node) -> EdgeKind | None:
        """``single_process_edge``, or the branch of the run's distributed switch as the
        module uses it that does none of the distributed work (``distributed_switches``).
        The frequency question asks this; the rank questions do not, since an arm only
        rank 0 takes looks alike (``if is_main: dist.broadcast(...)``)."""
        edge = self.single_process_edge(node)
        if edge is not None or node.kind is not NodeKind.TEST:
            return edge
        statement = node.statement
        if not isinstance(statement, ast.If):
            return None
        positive, polarity = strip_not(statement.test)
        distributed_when = self._distributed_switches().get(ast.unparse(positive))
        if distributed_when is None:
            return None
        return EdgeKind.FALSE if distributed_when == polarity else EdgeKind.TRUE

    def _distributed_switches(self) -> dict[str, bool]:
        """The tests of the module (their text, ``not`` taken off) whose one way does the
        distributed work and whose other way does none, the same way at every ``if`` of
        them, and the truth on which they do it: the run's distributed switch, as the
        code uses it (``if args.distributed: model = DDP(model)``). What the switch means
        is read from what its arm does, never from its name."""
        if self._switch_truths is None:
            found: dict[str, set[bool]] = {}
            for branch in self._nodes.of_type(ast.If):
                positive, polarity = strip_not(branch.test)
                if not isinstance(positive, (ast.Name, ast.Attribute, ast.Call)):
                    continue
                if isinstance(positive, ast.Call) and positive.args:
                    continue
                for arm, truth in ((branch.body, polarity), (branch.orelse, not polarity)):
                    if any(self._distributed_work(c) for s in arm for c in _own_calls(s)):
                        found.setdefault(ast.unparse(positive), set()).add(truth)
            self._switch_truths = {
                spelled: next(iter(truths)) for spelled, truths in found.items() if len(truths) == 1
            }
        return self._switch_truths

    def _distributed_work(self, call: ast.Call) -> bool:
        """Wraps a model in DDP, starts the group, reduces or gathers, or calls a
        project function that does."""
        resolved = self._names.resolve(call.func) or ""
        if resolved in DDP_WRAPPERS:
            return True
        head, _, last = resolved.rpartition(".")
        if head == "torch.distributed" and last in _DISTRIBUTED_WORK:
            return True
        spelled = dotted_name(call.func)
        if spelled is None or spelled.startswith("torch."):
            return False
        reached = self._project.reached(spelled, None)
        return reached is not None and reached.name.rsplit(".", 1)[-1] in _DISTRIBUTED_WORK

    def single_process_edge(self, node: Node) -> EdgeKind | None:
        """The branch of an ``if`` / ``while`` that only a single-process job takes."""
        statement = node.statement
        if node.kind is not NodeKind.TEST or not isinstance(statement, (ast.If, ast.While)):
            return None
        scope = self._scope_of_statement(statement)
        if (
            scope is self._nodes.module
            and isinstance(statement, ast.If)
            and is_main_test(statement.test)
            and self._project.main_runs_alone()
        ):
            return EdgeKind.TRUE  # the module run as its own one-process program
        several = self.asks_several(statement.test, scope)
        if several is None:
            return None
        edge, arm = (
            (EdgeKind.FALSE, statement.orelse)
            if several
            else (
                EdgeKind.TRUE,
                statement.body,
            )
        )
        if any(self._starts_group(inner) for part in arm for inner in walk(part)):
            return None  # ``if not dist.is_initialized(): init_process_group()``
        if any(
            follows is edge and self._leads_to_a_start(after) for after, follows in node.successors
        ):
            return None  # ``if dist.is_initialized(): return`` before the start
        return edge

    def _leads_to_a_start(self, node: Node) -> bool:
        """Whether a way from ``node`` reaches a statement that starts a process group
        (before it starts, a multi-process run answers "is there a group?" no too)."""
        for current in _nodes_from(node):
            statement = current.statement
            if (
                current.kind is NodeKind.STATEMENT
                and statement is not None
                and any(self._starts_group(inner) for inner in walk(statement))
            ):
                return True
        return False

    # -- tests that ask for several processes --------------------------------------------

    def asks_several(
        self, test: ast.expr, scope: ast.AST | None, depth: int = _DEPTH
    ) -> bool | None:
        """``asks_several`` with this module's switches, from ``scope``."""
        return asks_several(test, self._names, _ScopeSwitches(self, scope), depth)

    def world_size_key(self, key: Key, depth: int) -> bool:
        """Whether every binding of ``key`` reads the world size (``1`` beside them),
        or it is a parameter bound nowhere else that the scope hands on as one."""
        if key not in self._world_keys:
            self._world_keys[key] = False  # recursion: no
            values = self._bindings.get(key, [])
            reads = [v for v in values if v is not None and literal_or_none(v) != 1]
            self._world_keys[key] = (
                bool(reads)
                and None not in values
                and all(
                    reads_world_size(v, self._names, _ScopeSwitches(self, self._scope_of(v)), depth)
                    for v in reads
                )
            ) or (values == [None] and key in self._handed_as_world_size())
        return self._world_keys[key]

    def _handed_as_world_size(self) -> set[Key]:
        """Names a scope hands on as the world size: ``num_replicas=n`` (torch's samplers'
        keyword, which a project's sampler wrappers keep), ``init_process_group(...,
        world_size=n)``; a parameter bound nowhere else holds it."""
        if self._world_handed is None:
            self._world_handed = set()
            for scope, calls in self._nodes.calls_by_scope.items():
                for call in calls:
                    resolved = self._names.resolve(call.func) or ""
                    keywords = {"num_replicas"}
                    if resolved.rsplit(".", 1)[-1] == "init_process_group":
                        keywords.add("world_size")
                    for given in call.keywords:
                        if given.arg in keywords and isinstance(given.value, ast.Name):
                            self._world_handed.add(("name", str(id(scope)), given.value.id))
        return self._world_handed

    def switch(self, key: Key, depth: int) -> bool | None:
        """What a switch's every binding says of the process count (``False`` as a
        default beside them; ``True`` where the binding starts a process group)."""
        if key in self._several_keys:
            return self._several_keys[key]
        self._several_keys[key] = None  # recursion: unknown
        answers: set[bool | None] = set()
        for value in self._bindings.get(key, []):
            if value is None:
                answers.add(None)  # bound by a loop, a parameter, an unpacking
                continue
            constant = literal_or_none(value)
            if constant is False:
                continue
            if constant is True:
                answers.add(True if self._beside_group_start(value) else None)
                continue
            answers.add(self.asks_several(value, self._scope_of(value), depth))
        found = answers.pop() if len(answers) == 1 else None
        self._several_keys[key] = found
        return found

    def _beside_group_start(self, value: ast.expr) -> bool:
        """``True`` bound in a block one of whose own statements (not a nested block's)
        starts a process group, directly or through a call of a function that does."""
        statement, _ = self._statement_of(value)
        parent = self._parent_map().get(statement) if statement is not None else None
        for field in ("body", "orelse"):
            block = getattr(parent, field, None)
            if isinstance(block, list) and statement in block:
                return any(
                    self._starts_group(inner)
                    for part in block
                    if isinstance(part, (ast.Expr, ast.Assign, ast.AnnAssign))
                    for inner in walk(part)
                )
        return False

    def _starts_group(self, node: ast.AST) -> bool:
        if not isinstance(node, ast.Call):
            return False
        if self._names.resolve(node.func) in _STARTS_GROUP:
            return True
        # A function of the module that starts one.
        if isinstance(node.func, ast.Name):
            for function in self._nodes.functions():
                if function.name == node.func.id and isinstance(
                    self._nodes.scope_of.get(function), ast.Module
                ):
                    return any(
                        isinstance(inner, ast.Call)
                        and self._names.resolve(inner.func) in _STARTS_GROUP
                        for inner in walk(function)
                    )
        return False

    def launcher_rank_name(self, expression: ast.expr, scope: ast.AST | None, depth: int) -> bool:
        """``SwitchesOf(scope).launcher_rank``: every binding of the name (in ``scope``,
        else in module code) reads the launcher's rank."""
        values: list[ast.expr | None] = []
        for where in (scope, self._nodes.module):
            key = self.key(expression, where)
            values = self._bindings.get(key, []) if key is not None else []
            if values or not isinstance(expression, ast.Name):
                break
        return bool(values) and all(
            v is not None
            and reads_launcher_rank(v, self._names, _ScopeSwitches(self, self._scope_of(v)), depth)
            for v in values
        )

    def key(self, expression: ast.expr, scope: ast.AST | None) -> Key | None:
        """The binding key of a name (in ``scope``) or an attribute (module-wide)."""
        if isinstance(expression, ast.Attribute):
            return ("attr", expression.attr)
        if isinstance(expression, ast.Name) and scope is not None:
            return ("name", str(id(scope)), expression.id)
        return None

    # -- local functions reached only from single-process statements --------------------

    def _functions_reached_alone(self) -> set[ast.AST]:
        """Local functions every use of which is a call on a single-process path."""
        uses: dict[str, list[ast.AST]] = {}
        # Methods are left out: ``obj.method()`` from anywhere is not seen here.
        defined = {
            function.name: function
            for function in self._nodes.functions()
            if not function.decorator_list
            and not isinstance(self._nodes.scope_of.get(function), ast.ClassDef)
        }
        for node in walk(self._nodes.module):
            name = _function_use(node)
            if name is not None and name in defined:
                uses.setdefault(name, []).append(node)
        alone: set[ast.AST] = set()
        self._alone_functions = alone
        changed = True
        while changed:
            changed = False
            for name, function in defined.items():
                if function in alone or not uses.get(name):
                    continue
                if all(self._alone_call(use) for use in uses[name]):
                    alone.add(function)
                    changed = True
        return alone

    def _alone_call(self, use: ast.AST) -> bool:
        parent = self._parent_map().get(use)
        if not (isinstance(parent, ast.Call) and parent.func is use):
            return False  # handed on as a value: who calls it is not known
        statement, scope = self._statement_of(parent)
        if statement is None or scope is None:
            return False
        return self._alone_in_scope(statement, scope) or self.alone_scope(scope)

    # -- locating ------------------------------------------------------------------------

    def _parent_map(self) -> dict[ast.AST, ast.AST]:
        if self._parents is None:
            self._parents = {
                child: parent
                for parent in walk(self._nodes.module)
                for child in child_nodes(parent)
            }
        return self._parents

    def _scope_of(self, node: ast.AST) -> ast.AST | None:
        return self._scope_of_statement(self._statement_of(node)[0])

    def _scope_of_statement(self, statement: ast.AST | None) -> ast.AST | None:
        return self._statement_scopes.get(statement) if statement is not None else None

    def _statement_of(self, node: ast.AST) -> tuple[ast.AST | None, Scope | None]:
        """The statement (or ``except`` clause) that holds ``node``, and its scope."""
        parents = self._parent_map()
        current: ast.AST | None = node
        while current is not None and current not in self._statement_scopes:
            current = parents.get(current)
        if current is None:
            return None, None
        return current, self._statement_scopes[current]


def _nesting_order(statement: ast.AST) -> tuple[int, int]:
    """Outer statements first: by first line, then the longer first."""
    first = getattr(statement, "lineno", 0)
    return first, -(getattr(statement, "end_lineno", None) or first)


def _statement_scopes(module: ast.Module) -> dict[ast.AST, Scope]:
    """Each statement's (and ``except`` clause's) scope: the innermost function, class
    body or the module."""
    found: dict[ast.AST, Scope] = {}
    pending: list[tuple[ast.AST, Scope]] = [(module, module)]
    while pending:
        node, scope = pending.pop()
        if isinstance(node, (ast.stmt, ast.ExceptHandler)):
            found[node] = scope
        inner: Scope = node if isinstance(node, (*_FUNCTIONS, ast.ClassDef)) else scope
        pending.extend((child, inner) for child in child_nodes(node))
    return found


def _bindings(scopes: dict[ast.AST, Scope]) -> dict[Key, list[ast.expr | None]]:
    """What each key is bound to (None: a binding whose value is not known: an augmented
    assignment, a loop or ``with`` target, a parameter, a tuple unpacked)."""
    found: dict[Key, list[ast.expr | None]] = {}

    def bind(target: ast.AST, value: ast.expr | None, scope: ast.AST) -> None:
        if isinstance(target, ast.Attribute):
            found.setdefault(("attr", target.attr), []).append(value)
        elif isinstance(target, ast.Name):
            found.setdefault(("name", str(id(scope)), target.id), []).append(value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                bind(element, None, scope)

    for statement, scope in scopes.items():
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                bind(target, statement.value, scope)
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            bind(statement.target, statement.value, scope)
        elif isinstance(statement, (ast.AugAssign, ast.For, ast.AsyncFor)):
            bind(statement.target, None, scope)
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            for item in statement.items:
                if item.optional_vars is not None:
                    bind(item.optional_vars, None, scope)
        elif isinstance(statement, _FUNCTIONS):
            arguments = statement.args
            for argument in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
                found.setdefault(("name", str(id(statement)), argument.arg), []).append(None)
    return found


def _reachable(graph: Graph, target: Node) -> bool:
    """Whether any way from the entry reaches ``target`` (dead code runs nowhere)."""
    return any(node is target for node in _nodes_from(graph.entry))


def _nodes_from(start: Node) -> Iterator[Node]:
    """``start`` and every node a way from it reaches, each once."""
    seen = {start.index}
    pending = [start]
    while pending:
        node = pending.pop()
        yield node
        for successor, _ in node.successors:
            if successor.index not in seen:
                seen.add(successor.index)
                pending.append(successor)


def _function_use(node: ast.AST) -> str | None:
    """The name a node reads (a local function's use)."""
    return node.id if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) else None


def is_main_test(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either way round): true only when the module is
    the program run."""
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return False
    if not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, *test.comparators]
    return any(isinstance(side, ast.Name) and side.id == "__name__" for side in sides) and any(
        isinstance(side, ast.Constant) and side.value == "__main__" for side in sides
    )


def literal_or_none(expression: ast.expr) -> object:
    """The value of a literal expression; None where it is none."""
    try:
        return ast.literal_eval(expression)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _is_world_size_key(key: ast.expr) -> bool:
    return isinstance(key, ast.Constant) and key.value in WORLD_SIZE_ENV_VARS


def _own_calls(root: ast.AST) -> list[ast.Call]:
    """The calls ``root`` makes itself (nested functions and lambdas left out)."""
    return [node for node in walk_own(root) if isinstance(node, ast.Call)]


def strip_not(test: ast.expr) -> tuple[ast.expr, bool]:
    """``not x`` -> (x, False); anything else -> (itself, True)."""
    polarity = True
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, polarity = test.operand, not polarity
    return test, polarity
