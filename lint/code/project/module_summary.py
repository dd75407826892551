"""A module's summary, put together from its top-level statements.

The summary (``ddplint.code.project.summaries`` says what each part means) is built one
*piece* at a time (a top-level statement and the lines after it, as
``ddplint.code.syntax.pieces.split`` cuts a file) and the parts are joined
in file order. A language server re-summarises the file it edits on every change: with
``enable``, each piece's part is kept by its text (and, for the parts that resolve
names, by the module's imports), so an edit costs the pieces it touched; a part reused
where its piece now starts on another line has its line numbers moved with it.
"""

from __future__ import annotations

import ast
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ddplint.analysis.api import BACKWARD_METHODS, DEVICE_CHOICES
from ddplint.analysis.children import child_nodes
from ddplint.analysis.names import dotted_name as dotted
from ddplint.analysis.names import import_bindings, joined_imports, module_aliases
from ddplint.code.project.path_roots import inserted_folders
from ddplint.code.project.reach_names import READ_KINDS, ReachReader, reach_names
from ddplint.code.project.summaries import (
    FUNCTION_TYPES,
    Summary,
    by_kind,
    class_summary,
    function_summary,
    name_arguments,
    own_nodes,
    qualify,
    rank_arguments,
    rank_bindings,
)
from ddplint.code.syntax.pieces import Piece, split
from ddplint.code.syntax.python_ast import parse_python

#: Pieces whose parts are kept between runs (about 100 files of 2,000 lines).
KEPT_PIECES = 30_000


@dataclass(frozen=True)
class _Names:
    """What a piece binds and reads, whatever the module imports: its import bindings
    (``ast.walk`` depth, local name, dotted name, in walk order), module-level aliases
    (``dist = torch.distributed``: name, dotted value), the calls' instances
    (``trainer = Trainer()``) and the dotted names it reads, scoped (``Class:self.x``)
    or plain (kept where the module knows their head); whether it runs the module as a
    program (``if __name__ == "__main__":``, a loop at the top level), the plain
    names it calls as statements at the top level (``main()``, ``converter.fit()``),
    the top-level names bound to what a plain name's call made (``converter =
    Converter(opt).cuda()``), whether it runs a
    backward pass (``scaler.scale(loss).backward()``, anywhere in it) and what it says
    about reaching code by name (``reach_names``). ``type_test_uses``: the plain names
    it reads only as the class of a type test (``isinstance(model, DDP)``)."""

    bindings: tuple[tuple[int, str, str], ...]
    aliases: tuple[tuple[str, str], ...]
    instances: tuple[tuple[str, str], ...]
    scoped_uses: frozenset[str]
    plain_uses: frozenset[str]
    type_test_uses: frozenset[str]
    runs_as_script: bool
    statement_calls: tuple[str, ...]
    makers: tuple[tuple[str, str], ...]
    calls_backward: bool
    reach: dict[str, Any]


@dataclass(frozen=True)
class _Definitions:
    """What a piece defines and calls, read with the module's imports, its line numbers
    as they were where the piece started on ``line``: functions (and ``Class.method``)
    and classes in definition order, the module-level calls, whether one chooses the
    rank's GPU, and where they pass the rank (``[target, argument position or
    keyword]``: ``main(int(os.environ["LOCAL_RANK"]))`` under the ``__main__`` test);
    for the pieces after it, the names it binds to the rank and to anything else, and
    the plain names its calls pass (``main(local_rank)``)."""

    line: int
    functions: tuple[tuple[str, Summary], ...]
    classes: tuple[tuple[str, Summary], ...]
    calls: tuple[tuple[str, int], ...]
    sets_device: bool
    rank_args: tuple[tuple[str, int | str], ...] = ()
    rank_names: frozenset[str] = frozenset()
    other_names: frozenset[str] = frozenset()
    name_args: tuple[tuple[str, int | str, str], ...] = ()


@dataclass
class _Kept:
    names: _Names
    #: The imports the definitions were read with, and the definitions.
    definitions: tuple[tuple[tuple[str, str], ...], _Definitions] | None = None


def summarize(text: str) -> Summary:
    """The summary of a module's source; raises ``SyntaxError`` (and ``ValueError``,
    ``RecursionError``) on what ``ast`` cannot read."""
    pieces = split(text, parse_python(text))
    memo = _active or _Memo()
    with memo.lock:
        return _summary(pieces, memo)


def _summary(pieces: Sequence[Piece], memo: _Memo) -> Summary:
    """The module's summary from its pieces, reusing and filling the memo."""
    entries = [memo.entry(piece) for piece in pieces]
    imports = _imports([entry.names for entry in entries])
    spelled = memo.same_imports(tuple(imports.items()))
    functions: dict[str, Summary] = {}
    classes: dict[str, Summary] = {}
    instances: dict[str, str] = {}
    calls: list[list[Any]] = []
    sets_device = False
    rank_args: list[list[Any]] = []
    # Top-level names earlier pieces bound to the rank, and to anything else.
    ranked: frozenset[str] = frozenset()
    unranked: frozenset[str] = frozenset()
    for piece, entry in zip(pieces, entries, strict=True):
        definitions = _definitions(piece, entry, imports, spelled)
        delta = piece.line - definitions.line
        for name, summary in definitions.functions:
            functions[name] = _moved(summary, delta)
        classes.update(definitions.classes)
        instances.update(entry.names.instances)
        calls.extend([target, line + delta] for target, line in definitions.calls)
        sets_device = sets_device or definitions.sets_device
        rank_args.extend(_handed_ranks(definitions, ranked, unranked))
        ranked = (ranked - definitions.other_names) | definitions.rank_names
        unranked = (unranked - definitions.rank_names) | definitions.other_names
    known = {*imports, *functions, *classes, *instances}
    uses: set[str] = set()
    type_tests: set[str] = set()
    other_reads: set[str] = set()
    for entry in entries:
        uses.update(entry.names.scoped_uses)
        uses.update(n for n in entry.names.plain_uses if n.split(".", 1)[0] in known)
        type_tests.update(entry.names.type_test_uses)
        other_reads.update(entry.names.plain_uses - entry.names.type_test_uses)
    type_tests = {name for name in type_tests - other_reads if name in uses}
    units = _units(pieces, entries, known, imports, type_tests)
    # A program: the ``__main__`` test, a loop, or a call of its own function at the top
    # (or of a method of an object its own class or function made there).
    makers = {name: maker for entry in entries for name, maker in entry.names.makers}
    own = {*functions, *classes}
    program = any(
        entry.names.runs_as_script
        or any(
            n in functions or makers.get(n.split(".", 1)[0]) in own
            for n in entry.names.statement_calls
        )
        for entry in entries
    )
    # What else a top-level statement calls of an imported name (``loop.f()``, or
    # ``trainer.train()`` of ``trainer = Trainer(...)``): the project's linking decides
    # whether the name is the project's own, and the module then a program.
    script_calls = (
        set()
        if program
        else {
            _called_import(n, makers, imports)
            for entry in entries
            for n in entry.names.statement_calls
        }
        - {None}
    )
    backward = any(entry.names.calls_backward for entry in entries)
    reach = _joined_reach([entry.names.reach for entry in entries])
    roots: list[str] = []
    if any(bound == "sys" or bound.startswith("sys.") for bound in imports.values()):
        roots = inserted_folders([s for piece in pieces for s in piece.statements], imports)
    return {
        "imports": imports,
        "functions": functions,
        "classes": classes,
        "instances": instances,
        "top": {
            "calls": calls,
            "sets_device": sets_device,
            "program": program,
            **({"script_calls": sorted(script_calls)} if script_calls else {}),
            "backward": backward,
            **({"rank_args": rank_args} if rank_args else {}),
        },
        "uses": sorted(uses),
        **({"type_tests": sorted(type_tests)} if type_tests else {}),
        **({"units": units} if units else {}),
        **({"reach": reach} if reach else {}),
        **({"path_roots": roots} if roots else {}),
    }


def _units(
    pieces: Sequence[Piece],
    entries: Sequence[_Kept],
    known: set[str],
    imports: dict[str, str],
    tested: set[str],
) -> dict[str, list[list[Any]]]:
    """What each top-level function and class reads, and what the rest of the module's
    top level reads (under ``""``): ``[own, qualified]``, the module's own top-level
    names it reads (``main``, ``Trainer``) and the dotted names of what it imports
    (through the module's imports, ``torch.distributed.init_process_group``, and the
    imports inside it, each whole), and its loads by a computed name (``[constant head,
    attribute read or ""]``, as ``reach_names`` reads them) and the modules it looks
    names up on by a computed name (``getattr(models, name)``: ``"models"``; ``""``
    for its own, ``globals()[name]``). ``known``: the names the module binds at its top
    level or imports; ``tested``: those it reads only as the class of a type test (an
    ``isinstance(model, DDP)`` runs nothing), left out. Units with nothing to say are
    left out too."""
    definitions = (*FUNCTION_TYPES, ast.ClassDef)
    own_names = known - imports.keys()
    found: dict[str, tuple[set[str], set[str], set[tuple[str, str]], set[str]]] = {}
    for piece, entry in zip(pieces, entries, strict=True):
        names = entry.names
        defined = [s.name for s in piece.statements if isinstance(s, definitions)]
        keys = defined if defined and len(defined) == len(piece.statements) else [""]
        own: set[str] = set()
        qualified = {name for depth, local, name in names.bindings if depth > 1}
        qualified -= {imports[local] for local in tested if local in imports}
        for name in names.plain_uses - tested:
            head = name.partition(".")[0]
            if head in own_names:
                own.add(head)
            elif head in imports:
                qualified.add(qualify(name, imports) or name)
        loads = {(head, attribute) for head, attribute in names.reach.get("loads", ())}
        looked = {qualify(r, imports) or "" for r in names.reach.get("lookups", ()) if r}
        looked = {receiver for receiver in looked if receiver}
        if names.reach.get("own_lookup"):
            looked.add("")
        for key in keys:
            unit = found.setdefault(key, (set(), set(), set(), set()))
            unit[0].update(own - {key})
            unit[1].update(qualified)
            unit[2].update(loads)
            unit[3].update(looked)
    return {
        key: [sorted(own), sorted(qualified), [list(x) for x in sorted(loads)], sorted(looked)]
        for key, (own, qualified, loads, looked) in found.items()
        if own or qualified or loads or looked
    }


def _joined_reach(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The pieces' ``reach_names`` parts as one (lists joined in file order)."""
    joined: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            if isinstance(value, bool):
                joined[key] = True
            elif isinstance(value, dict):
                joined.setdefault(key, {}).update(value)
            else:
                joined.setdefault(key, []).extend(value)
    for key in ("strings", "lookups", "imported", "loaded", "top_calls"):
        if key in joined:
            joined[key] = sorted(set(joined[key]))
    return joined


def _handed_ranks(
    definitions: _Definitions, ranked: frozenset[str], unranked: frozenset[str]
) -> Iterator[list[Any]]:
    """Where a piece's calls pass the rank: as the piece reads it, or a name an earlier
    piece bound to it (not one an earlier piece bound to anything else, whatever its
    spelling), unless the piece binds the name itself."""
    own = definitions.rank_names | definitions.other_names
    plain = {(target, at): name for target, at, name in definitions.name_args}
    for target, at in definitions.rank_args:
        name = plain.get((target, at))
        if name is None or name in own or name not in unranked:
            yield [target, at]
    for target, at, name in definitions.name_args:
        if name in ranked and name not in own and (target, at) not in definitions.rank_args:
            yield [target, at]


def _definitions(
    piece: Piece, entry: _Kept, imports: dict[str, str], spelled: tuple[tuple[str, str], ...]
) -> _Definitions:
    """The piece's definitions under these imports: kept ones when read with the same."""
    if entry.definitions is not None and entry.definitions[0] is spelled:
        return entry.definitions[1]
    definitions = _read_definitions(piece, imports)
    entry.definitions = (spelled, definitions)
    return definitions


def _imports(parts: list[_Names]) -> dict[str, str]:
    """Local name -> dotted name it stands for, over the module's parts."""
    return joined_imports(
        [binding for part in parts for binding in part.bindings],
        [alias for part in parts for alias in part.aliases],
    )


def _names(statements: Sequence[ast.stmt]) -> _Names:
    reader = ReachReader()
    scoped, plain, typed, backward = _uses(statements, reader)
    return _Names(
        tuple(import_bindings(statements)),
        tuple(module_aliases(statements)),
        tuple(_instances(statements)),
        scoped,
        plain,
        typed,
        any(_runs_as_script(statement) for statement in statements),
        tuple(_statement_calls(statements)),
        tuple(_makers(statements)),
        backward,
        reader.part(statements) if reader.ordered() else reach_names(statements),
    )


def _statement_calls(statements: Sequence[ast.stmt]) -> Iterator[str]:
    """What top-level statements call by name: ``main()``, ``converter.fit()``; in a
    chain, the call made first (``trainer.Trainer`` of ``trainer.Trainer(cfg).fit()``)."""
    for statement in statements:
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            func = statement.value.func
            while isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
                func = func.value.func
            if isinstance(func, ast.Name):
                yield func.id
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                yield f"{func.value.id}.{func.attr}"


def _called_import(called: str, makers: dict[str, str], imports: dict[str, str]) -> str | None:
    """The imported name a top-level statement call runs (``loop.f`` of ``loop.f()``;
    ``Trainer`` of ``trainer.train()`` after ``trainer = Trainer(...)``), or None."""
    head = called.split(".", 1)[0]
    if head in imports:
        return called
    maker = makers.get(head)
    return maker if maker in imports else None


def _makers(statements: Sequence[ast.stmt]) -> Iterator[tuple[str, str]]:
    """Top-level names bound to what a plain name's call made: ``("converter",
    "Converter")`` for ``converter = Converter(opt).cuda()``."""
    for statement in statements:
        if isinstance(statement, ast.Assign):
            maker = _innermost_maker(statement.value)
            for target in statement.targets:
                if isinstance(target, ast.Name) and maker is not None:
                    yield target.id, maker


def _innermost_maker(value: ast.expr) -> str | None:
    """``Converter`` for ``Converter(opt)`` and ``Converter(opt).cuda()``: the plain
    name called first in a chain of calls."""
    while isinstance(value, ast.Call):
        func = value.func
        if isinstance(func, ast.Name):
            return func.id
        if not isinstance(func, ast.Attribute):
            return None
        value = func.value
    return None


#: The statements whose blocks run at a module's top level when the statement does
#: (``try`` / ``except*`` from Python 3.11).
_TOP_BLOCKS = (ast.If, ast.With, ast.AsyncWith, ast.Try, getattr(ast, "TryStar", ast.Try))


def _inner(statement: ast.stmt) -> list[ast.stmt]:
    """The statements of a top-level block statement's blocks (handlers' too)."""
    inner = [*getattr(statement, "body", ()), *getattr(statement, "orelse", ())]
    inner += getattr(statement, "finalbody", ())
    return inner + [s for handler in getattr(statement, "handlers", ()) for s in handler.body]


def _runs_as_script(statement: ast.stmt) -> bool:
    """``if __name__ == "__main__":`` or a loop at a module's top level, inside any
    ``if``, ``with`` or ``try`` there too (``if args.train: for epoch in ...``): code
    that runs when the file is run as a program."""
    if isinstance(statement, (ast.For, ast.AsyncFor, ast.While)):
        return True
    if isinstance(statement, _TOP_BLOCKS) and any(map(_runs_as_script, _inner(statement))):
        return True
    if not isinstance(statement, ast.If) or not isinstance(statement.test, ast.Compare):
        return False
    sides = [statement.test.left, *statement.test.comparators]
    return any(isinstance(side, ast.Name) and side.id == "__name__" for side in sides) and any(
        isinstance(side, ast.Constant) and side.value == "__main__" for side in sides
    )


def _instances(statements: Sequence[ast.stmt]) -> Iterator[tuple[str, str]]:
    for statement in statements:
        if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call):
            made = dotted(statement.value.func)
            if made is None:
                continue
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    yield target.id, made


def _uses(
    statements: Sequence[ast.stmt], reader: ReachReader
) -> tuple[frozenset[str], frozenset[str], frozenset[str], bool]:
    """Every dotted name the statements read (each prefix of an attribute chain):
    ``Class:self.x`` inside a class's methods, and the rest; the plain ones read only as
    the class of a type test (``type_test_classes``); and whether they call a backward
    pass. One walk per class body; a chain that is a dotted name is read whole
    (its prefixes are its only children). The same walk gives ``reader`` its nodes
    (each after its parent; a dotted name's inner parts, which tell it nothing, not)."""
    scoped: set[str] = set()
    plain: set[str] = set()
    tested: set[str] = set()
    read: set[str] = set()
    classes: set[int] = set()
    backward = False
    scopes: list[tuple[list[ast.AST], str | None]] = [(list(statements), None)]
    while scopes:
        stack, owner = scopes.pop()
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind in READ_KINDS:
                reader.read(node)
            if isinstance(node, ast.Attribute) and node.attr in BACKWARD_METHODS:
                backward = True
            if kind is ast.Call or kind is ast.Compare:
                classes.update(map(id, type_test_classes(node)))
            if kind is ast.Name:
                name = node.id  # type: ignore[attr-defined]  # ``_add_prefixes``' plain name
                plain.add(name)
                (tested if id(node) in classes else read).add(name)
                continue
            if kind is ast.Attribute:
                name = dotted(node)
                if name is not None:
                    _add_prefixes(name, owner, scoped, plain)
                    into = tested if id(node) in classes else read
                    _add_prefixes(name, None, into, into)
                    continue
            elif isinstance(node, ast.ClassDef):
                scopes.append((child_nodes(node, leaves=False), node.name))
                continue
            stack.extend(child_nodes(node, leaves=False))
    return frozenset(scoped), frozenset(plain), frozenset(tested - read), backward


def type_test_classes(node: ast.AST) -> list[ast.expr]:
    """The classes a type test compares with: ``DDP`` of ``isinstance(model, DDP)``,
    ``issubclass(cls, (DDP, DP))``, ``type(model) is DDP``; none for another node."""
    if isinstance(node, ast.Call):
        func = node.func
        if not (isinstance(func, ast.Name) and func.id in ("isinstance", "issubclass")):
            return []
        if len(node.args) != 2:
            return []
        tested = node.args[1]
    elif isinstance(node, ast.Compare):
        left = node.left
        if not (
            isinstance(left, ast.Call)
            and isinstance(left.func, ast.Name)
            and left.func.id == "type"
            and len(node.ops) == 1
            and isinstance(node.ops[0], (ast.Is, ast.IsNot, ast.Eq, ast.NotEq))
        ):
            return []
        tested = node.comparators[0]
    else:
        return []
    return list(tested.elts) if isinstance(tested, ast.Tuple) else [tested]


def _add_prefixes(name: str, owner: str | None, scoped: set[str], plain: set[str]) -> None:
    """``a``, ``a.b`` and ``a.b.c`` for ``a.b.c``: ``Class:self.x`` where the head is
    ``self`` or ``cls`` inside a class, plain otherwise."""
    inside = owner is not None and name.partition(".")[0] in ("self", "cls")
    while "." in name:
        if inside:
            scoped.add(f"{owner}:{name}")
        else:
            plain.add(name)
        name = name.rpartition(".")[0]
    plain.add(name)


def _read_definitions(piece: Piece, imports: dict[str, str]) -> _Definitions:
    functions: dict[str, Summary] = {}
    classes: list[tuple[str, Summary]] = []
    for statement in piece.statements:
        if isinstance(statement, FUNCTION_TYPES):
            functions[statement.name] = function_summary(statement, imports, None)
        elif isinstance(statement, ast.ClassDef):
            classes.append((statement.name, class_summary(statement, imports, functions)))
    calls: list[tuple[str, int]] = []
    sets_device = False
    nodes = own_nodes(ast.Module(body=list(piece.statements), type_ignores=[]))
    for node in nodes:
        if isinstance(node, ast.Call) and (target := dotted(node.func)) is not None:
            calls.append((target, node.lineno))
            sets_device = sets_device or qualify(target, imports) in DEVICE_CHOICES
    kinds = by_kind(nodes)
    handed = tuple((target, at) for target, at in rank_arguments(kinds))
    ranks, others = rank_bindings(kinds)
    return _Definitions(
        piece.line,
        tuple(functions.items()),
        tuple(classes),
        tuple(calls),
        sets_device,
        handed,
        ranks,
        others,
        tuple(name_arguments(kinds)),
    )


def _moved(function: Summary, delta: int) -> Summary:
    """A function's summary with its line numbers ``delta`` lines further down."""
    if not delta:
        return function
    return {
        **function,
        "line": function["line"] + delta,
        "collectives": [[*c[:-1], c[-1] + delta] for c in function["collectives"]],
        "calls": [[target, line + delta] for target, line in function["calls"]],
    }


def without_lines(summary: Summary) -> Summary:
    """``summary`` with its line numbers left out (each function's ``line``, its calls'
    and collectives' lines, the module level's calls' lines): two summaries equal so
    differ only where the code stands (lines inserted or removed above it)."""
    functions = {
        name: {
            **function,
            "line": None,
            "collectives": [c[:-1] for c in function["collectives"]],
            "calls": [target for target, _line in function["calls"]],
        }
        for name, function in summary["functions"].items()
    }
    top = summary.get("top", {})
    top = {**top, "calls": [target for target, _line in top.get("calls", ())]}
    return {**summary, "functions": functions, "top": top}


class _Memo:
    """Pieces' parts by text, the least recently used dropped past ``KEPT_PIECES``."""

    def __init__(self) -> None:
        self.kept: OrderedDict[str, _Kept] = OrderedDict()
        self.lock = threading.Lock()
        self._imports: tuple[tuple[str, str], ...] = ()

    def entry(self, piece: Piece) -> _Kept:
        entry = self.kept.get(piece.text)
        if entry is None:
            entry = self.kept[piece.text] = _Kept(_names(piece.statements))
            while len(self.kept) > KEPT_PIECES:
                self.kept.popitem(last=False)
        else:
            self.kept.move_to_end(piece.text)
        return entry

    def same_imports(self, imports: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
        """``imports``, as the object of the last call when equal to it: definitions
        are kept with the imports they were read with, compared by identity."""
        if imports != self._imports:
            self._imports = imports
        return self._imports


_active: _Memo | None = None


def enable() -> None:
    """Keep pieces' parts between calls in this process (the language server)."""
    global _active
    if _active is None:
        _active = _Memo()
