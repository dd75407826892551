"""File-system checks that decide whether a collective runs: a question to the analysis
core (DDP218).

``file_checks_deciding_collectives(analysis)``: each test on a file-system check
(``os.path.exists``, ``os.listdir``, ``glob.glob``, ``Path(p).is_file()``, ...) on which a
collective is control-dependent (a test around it, a ``return`` / ``continue`` /
``break`` before it), asked of a probe view of the divergence (``probe_view``) in which
such a check differs between ranks: each rank asks at its own moment.

Only a check of a path the run itself may write while the ranks ask counts: a path no
rank writes (an input checkpoint, a dataset folder, the checkpoints of an earlier run
listed to resume) gives every rank the same answer. A path held in the object's state
(``self.best_model_path``, or a name bound from such a field; a method of the class that
never reads its object reads no field) counts as written: the object or its framework
base may write it during the run, unless every rank asks it right after a collective
with no call that may write through the object before the next one (``_settled``). A
path is written when the same expression is handed to a call that writes files
(``torch.save``, ``open`` in a writing mode, ``os.makedirs``, ``.save(...)``,
``.write_text()``, ...), or to any call that runs on some ranks only (``if rank == 0:
prepare(path)``: one rank makes it) other than one that only builds or reads paths
(``os.path.join``, a builtin) or a function of the module whose body only reads the
parameter it is handed in. A write races with the check when it may come after the
check with no collective between them, or before it on some ranks only with no
collective between (``_WrittenProbes._races``; a way through the branch a job of one
process takes races with no peer); a write in another function may come at any time,
unless the path it writes is that function's own local variable or every rank asks
right after a collective with no call before the next one that may run it
(``_settled``); making a folder does not change a listing of it. A test whose ways
issue the same collectives decides nothing (pairing), nor a check whose answer is
shared first (``broadcast_object_list``: the divergence's agreement).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from ddplint.analysis.api import FILE_CALLS
from ddplint.analysis.control_flow import Node, Scope, holds_node
from ddplint.analysis.divergence import Source, Taint, paired_arguments
from ddplint.analysis.dominance import avoids
from ddplint.analysis.effects import Collective
from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.names import BUILTIN_NAMES, Names, call_argument, dotted_name
from ddplint.analysis.rank_guards import RankGuard, guard_of, own_reads, paired_tests

#: ``pathlib.Path`` methods that look at the file system.
PATH_CHECKS = frozenset({"exists", "is_file", "is_dir"})
#: Functions that write (or make) the files and folders they are handed.
WRITING_FUNCTIONS = frozenset(
    {
        "torch.save",
        "numpy.save",
        "numpy.savez",
        "numpy.savez_compressed",
        "numpy.savetxt",
        "os.makedirs",
        "os.mkdir",
        "os.rename",
        "os.replace",
        "os.symlink",
        "shutil.copy",
        "shutil.copy2",
        "shutil.copyfile",
        "shutil.copytree",
        "shutil.move",
        "urllib.request.urlretrieve",
        "torchvision.utils.save_image",
        "cv2.imwrite",
        "imageio.imwrite",
    }
)
#: Methods that write the path they are handed (or the path they are called on).
WRITING_METHODS = frozenset(
    {
        "save",
        "save_pretrained",
        "savefig",
        "write",
        "write_text",
        "write_bytes",
        "mkdir",
        "touch",
        "to_csv",
        "to_json",
        "to_parquet",
    }
)
#: Functions that only read the file they are handed.
READING_FUNCTIONS = frozenset({"torch.load", "numpy.load"})
_WRITING_MODES = frozenset("wax+")
#: Functions that make the folder they are handed and nothing in it.
FOLDER_MAKERS = frozenset({"os.makedirs", "os.mkdir"})
#: Checks that list a folder's entries (which making the folder does not change).
LISTINGS = frozenset({"os.listdir", "os.scandir"})


@dataclass(frozen=True)
class FileCheckDecision:
    """``guard`` (a test on a file-system check) decides whether ``collective`` runs;
    ``at`` is where it is reported: the collective's statement under the test, or the
    exit the test takes before it."""

    at: ast.AST
    guard: RankGuard
    collective: Collective


def file_checks_deciding_collectives(analysis: ModuleAnalysis) -> list[FileCheckDecision]:
    """Each test on a file-system check of a written path that decides a collective, once
    per test, in source order."""
    names = analysis.names
    checks = [c for c in analysis.nodes.of_type(ast.Call) if checked_path(names, c) is not None]
    if not checks:
        return []
    probes = _WrittenProbes(analysis, checks)
    if not probes.some():
        return []
    found: dict[int, FileCheckDecision] = {}
    for scope in analysis.scopes_with_collectives():
        function = analysis.function(scope)
        if not function.effects:
            continue
        view = analysis.probe_view(scope, probes.differs)
        paired = paired_tests(analysis, scope)
        for node in sorted(function.graph.nodes, key=lambda n: n.line):
            for collective, through in function.effects.get(node.index, ()):
                guard = guard_of(
                    analysis,
                    scope,
                    node,
                    collective.call if through is None else None,
                    _from_file,
                    view,
                    paired,
                )
                if guard is None or id(guard.cause) in found or node.statement is None:
                    continue
                at = _exit_of(guard.cause, node.statement) or node.statement
                found[id(guard.cause)] = FileCheckDecision(at, guard, collective)
    return sorted(found.values(), key=lambda f: (getattr(f.at, "lineno", 0), f.guard.line))


def _from_file(taint: Taint) -> bool:
    return taint.source is Source.FILE


def _exit_of(cause: ast.AST, statement: ast.AST) -> ast.stmt | None:
    """The exit a test takes before ``statement`` (``if done: continue``), None when the
    statement is under the test."""
    if not isinstance(cause, (ast.If, ast.While)) or any(n is statement for n in ast.walk(cause)):
        return None
    for block in (cause.body, cause.orelse):
        for inner in block:
            if isinstance(inner, (ast.Return, ast.Continue, ast.Break)):
                return inner
    return None


def checked_path(names: Names, call: ast.Call) -> ast.expr | None:
    """The path a file-system check looks at: the argument of ``os.path.exists(p)`` /
    ``os.listdir(p)`` / ``glob.glob(p)``, ``p`` of ``p.exists()`` or ``Path(p).exists()``."""
    if names.resolve(call.func) in FILE_CALLS:
        return call_argument(call, 0, "path")
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in PATH_CHECKS and not call.args:
        return _unwrapped_path(names, func.value)
    return None


#: ``pathlib`` classes whose one argument is the path they stand for.
_PATH_CLASSES = frozenset(
    {
        "pathlib.Path",
        "pathlib.PurePath",
        "pathlib.PosixPath",
        "pathlib.WindowsPath",
        "pathlib.PurePosixPath",
        "pathlib.PureWindowsPath",
    }
)


def _unwrapped_path(names: Names, expression: ast.expr) -> ast.expr:
    """``p`` for ``Path(p)`` (one argument, ``pathlib``'s class by its import), else the
    expression itself."""
    if (
        isinstance(expression, ast.Call)
        and len(expression.args) == 1
        and not expression.keywords
        and names.resolve(expression.func) in _PATH_CLASSES
    ):
        return expression.args[0]
    return expression


@dataclass(frozen=True)
class _Place:
    """Where an expression is evaluated: its scope and graph node."""

    scope: Scope
    node: Node


@dataclass(frozen=True)
class _Write:
    """A call that writes (or may write) a checked path: where it runs, whether on some
    ranks only, and whether it only makes the folder (``os.makedirs(p)``)."""

    place: _Place | None
    some_ranks: bool
    makes_folder: bool


class _WrittenProbes:
    """Which file-system checks of a module look at a path the run may write between
    the moments the ranks ask (a race between the write and the check)."""

    def __init__(self, analysis: ModuleAnalysis, checks: list[ast.Call]) -> None:
        self.analysis = analysis
        self._checked: dict[int, str] = {}
        #: Checks of a path held in the object's state (``self.best_path``, or a name
        #: bound from one in the same function): the object or its framework base may
        #: write it during the run, out of this module's sight.
        self._stateful: set[int] = set()
        held = _bound_from_fields(analysis)
        for check in checks:
            path = checked_path(analysis.names, check)
            if path is None:
                continue
            self._checked[id(check)] = ast.unparse(path)
            scope = analysis.nodes.call_scopes.get(id(check))
            if _reads_field(analysis, scope, path, held.get(id(scope), set())):
                self._stateful.add(id(check))
        self._synchronised: dict[int, frozenset[int]] = {}
        self._calls: dict[int, list[tuple[ast.Call, Node]]] = {}
        writes = self._writes_of(set(self._checked.values()))
        places = {id(c): _Place(s, n) for c, s, n in own_reads(analysis, list(checks))}
        self._differing = {
            id(check)
            for check in checks
            if id(check) in self._stateful
            and not self._settled(check, places.get(id(check)), self._may_write_state)
        } | {
            id(check)
            for check in checks
            if any(
                self._races(check, places.get(id(check)), write)
                for write in writes.get(self._checked.get(id(check), ""), ())
            )
        }

    def some(self) -> bool:
        """Whether any check of the module differs between ranks."""
        return bool(self._differing)

    def differs(self, call: ast.Call) -> bool:
        """Whether ``call`` is a check of a path the run may write while the ranks ask
        (or may write: the object's state)."""
        return id(call) in self._differing

    def _races(self, check: ast.Call, at: _Place | None, write: _Write) -> bool:
        """Whether ``write`` may land between two ranks' answers to ``check``: it may
        come after the check with no collective between them (a rank that asks late
        sees what one that asked early did not), or before it on some ranks only with
        no collective between (a rank that writes is not waited for). A write each rank
        makes before its own check, or one a collective separates from it, lands before
        or after every rank's answer; a way through the branch that a job of one process
        takes (``if dist.is_initialized(): dist.barrier()`` skipped) has no peer to race.
        Only a folder made (``os.makedirs(p)``) does not change a listing of it: a
        listing of a folder not made yet fails loudly. Writes in another function than
        the check may come at any time, unless the path they write is that function's
        own local variable (another variable than the check's, whatever its name)."""
        if write.makes_folder and self.analysis.names.resolve(check.func) in LISTINGS:
            return False
        if at is None or write.place is None:
            return True
        if write.place.scope is not at.scope:
            return not _apart_locals(
                write.place.scope, at.scope, self._checked[id(check)]
            ) and not self._settled(check, at, self._may_run_writer)
        stops = self._collectives(at.scope)
        # A way through the branch a job of one process takes has no peer to race.
        alone = self.analysis.function(at.scope).divergence.one_process_edge
        if not avoids(at.node, write.place.node, stops - {at.node.index}, alone):
            return True
        return write.some_ranks and not avoids(
            write.place.node, at.node, stops - {write.place.node.index}, alone
        )

    def _settled(
        self, check: ast.Call, at: _Place | None, may_write: Callable[[ast.Call, Scope, str], bool]
    ) -> bool:
        """Whether every rank asks ``check`` where no write out of its function's sight can
        come between the ranks' answers: every way to it passes a collective every rank
        issues, and no call (but a collective's own) on a way from that collective to the
        check, or from the check to the next collective, ``may_write`` the path. Each
        rank answers after all have passed the collective and before any passes the
        next, with nothing written between: one answer on a shared file system (a
        barrier right before ``os.path.exists(self.best_model_path)``)."""
        if at is None:
            return False
        function = self.analysis.function(at.scope)
        stops = self._collectives(at.scope) - {at.node.index}
        alone = function.divergence.one_process_edge
        if not stops or not avoids(function.graph.entry, at.node, stops, alone):
            return False
        path = self._checked[id(check)]
        issued = {
            id(collective.call)
            for effects in function.effects.values()
            for collective, through in effects
            if through is None
        }
        for call, node in self._calls_of(at.scope):
            if call is check or id(call) in issued or not may_write(call, at.scope, path):
                continue
            if not avoids(node, at.node, stops - {node.index}, alone):
                return False
            if not avoids(at.node, node, stops, alone):
                return False
        return True

    def _calls_of(self, scope: Scope) -> list[tuple[ast.Call, Node]]:
        """Each call ``scope`` evaluates itself, with its graph node."""
        found = self._calls.get(id(scope))
        if found is None:
            calls: list[ast.AST] = [n for n in ast.walk(scope) if isinstance(n, ast.Call)]
            found = [
                (call, node)
                for call, owner, node in own_reads(self.analysis, calls)
                if owner is scope and isinstance(call, ast.Call)
            ]
            self._calls[id(scope)] = found
        return found

    def _may_write_state(self, call: ast.Call, scope: Scope, path: str) -> bool:
        """Whether ``call`` may write the file a path of the object's state names: a
        call that writes files, a method of ``self`` (or of ``super()``), or a call
        handed ``self``, one of its fields (``self.best_path``), the path itself or a
        name bound to either; a call that only reads paths or files writes nothing."""
        resolved = self.analysis.names.resolve(call.func) or ""
        if self._only_reads(call) or self._reads_file(call) or resolved in READING_FUNCTIONS:
            return False
        if self._writes(call):
            return True
        func = call.func
        receiver = [func.value] if isinstance(func, ast.Attribute) else []
        handed = [*call.args, *(k.value for k in call.keywords)]
        aliases = _aliases(scope, path)
        return any(
            _is_object(part)
            or _is_field(part)
            or ast.unparse(part) == path
            or (isinstance(part, ast.Name) and part.id in aliases)
            for part in receiver + handed
        )

    def _may_run_writer(self, call: ast.Call, scope: Scope, path: str) -> bool:
        """Whether ``call`` may run a write made in another function: any call but one
        that only reads paths or files."""
        del scope, path
        resolved = self.analysis.names.resolve(call.func) or ""
        return not (
            self._only_reads(call) or self._reads_file(call) or resolved in READING_FUNCTIONS
        )

    def _collectives(self, scope: Scope) -> frozenset[int]:
        """The graph nodes of ``scope`` that issue a collective every time they run."""
        found = self._synchronised.get(id(scope))
        if found is None:
            effects = self.analysis.function(scope).effects
            found = frozenset(
                index
                for index, issued in effects.items()
                if any(collective.condition is None for collective, _ in issued)
            )
            self._synchronised[id(scope)] = found
        return found

    def _writes_of(self, wanted: set[str]) -> dict[str, list[_Write]]:
        """The calls of the module that write (or may write) each path of ``wanted``: a
        call that writes files, or any call handed the path on some ranks only."""
        handed: list[ast.AST] = [
            call for call in self.analysis.nodes.of_type(ast.Call) if self._handed(call) & wanted
        ]
        found: dict[str, list[_Write]] = {}
        placed: set[int] = set()
        for read, scope, node in own_reads(self.analysis, handed):
            assert isinstance(read, ast.Call)
            placed.add(id(read))
            writes = self._writes(read)
            if not writes and self._only_reads(read):
                continue
            paths = self._handed(read) & wanted
            if not writes:
                paths -= self._read_by_local_function(read, scope)
            if not paths:
                continue
            some_ranks = _on_some_ranks(self.analysis, scope, node, read)
            if some_ranks or writes:
                write = _Write(_Place(scope, node), some_ranks, self._makes_folder(read))
                for path in paths:
                    found.setdefault(path, []).append(write)
        for unplaced in handed:  # evaluated by no statement (a default value): at any time
            if (
                id(unplaced) not in placed
                and isinstance(unplaced, ast.Call)
                and self._writes(unplaced)
            ):
                write = _Write(None, True, self._makes_folder(unplaced))
                for path in self._handed(unplaced) & wanted:
                    found.setdefault(path, []).append(write)
        return found

    def _read_by_local_function(self, call: ast.Call, scope: Scope) -> set[str]:
        """The texts of the arguments a call of a function of the module hands to
        parameters that its body only reads (``_only_read_parameter``); none for a
        call of anything else."""
        spelled = dotted_name(call.func)
        callee = self.analysis.local_callee(spelled, scope) if spelled else None
        if callee is None:
            return set()
        definition, positional = callee
        given = paired_arguments(tuple(positional), call.args)
        given += [(k.arg, k.value) for k in call.keywords]
        return {
            ast.unparse(argument)
            for parameter, argument in given
            if parameter is not None
            and not isinstance(argument, ast.Starred)
            and self._only_read_parameter(definition, parameter)
        }

    def _only_read_parameter(self, definition: ast.AST, parameter: str) -> bool:
        """Whether ``definition`` has ``parameter`` and its body uses it only as the
        path of a read (``open(p, "rb")``, ``os.path.exists(p)``): handed on, built
        into another path (``os.path.join(p, f)``: a file written in it changes its
        listing), bound to another name or returned, it may be written elsewhere."""
        arguments = getattr(definition, "args", None)
        if not isinstance(arguments, ast.arguments) or parameter not in {
            a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
        }:
            return False
        readers: set[int] = set()
        for node in ast.walk(definition):
            if isinstance(node, ast.Call) and self._reads_file(node):
                readers.update(id(a) for a in (*node.args, *(k.value for k in node.keywords)))
        return all(
            id(node) in readers
            for node in ast.walk(definition)
            if isinstance(node, ast.Name) and node.id == parameter
        )

    def _reads_file(self, call: ast.Call) -> bool:
        """Whether ``call`` reads the path it is handed and makes no other of it: a
        file-system check, ``open`` in a reading mode."""
        resolved = self.analysis.names.resolve(call.func)
        if resolved == "open":
            return not self._writes(call)
        return resolved in FILE_CALLS or checked_path(self.analysis.names, call) is not None

    def _makes_folder(self, call: ast.Call) -> bool:
        """Whether ``call`` only makes the folder it is handed (``os.makedirs``,
        ``Path(p).mkdir()``)."""
        if self.analysis.names.resolve(call.func) in FOLDER_MAKERS:
            return True
        return isinstance(call.func, ast.Attribute) and call.func.attr == "mkdir"

    def _handed(self, call: ast.Call) -> set[str]:
        """The texts of the expressions a call is handed (its receiver's path too)."""
        handed = {ast.unparse(a) for a in call.args if not isinstance(a, ast.Starred)}
        handed |= {ast.unparse(k.value) for k in call.keywords}
        if isinstance(call.func, ast.Attribute) and call.func.attr in WRITING_METHODS:
            handed.add(ast.unparse(_unwrapped_path(self.analysis.names, call.func.value)))
        return handed

    def _only_reads(self, call: ast.Call) -> bool:
        """Whether ``call`` writes no file, whatever it is handed: a builtin (``open``
        in a writing mode is a write, ``_writes``), ``os.path``'s functions and
        ``pathlib``'s classes (they build or read a path: ``Path(out).name``) and the
        file-system checks."""
        func = call.func
        resolved = self.analysis.names.resolve(func) or ""
        return (
            resolved.startswith("os.path.")
            or resolved in _PATH_CLASSES
            or resolved in FILE_CALLS
            or (isinstance(func, ast.Name) and resolved in BUILTIN_NAMES)
            or (isinstance(func, ast.Attribute) and func.attr in PATH_CHECKS and not call.args)
        )

    def _writes(self, call: ast.Call) -> bool:
        """Whether ``call`` writes the files it is handed."""
        resolved = self.analysis.names.resolve(call.func) or ""
        if resolved in WRITING_FUNCTIONS:
            return True
        if resolved == "open":
            mode = call_argument(call, 1, "mode")
            return (
                isinstance(mode, ast.Constant)
                and isinstance(mode.value, str)
                and bool(_WRITING_MODES & set(mode.value))
            )
        return isinstance(call.func, ast.Attribute) and call.func.attr in WRITING_METHODS


def _is_object(expression: ast.AST) -> bool:
    """Whether ``expression`` is the object itself: ``self``, or ``super()``."""
    if isinstance(expression, ast.Starred):
        expression = expression.value
    return (isinstance(expression, ast.Name) and expression.id == "self") or (
        isinstance(expression, ast.Call)
        and isinstance(expression.func, ast.Name)
        and expression.func.id == "super"
    )


def _is_field(expression: ast.AST) -> bool:
    """Whether ``expression`` is a field of the object (``self.path``, ``self.a.b``)."""
    while isinstance(expression, ast.Attribute):
        expression = expression.value
        if isinstance(expression, ast.Name) and expression.id == "self":
            return True
    return False


def _aliases(scope: Scope, path: str) -> set[str]:
    """The names ``scope`` binds to the path's text or to a field of the object."""
    return {
        target.id
        for node in ast.walk(scope)
        if isinstance(node, ast.Assign)
        and (_is_field(node.value) or ast.unparse(node.value) == path)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def _bound_from_fields(analysis: ModuleAnalysis) -> dict[int, set[str]]:
    """Per function (its ``id``), the plain names bound from a ``self.x`` field."""
    found: dict[int, set[str]] = {}
    for function in analysis.nodes.functions():
        names: set[str] = set()
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and _reads_field(analysis, function, node.value, names):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        found[id(function)] = names
    return found


def _reads_field(
    analysis: ModuleAnalysis, scope: Scope | None, expression: ast.AST, names: set[str]
) -> bool:
    """Whether ``expression`` reads a ``self.x`` field or one of ``names`` (a call of a
    method of the class that reads no state, ``self._path_of(d)``, reads only its
    arguments)."""
    calls = (n for n in ast.walk(expression) if isinstance(n, ast.Call))
    stateless = {id(c.func) for c in calls if _stateless_method(analysis, scope, c)}
    return any(
        (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and id(node) not in stateless
        )
        or (isinstance(node, ast.Name) and node.id in names)
        for node in ast.walk(expression)
    )


def _stateless_method(analysis: ModuleAnalysis, scope: Scope | None, call: ast.Call) -> bool:
    """Whether ``call`` calls a method of the caller's class (``self.m(...)``) whose
    body never reads its object (a static method, or one that leaves ``self`` unused)."""
    spelled = dotted_name(call.func)
    if scope is None or spelled is None or not spelled.startswith("self."):
        return False
    callee = analysis.local_callee(spelled, scope)
    if callee is None:
        return False
    definition = callee[0]
    declared = [*definition.args.posonlyargs, *definition.args.args]
    static = any(dotted_name(d) == "staticmethod" for d in definition.decorator_list)
    if static:
        return True
    if not declared:
        return False
    own = declared[0].arg
    return not any(isinstance(n, ast.Name) and n.id == own for n in ast.walk(definition))


def _apart_locals(writer: Scope, checker: Scope, path: str) -> bool:
    """Whether ``path`` (its text) starts with a local variable of ``writer``, a function
    that neither holds ``checker`` nor is held by it: the two name other variables."""
    if not isinstance(writer, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    if holds_node(writer, checker) or holds_node(checker, writer):
        return False
    root = path.split(".", 1)[0].split("[", 1)[0].split("(", 1)[0]
    arguments = writer.args
    declared = {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)}
    declared.discard("self")
    stored = {
        n.id for n in ast.walk(writer) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    return root in declared | stored


def _on_some_ranks(analysis: ModuleAnalysis, scope: Scope, node: Node, call: ast.Call) -> bool:
    """Whether ``call`` runs on some ranks only (a rank guard)."""
    return guard_of(analysis, scope, node, call) is not None
