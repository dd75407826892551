"""The folders a module puts on ``sys.path`` at its top level, as paths from its own.

A script that runs ``sys.path.insert(0, osp.join(osp.dirname(__file__), "lib"))`` (or
imports a module that does: CenterNet's ``_init_paths``) imports ``trains.train_factory``
from ``lib/trains/train_factory.py``; the project index resolves such imports under
the folders every module of the project adds (``ProjectIndex.resolve_module``).

Only paths built from the module's own file are read: ``__file__`` through
``os.path.abspath``/``realpath``/``normpath``/``dirname``/``join`` (literal parts,
``os.pardir``), ``pathlib.Path`` (``.parent``, ``.parents[n]``, ``/ "lib"``,
``.resolve()``), string concatenation and formatting with a literal tail, and
``sys.path[0]`` (the script's folder); names the top level binds to such a path; and
calls of a top-level function of the module that puts its parameter on ``sys.path``
(``add_path(lib_path)``). A path relative to the working directory (``"."``,
``os.getcwd()``) depends on where the program is started and is not read.
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Iterator, Sequence

from ddplint.analysis.names import dotted_name
from ddplint.code.project.summaries import qualify

#: Calls whose result names the same place as their one argument.
_SAME_PLACE = frozenset(
    {
        "os.path.abspath",
        "os.path.realpath",
        "os.path.normpath",
        "os.path.expanduser",
        "os.fspath",
        "pathlib.Path",
        "pathlib.PurePath",
        "pathlib.PosixPath",
        "str",
    }
)
#: Methods of a ``pathlib`` path whose result names the same place.
_SAME_PLACE_METHODS = frozenset({"resolve", "absolute", "expanduser"})
_PARENT_DIR = frozenset({"os.pardir", "os.path.pardir"})
_CURRENT_DIR = frozenset({"os.curdir", "os.path.curdir"})
_INSERTS = frozenset({"sys.path.insert", "sys.path.append"})
#: The module's own file, as a path value (a folder is a normalised relative path).
_FILE = "\0file"


def inserted_folders(statements: Sequence[ast.stmt], imports: dict[str, str]) -> list[str]:
    """The folders (relative to the module's own, ``"."``, ``"lib"``, ``"../.."``) that
    the module's top level (inside top-level ``if``/``try``/``with`` too) puts on
    ``sys.path``, in order, each once."""
    reader = _Reader(imports, _inserting_functions(statements, imports))
    found: dict[str, None] = {}
    for statement in _top_level(statements):
        for argument in reader.inserted(statement):
            folder = reader.path(argument)
            if folder is not None and folder != _FILE:
                found[folder] = None
        reader.bind(statement)
    return list(found)


def _top_level(statements: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements the module runs at import, in order, entering compound statements
    other than definitions."""
    for statement in statements:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        yield statement
        if isinstance(statement, ast.If | ast.With | ast.For | ast.While):
            yield from _top_level(statement.body)
            yield from _top_level(getattr(statement, "orelse", []))
        elif isinstance(statement, ast.Try):
            for block in (statement.body, statement.orelse, statement.finalbody):
                yield from _top_level(block)
            for handler in statement.handlers:
                yield from _top_level(handler.body)


def _inserting_functions(statements: Sequence[ast.stmt], imports: dict[str, str]) -> dict[str, int]:
    """Top-level functions that put one of their positional parameters on ``sys.path``:
    name -> the parameter's position."""
    found: dict[str, int] = {}
    for statement in statements:
        if not isinstance(statement, ast.FunctionDef):
            continue
        parameters = [argument.arg for argument in statement.args.args]
        for node in ast.walk(statement):
            argument = _inserted_argument(node, imports)
            if isinstance(argument, ast.Name) and argument.id in parameters:
                found[statement.name] = parameters.index(argument.id)
    return found


def _inserted_argument(node: ast.AST, imports: dict[str, str]) -> ast.expr | None:
    """The path a ``sys.path.insert(i, path)`` or ``sys.path.append(path)`` call puts
    on ``sys.path``."""
    if not isinstance(node, ast.Call) or node.keywords:
        return None
    name = dotted_name(node.func)
    if name is None or qualify(name, imports) not in _INSERTS:
        return None
    wanted = 2 if name.endswith(".insert") else 1
    return node.args[-1] if len(node.args) == wanted else None


class _Reader:
    """Reads path expressions against the top-level names bound so far."""

    def __init__(self, imports: dict[str, str], inserting: dict[str, int]) -> None:
        self._imports = imports
        self._inserting = inserting
        self._names: dict[str, str] = {}

    def inserted(self, statement: ast.stmt) -> Iterator[ast.expr]:
        """The paths the statement's expression puts on ``sys.path`` (a conditional
        expression's arms too: ``sys.path.insert(0, p) if p not in sys.path else
        None``)."""
        if not isinstance(statement, ast.Expr):
            return
        values = [statement.value]
        if isinstance(statement.value, ast.IfExp):
            values = [statement.value.body, statement.value.orelse]
        for value in values:
            argument = _inserted_argument(value, self._imports)
            if argument is not None:
                yield argument
            elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
                position = self._inserting.get(value.func.id)
                if position is not None and position < len(value.args) and not value.keywords:
                    yield value.args[position]

    def bind(self, statement: ast.stmt) -> None:
        """Note what a top-level assignment to one plain name binds."""
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, value = statement.target, statement.value
        else:
            return
        if isinstance(target, ast.Name):
            path = self.path(value)
            if path is None:
                self._names.pop(target.id, None)
            else:
                self._names[target.id] = path

    def path(self, node: ast.expr) -> str | None:
        """The place ``node`` names: ``_FILE``, a folder relative to the module's, or
        None when it is not one built from the module's own file."""
        if isinstance(node, ast.Name):
            return _FILE if node.id == "__file__" else self._names.get(node.id)
        if isinstance(node, ast.Attribute):
            if node.attr == "parent":
                return _parent(self.path(node.value))
            return None
        if isinstance(node, ast.Subscript):
            return self._subscript(node)
        if isinstance(node, ast.BinOp):
            return self._operation(node)
        if isinstance(node, ast.JoinedStr):
            return self._formatted(node)
        if isinstance(node, ast.Call):
            return self._call(node)
        return None

    def _qualified(self, node: ast.expr) -> str | None:
        name = dotted_name(node)
        if name is None:
            return None
        return qualify(name, self._imports) or name

    def _part(self, node: ast.expr) -> str | None:
        """A literal path part: a string, ``os.pardir`` or ``os.curdir``."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        name = self._qualified(node)
        if name in _PARENT_DIR:
            return ".."
        if name in _CURRENT_DIR:
            return "."
        return None

    def _call(self, node: ast.Call) -> str | None:
        if node.keywords:
            return None
        function = node.func
        if isinstance(function, ast.Attribute) and function.attr in _SAME_PLACE_METHODS:
            return self.path(function.value) if not node.args else None
        if isinstance(function, ast.Attribute) and function.attr == "joinpath":
            return _joined(self.path(function.value), [self._part(a) for a in node.args])
        if (
            isinstance(function, ast.Attribute)
            and function.attr == "format"
            and isinstance(function.value, ast.Constant)
            and isinstance(function.value.value, str)
            and len(node.args) == 1
        ):
            head, braces, tail = function.value.value.partition("{}")
            if braces and not head and "{" not in tail:
                return _tail_joined(self.path(node.args[0]), tail)
            return None
        name = self._qualified(function)
        if name in _SAME_PLACE and len(node.args) == 1:
            return self.path(node.args[0])
        if name == "os.path.dirname" and len(node.args) == 1:
            return _parent(self.path(node.args[0]))
        if name == "os.path.join" and node.args:
            return _joined(self.path(node.args[0]), [self._part(a) for a in node.args[1:]])
        return None

    def _subscript(self, node: ast.Subscript) -> str | None:
        index = node.slice
        if not (isinstance(index, ast.Constant) and isinstance(index.value, int)):
            return None
        if index.value == 0 and self._qualified(node.value) == "sys.path":
            return "."  # the folder of the script that runs
        value = node.value
        if isinstance(value, ast.Attribute) and value.attr == "parents" and index.value >= 0:
            place = self.path(value.value)
            for _ in range(index.value + 1):
                place = _parent(place)
            return place
        if (
            index.value == 0
            and isinstance(value, ast.Call)
            and self._qualified(value.func) == "os.path.split"
            and len(value.args) == 1
        ):
            return _parent(self.path(value.args[0]))
        return None

    def _operation(self, node: ast.BinOp) -> str | None:
        if isinstance(node.op, ast.Div):
            return _joined(self.path(node.left), [self._part(node.right)])
        if isinstance(node.op, ast.Add):
            tail = self._part(node.right)
            return _tail_joined(self.path(node.left), tail) if tail is not None else None
        return None

    def _formatted(self, node: ast.JoinedStr) -> str | None:
        """``f"{root}/lib"``: a path and a literal tail."""
        if len(node.values) != 2:
            return None
        head, tail = node.values
        if not isinstance(head, ast.FormattedValue) or head.format_spec is not None:
            return None
        if not (isinstance(tail, ast.Constant) and isinstance(tail.value, str)):
            return None
        return _tail_joined(self.path(head.value), tail.value)


def _parent(place: str | None) -> str | None:
    if place is None:
        return None
    if place == _FILE:
        return "."
    return posixpath.normpath(posixpath.join(place, ".."))


def _joined(place: str | None, parts: list[str | None]) -> str | None:
    """A folder joined with literal parts; None for the file itself, an unknown part or
    an absolute one."""
    if place is None or place == _FILE:
        return None
    texts: list[str] = []
    for part in parts:
        if part is None or part.startswith("/"):
            return None
        texts.append(part)
    return posixpath.normpath(posixpath.join(place, *texts))


def _tail_joined(place: str | None, tail: str | None) -> str | None:
    """``place + "/lib"``: a tail that starts a new part (a tail glued to the last
    part's name names another folder, not read)."""
    if tail is None or not tail.startswith("/"):
        return None
    return _joined(place, [tail.lstrip("/")])
