"""What a module says about reaching code by name, read from its ``ast`` for the module
summary (``summary["reach"]``; ``ddplint.code.project.reach`` joins them over the
project): the strings that may name a module or a function (a dotted string anywhere:
``"pkg.models.Net"``, ``"pkg.mod:main"``, a path ``"tools/train.py"``; a plain word
where Python looks a name up by it: ``getattr(m, "f")``, ``__all__``), the calls that
load code by a name the module computes (``importlib.import_module(f"models.{x}")``:
the constant head of the name, and the attribute read on what it loads), the
receivers of a ``getattr`` whose name is computed, whether the module looks its own
names up (``globals()[...]``, ``eval``, ``exec``), its ``from m import *`` and the
decorators of its top-level definitions (a decorator may register what it decorates)."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from typing import Any

from ddplint.analysis.children import walk
from ddplint.analysis.names import dotted_name as dotted

#: A string that may name code: dotted words, a ``module:attribute`` entry point, a path.
_NAMING = re.compile(r"[A-Za-z_][\w.:/-]*\w")
#: Longest string read as a name (longer ones are prose or data).
_LONGEST = 200
#: Builtins that look a name up by the string they are given (their second argument).
_ATTRIBUTE_LOOKUPS = frozenset({"getattr", "hasattr", "setattr", "delattr"})
#: Builtins by which a module reads or runs its own names by string.
_OWN_LOOKUPS = frozenset({"globals", "locals", "vars", "eval", "exec"})
#: Calls that, given nothing, expose every name of the calling module (``fire.Fire()``).
_OWN_EXPOSERS = frozenset({"Fire"})
#: The last part of the names of calls that load code by a name (a module, a
#: ``module.attribute``): ``importlib.import_module``, ``__import__``, Hydra's
#: ``instantiate`` / ``get_class`` / ``get_method``, ``pydoc.locate``, ``runpy``'s,
#: entry points, Lightning's and jsonargparse's CLIs (``class_path:`` in a config).
LOADERS = frozenset(
    {
        "import_module",
        "__import__",
        "instantiate",
        "get_class",
        "get_method",
        "get_object",
        "locate",
        "run_module",
        "run_path",
        "spec_from_file_location",
        "load_entry_point",
        "iter_entry_points",
        "entry_points",
        "LightningCLI",
        "CLI",
    }
)


def reach_names(statements: Sequence[ast.stmt]) -> dict[str, Any]:
    """The piece's part of ``summary["reach"]`` (empty parts left out): ``strings``,
    ``loads`` (``[constant head, attribute read or ""]`` per load by a computed name),
    ``loaded`` (the constant names loads are given),
    ``lookups`` (receivers of a computed ``getattr``, "" when not a dotted name),
    ``own_lookup``, ``star`` (modules imported with ``*``), ``imported`` (every dotted name
    an import reads, at any depth: the summary's imports keep one per local name) and
    ``decorated``
    (top-level name -> its decorators, dotted, "" when not a dotted name); ``version``:
    it assigns ``__version__`` (a distributed package's mark); ``top_calls``: what
    its top-level statements call (``run()`` of a script that imports ``run``).
    ``loads`` and ``star`` are in ``ast.walk`` order."""
    reader = ReachReader()
    for node in walk(ast.Module(body=list(statements), type_ignores=[]), leaves=False):
        if type(node) in READ_KINDS:
            reader.read(node)
    return reader.part(statements)


#: The node types ``ReachReader.read`` reads; the others tell it nothing.
READ_KINDS = frozenset(
    {ast.Attribute, ast.Constant, ast.ImportFrom, ast.Import, ast.Assign, ast.Call}
)


class ReachReader:
    """``reach_names`` read one node at a time, for a walk that reads the piece for
    more than this: give it every node of ``READ_KINDS`` under the statements, each
    after its parent (a dotted name's inner parts may be left out: they tell nothing),
    then ask ``part``. Where the walk is not ``ast.walk``'s order, ``ordered`` says
    whether the part is the same anyway."""

    def __init__(self) -> None:
        self.strings: set[str] = set()
        self.loads: list[list[str]] = []
        self.lookups: set[str] = set()
        self.own_lookup = False
        self.star: list[str] = []
        self.imported: set[str] = set()
        self.loaded: set[str] = set()
        self.read_on: dict[int, str] = {}  # a call's id -> the attribute read on its result

    def read(self, node: ast.AST) -> None:
        """Read one node (of ``READ_KINDS``)."""
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Call):
            self.read_on[id(node.value)] = node.attr
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if "." in node.value or "/" in node.value or ":" in node.value:
                _add_string(node.value, self.strings)
        elif isinstance(node, ast.ImportFrom):
            source = "." * node.level + (node.module or "")
            separator = "" if source.endswith(".") or not source else "."
            for alias in node.names:
                if alias.name == "*":
                    self.star.append(source)
                else:
                    self.imported.add(f"{source}{separator}{alias.name}")
        elif isinstance(node, ast.Import):
            self.imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            self.strings.update(_plain_strings(node.value))
        elif isinstance(node, ast.Call):
            self._read_call(node)

    def _read_call(self, node: ast.Call) -> None:
        function = dotted(node.func) or ""
        called = function.rpartition(".")[2]
        if function in _OWN_LOOKUPS or (
            called in _OWN_EXPOSERS and not node.args and not node.keywords
        ):
            self.own_lookup = True
        elif function in _ATTRIBUTE_LOOKUPS and len(node.args) >= 2:
            name = node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                self.strings.add(name.value)
            else:
                self.lookups.add(dotted(node.args[0]) or "")
        elif called in LOADERS:
            given = _given_name(node)
            if isinstance(given, ast.Constant) and isinstance(given.value, str):
                self.loaded.add(given.value)
            else:
                self.loads.append(_computed_load(given, self.read_on.get(id(node), "")))

    def ordered(self) -> bool:
        """Whether the part is the same in any order of the walk: its lists kept in the
        walk's order (``loads``, ``star``) hold one item at most."""
        return len(self.loads) < 2 and len(self.star) < 2

    def part(self, statements: Sequence[ast.stmt]) -> dict[str, Any]:
        """``reach_names(statements)``, the nodes read."""
        decorated = {
            statement.name: [dotted(_decorator(d)) or "" for d in statement.decorator_list]
            for statement in statements
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and statement.decorator_list
        }
        version = any(
            isinstance(statement, (ast.Assign, ast.AnnAssign))
            and any(
                isinstance(target, ast.Name) and target.id == "__version__"
                for target in (
                    statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                )
            )
            for statement in statements
        )
        top_calls = [
            target
            for statement in statements
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)
            if (target := dotted(statement.value.func)) is not None
        ]
        part: dict[str, Any] = {
            "version": version,
            "top_calls": top_calls,
            "strings": sorted(self.strings),
            "loads": self.loads,
            "loaded": sorted(self.loaded),
            "lookups": sorted(self.lookups),
            "own_lookup": self.own_lookup,
            "star": self.star,
            "imported": sorted(self.imported),
            "decorated": decorated,
        }
        return {key: value for key, value in part.items() if value}


def _add_string(text: str, strings: set[str]) -> None:
    if len(text) <= _LONGEST and _NAMING.fullmatch(text):
        strings.add(text)


def _plain_strings(value: ast.expr) -> list[str]:
    if isinstance(value, (ast.List, ast.Tuple)):
        return [
            item.value
            for item in value.elts
            if isinstance(item, ast.Constant) and isinstance(item.value, str)
        ]
    return []


def _decorator(node: ast.expr) -> ast.expr:
    return node.func if isinstance(node, ast.Call) else node


def _given_name(call: ast.Call) -> ast.expr | None:
    """The name a load is given: its first argument, else its first keyword."""
    return call.args[0] if call.args else (call.keywords[0].value if call.keywords else None)


def _computed_load(given: ast.expr | None, attribute: str) -> list[str]:
    """``[head, attribute]`` for a load by a computed name: the constant head of the
    name, in every spelling of a string built around a value (``f"models.{x}"``,
    ``"models." + x``, ``"models.{}".format(x)``, ``"models.%s" % x``), "" when none;
    ``attribute``: the one read on the call's result, "" when the result is used
    otherwise."""
    return [_constant_head(given), attribute]


def _constant_head(given: ast.expr | None) -> str:
    """The constant text a computed string begins with, up to its first hole."""
    template: ast.expr | None = None
    if isinstance(given, ast.JoinedStr) and given.values:
        template = given.values[0]
    elif isinstance(given, ast.BinOp) and isinstance(given.op, (ast.Add, ast.Mod)):
        template = given.left
    elif (
        isinstance(given, ast.Call)
        and isinstance(given.func, ast.Attribute)
        and given.func.attr == "format"
    ):
        template = given.func.value
    if not (isinstance(template, ast.Constant) and isinstance(template.value, str)):
        return ""
    text = template.value
    if isinstance(given, ast.BinOp) and isinstance(given.op, ast.Mod):
        text = text.partition("%")[0]
    elif isinstance(given, ast.Call):
        text = text.partition("{")[0]
    return text
