"""The project index: module summaries linked into one picture of the project.

Linking resolves what each summary spells (``utils.save_checkpoint``, ``self.barrier``,
``..comm.is_main_process``) to a project definition: imports between project files
(packages, ``src/`` layouts, relative imports, re-exports through ``__init__``, a
script's sibling modules), class hierarchies across modules, module-level instances
(``distr = Distributed()``). Two fixpoints follow: a function *reaches a collective*
when it issues one on the default (world) group or calls a project function that does
(rank-zero-only functions are not entered: their collectives are reported inside them;
a collective on a named group is left out: whether a caller's rank guard selects that
group's members is not known here); a function *is a rank test*
when it returns one or returns what a rank test returns. What cannot be resolved (a
receiver with no known class, a dynamic call, a name outside the project) stays unknown.

``facts_for(path)`` gives one file the facts about the names it uses (``facts``).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, cast

from ddplint.code.collectives.kinds import kind_of_method
from ddplint.code.project.facts import (
    NO_FACTS,
    Agreement,
    FileFacts,
    NameFacts,
    OwnFunctionFacts,
    ReachedCollective,
    Switch,
)
from ddplint.code.project.group_reach import GroupReach, group_part
from ddplint.code.project.object_kinds import (
    ProjectKinds,
    call_sites,
    parameter_kinds,
    passed_kinds,
)
from ddplint.code.project.programs import (
    FolderSpans,
    ProgramRoles,
    imported_modules,
    imported_names,
    program_part,
    program_roles,
)
from ddplint.code.project.reach import (
    LooseImports,
    imported,
    project_reach,
    reach_part,
    unseen_reach,
)
from ddplint.code.project.reach import Reach as CodeReach
from ddplint.code.project.summaries import Summary
from ddplint.code.project.touched import Touched, asked_by_module

#: Bound on re-export hops and base-class depth: cycles and pathological layouts stop.
MAX_DEPTH = 12
#: At most this many project functions between a call and the collective it reaches:
#: each hop may hide a condition (a file test, a config flag) that decides whether the
#: collective runs, so long chains are left unknown.
MAX_CHAIN = 3
#: Bound on fixpoint rounds (each round only adds facts).
MAX_ROUNDS = 30
#: How many project factories deep a returned instance's class is followed.
MAX_FACTORY_DEPTH = 3
#: The parts of a function's summary its links keep as they are.
_FUNCTION_FLAGS = (
    "collectives",
    "returns_rank",
    "sets_device",
    "zero_only",
    "property",
    "agreement",
)
#: The parts of a module's links kept even when empty.
_ALWAYS = ("functions", "classes")
#: The links of a class without rank attributes or resolved attribute calls.
_NO_CLASS_LINKS: dict[str, Any] = {"rank_attributes": [], "calls": {}, "parameters": {}}

FunctionKey = tuple[str, str]  # (module, "f" or "Class.method")
Symbol = tuple[str, ...]  # ("module", m) | ("function", m, key) | ("class", m, c) |
# ("instance", m, c) | ("attribute", m, c, name)


def _joined_switch(switches: list[list[Any] | None]) -> Switch | None:
    """The switch of a function whose every collective is switched: where each is a
    parameter compared with literals, the same parameter, the values with which any of
    them runs (``not in [-1, 0]`` and ``== 0``: any value but -1); opt-in parameters
    alone, the first's; a mix: None (it may run)."""
    if all(s is not None and len(s) == 3 for s in switches):
        name, position, off = switches[0] or ("", 0, False)
        return Switch(name, position, off)  # opt-in parameters: the first's
    if any(s is None or len(s) < 6 for s in switches):
        return None  # conditions mixed with other tests: it may run
    if len({(s[0], s[1]) for s in switches if s is not None}) != 1:
        return None
    first = switches[0]
    assert first is not None
    member, values = bool(first[3]), set(map(_hashable, first[4]))
    for other in switches[1:]:
        assert other is not None
        more = set(map(_hashable, other[4]))
        if member and other[3]:
            values |= more  # runs in either set
        elif member:
            member, values = False, more - values  # runs outside ``more`` or in ``values``
        elif other[3]:
            values -= more
        else:
            values &= more
    return Switch(first[0], first[1], False, tuple(values), member, tuple(first[5]))


def _hashable(value: Any) -> Any:
    return value if isinstance(value, (int, float, str, bool, type(None))) else repr(value)


@dataclass(frozen=True)
class Reach:
    """A collective a function reaches: its kind, the functions in between (outermost
    first, the one holding the collective last) and where the collective stands."""

    #: api, op, family, creates_group, saves_checkpoint (``CollectiveKind``'s fields).
    kind: tuple[str, str, str, bool, bool]
    chain: tuple[str, ...]
    where: str
    #: The parameter the caller must switch on when it is off by default
    #: (``barrier_after=True``).
    switch: Switch | None = None


def module_name(relative: str, src_is_package: bool = False) -> tuple[str, bool] | None:
    """``(pkg.utils, False)`` for ``src/pkg/utils.py`` (``src.pkg.utils`` when
    ``src/__init__.py`` makes ``src`` a package the project imports by that name),
    ``(pkg, True)`` for ``pkg/__init__.py``; None for a file that is not Python."""
    if not relative.endswith((".py", ".pyi")):
        return None
    parts = relative.rsplit(".", 1)[0].split("/")
    if len(parts) > 1 and parts[0] == "src" and not src_is_package:
        parts = parts[1:]
    package = parts[-1] == "__init__"
    if package:
        parts = parts[:-1]
    if not parts:
        return None
    return ".".join(parts), package


def module_paths(paths: Iterable[str]) -> dict[str, str]:
    """Module name -> path for a project's Python files, in path order; ``x.py`` next to
    ``x/__init__.py`` leaves the name to the package, as Python does."""
    return _modules(paths)[0]


def inserted_by_path(summaries: Mapping[str, Summary]) -> dict[str, list[str]]:
    """By path, the folders each module puts on ``sys.path`` (those that put any)."""
    found = {path: summary.get("path_roots") for path, summary in summaries.items()}
    return {path: roots for path, roots in found.items() if roots}


def path_root_prefixes(inserted: Mapping[str, list[str]], src_is_package: bool) -> list[str]:
    """The module-name prefixes of the folders in ``inserted`` (relative to each module's
    own) that lie inside the project below its top (the top itself, or a ``src`` folder
    read as the top, adds nothing: names are resolved from there already), sorted."""
    prefixes: set[str] = set()
    for path, folders in inserted.items():
        here = posixpath.dirname(path)
        for folder in folders:
            target = posixpath.normpath(posixpath.join(here, folder))
            if target == ".." or target.startswith("../") or target == ".":
                continue
            named = module_name(f"{target}/__init__.py", src_is_package)
            if named is not None:
                prefixes.add(named[0])
    return sorted(prefixes)


def _distinct(keys: Iterable[FunctionKey | None]) -> list[list[str]]:
    """The functions among ``keys``, each once, in order (the fixpoints read no more)."""
    return [list(key) for key in dict.fromkeys(keys) if key is not None]


def _is_package(path: str) -> bool:
    named = module_name(path)
    return named is not None and named[1]


def _modules(paths: Iterable[str]) -> tuple[dict[str, str], dict[str, str]]:
    """``module_paths``, and the module each path is read as (a module shadowed by a
    package read earlier is not read)."""
    by_name: dict[str, str] = {}
    by_path: dict[str, str] = {}
    ordered = sorted(paths)
    src_is_package = "src/__init__.py" in ordered
    for path in ordered:
        named = module_name(path, src_is_package)
        if named is not None and (named[0] not in by_name or named[1]):
            by_name[named[0]] = path
            by_path[path] = named[0]
    return by_name, by_path


#: A name as written, the module it is written in, and the class whose method it is in.
CallName = tuple[str, str, str | None]


def resolution_inputs(summary: Summary) -> tuple[object, ...]:
    """The parts of a summary that name resolution reads (``ProjectIndex.spelled``):
    imports, the names of functions, classes, instances; not what functions do or the
    lines they do it on."""
    return (
        summary["imports"],
        list(summary["functions"]),
        summary["classes"],
        summary["instances"],
    )


#: A module's names resolved (``ProjectIndex.link``): what the fixpoints and the facts
#: read of it, as JSON data, so that a module nothing changed for is not linked again.
Links = dict[str, Any]
#: A module's links kept from an earlier link, with the module names linking it asked
#: about, the modules whose other parts it read and the names it asked of each
#: (``touched.Touched``).
KeptLinks = tuple[Links, frozenset[str], frozenset[str], Mapping[str, str]]


class _ModuleSummaries(Mapping[str, Summary]):
    """Summaries by module name, read from the caller's mapping (by path) when first
    asked (an incremental link reads only the modules it links again and what their
    names lead to); every name asked is told to ``touched``, which hands out a view
    that notes the names asked of the summary (``Touched.view``)."""

    def __init__(self, by_path: Mapping[str, Summary], paths: dict[str, str], touched: Touched):
        self._by_path = by_path
        self._paths = paths
        self._touched = touched
        self._read: dict[str, Summary] = {}

    def __getitem__(self, name: str) -> Summary:
        self._touched.add(name)
        summary = self._read.get(name)
        if summary is None:
            summary = self._read[name] = self._by_path[self._paths[name]]
        return cast(Summary, self._touched.view(name, summary))  # read as the summary is

    def __contains__(self, name: object) -> bool:
        found = name in self._paths
        if found and isinstance(name, str):
            self._touched.add(name)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


class _Packages:
    """The module names that are packages; every name asked is told to ``touched``."""

    def __init__(self, names: set[str], touched: Touched) -> None:
        self._names = names
        self._touched = touched

    def __contains__(self, name: str) -> bool:
        self._touched.add(name)
        return name in self._names


class ProjectIndex:
    """Summaries of every Python file of a project, linked; see the module docstring."""

    def __init__(
        self,
        summaries: Mapping[str, Summary],
        resolved: dict[CallName, FunctionKey | None] | None = None,
        kept: Mapping[str, KeptLinks] | None = None,
        inserted: Mapping[str, list[str]] | None = None,
    ) -> None:
        """``summaries``: relative posix path -> summary (read only where a module is
        linked or a name leads). ``resolved``: what ``function_key`` answered for an
        index whose summaries had the same ``resolution_inputs`` (kept and added to).
        ``kept``: by module name, links still valid, the names their linking asked
        about and the modules it read (``ddplint.code.project.incremental`` decides
        which). ``inserted``: by path, the folders each module puts on ``sys.path``
        (its summary's ``path_roots``), read from every summary when not given."""
        self.paths, self.module_of_path = _modules(summaries)
        packages = {name for name, path in self.paths.items() if _is_package(path)}
        if inserted is None:
            inserted = inserted_by_path(summaries)
        #: By path, the folders the module puts on ``sys.path`` (``path_roots``).
        self.inserted = dict(inserted)
        #: The module-name prefixes of those folders inside the project (``lib`` for
        #: ``src/lib``), under which an import no other way resolves is looked for.
        src_is_package = "src/__init__.py" in summaries
        self._roots = path_root_prefixes(self.inserted, src_is_package)
        #: ``function_key`` answers: linking asks the same names again and again.
        self.resolved: dict[CallName, FunctionKey | None] = resolved if resolved is not None else {}
        self._touched = Touched()
        self.summaries = _ModuleSummaries(summaries, self.paths, self._touched)
        self.packages = _Packages(packages, self._touched)
        #: The last part of every package's name (``src`` of ``proj.src``): a dotted import
        #: whose first part is none of them is under no folder of the project.
        self._package_leaves = frozenset(name.rpartition(".")[2] for name in packages)
        #: Per module, its links, the module names linking it asked about, the modules
        #: whose parts beyond their names it read, and the names it asked of each
        #: (``touched.Touched``).
        self.links: dict[str, Links] = {}
        self.asked: dict[str, frozenset[str]] = {}
        self.read: dict[str, frozenset[str]] = {}
        self.named: dict[str, Mapping[str, str]] = {}
        #: The modules linked by this index (the others' links were kept).
        self.linked: list[str] = []
        for name in self.paths:
            if kept is not None and name in kept:
                self.links[name], self.asked[name], self.read[name], self.named[name] = kept[name]
            else:
                self._link_recorded(name)
                self.linked.append(name)
        self.reach: dict[FunctionKey, Reach] = {}
        self.rank_tests: set[FunctionKey] = set()
        #: Functions whose result is the same on every rank (``_solve_agreed_results``).
        self.agreed_results: set[FunctionKey] = set()
        self.device_setters: set[FunctionKey] = set()
        self.device_chosen_by_callers: set[FunctionKey] = set()
        self.sharded_parameters: dict[FunctionKey, set[int]] = {}
        self.wrapped_parameters: dict[FunctionKey, set[int]] = {}
        self.rank_parameters: dict[FunctionKey, set[int]] = {}
        self.loader_parameters: dict[FunctionKey, set[int]] = {}
        #: The functions a call of which may make the host wait for the device.
        self.may_wait: set[FunctionKey] = set()
        self._call_methods: dict[tuple[str, str], FunctionKey | None] = {}
        #: What a module imports from a folder that can change it (``_imports_from``).
        self._folder_imports: dict[tuple[str, str, bool], set[str]] = {}
        #: Per function, the project functions it calls (each once, in call order).
        self._calls: dict[FunctionKey, list[FunctionKey]] = {}
        self._solve()

    def moved(self, summaries: Mapping[str, Summary], paths: Iterable[str]) -> None:
        """Take ``summaries``, which differ from this index's only in the line numbers
        of the modules at ``paths`` (lines inserted or removed above their code): those
        modules are linked again and where each reached collective stands is found
        again. Nothing else the index solved reads a line, so it all holds."""
        self.summaries = _ModuleSummaries(summaries, self.paths, self._touched)
        for path in paths:
            self._link_recorded(self.module_of_path[path])
        self.reach = {}
        self._solve_reach()

    def links_unread(self, paths: Iterable[str]) -> dict[str, KeptLinks]:
        """The links (and the modules their linking asked about) of every module that is
        not at one of ``paths`` and whose linking read none of the modules there: an
        index of summaries changed only there, in what functions do, keeps them."""
        changed = {self.module_of_path[path] for path in paths}
        return {
            module: (links, self.asked[module], self.read[module], self.named[module])
            for module, links in self.links.items()
            if module not in changed and not self.asked[module] & changed
        }

    # -- linking -----------------------------------------------------------------

    def resolve_module(self, name: str, importer: str) -> str | None:
        """The project module an import of ``name`` in ``importer`` reads: an absolute
        name (``pkg.utils``), a relative one (``..utils``), a sibling of a script
        (``utils`` or ``pkg.utils`` next to ``tools/train.py``: the script's folder is on
        sys.path), or a package's module under a folder above the importer
        (``_under_an_ancestor``)."""
        if name.startswith("."):
            name = self._absolute(name, importer)
        if name in self.summaries:
            return name
        folder = importer if importer in self.packages else importer.rpartition(".")[0]
        if folder and f"{folder}.{name}" in self.summaries:
            sibling = f"{folder}.{name}"
            if folder not in self.packages:  # a script folder, not a package
                return sibling
        return self._under_an_ancestor(name, folder) or self._under_a_path_root(name)

    def _under_a_path_root(self, name: str) -> str | None:
        """``name`` under a folder a module of the project puts on ``sys.path``
        (``trains.train_factory`` in ``src/lib`` after ``_init_paths`` inserted it)."""
        for prefix in self._roots:
            if f"{prefix}.{name}" in self.summaries:
                return f"{prefix}.{name}"
        return None

    def _under_an_ancestor(self, name: str, folder: str) -> str | None:
        """``name`` (dotted, its first part a package) under the nearest folder above
        the importer that holds that package: the folder one project of several in the
        repository runs from (``src.utils`` from ``proj/src/tasks/train.py`` is
        ``proj/src/utils.py`` when ``proj/src`` is a package)."""
        first, dot, _ = name.partition(".")
        if not dot or first not in self._package_leaves:
            return None  # (a module that comes makes every link stale: nothing to note)
        while folder:
            folder = folder.rpartition(".")[0]
            if not folder:
                return None
            if f"{folder}.{first}" in self.packages and f"{folder}.{name}" in self.summaries:
                return f"{folder}.{name}"
        return None

    def _absolute(self, relative: str, importer: str) -> str:
        level = len(relative) - len(relative.lstrip("."))
        base = importer if importer in self.packages else importer.rpartition(".")[0]
        for _ in range(level - 1):
            base = base.rpartition(".")[0]
        rest = relative[level:]
        return f"{base}.{rest}" if base and rest else base or rest

    def lookup(self, qualified: str, importer: str, depth: int = 0) -> Symbol | None:
        """The project definition a fully qualified (or relative) dotted name names."""
        if depth > MAX_DEPTH:
            return None
        if qualified.startswith("."):
            qualified = self._absolute(qualified, importer)
        parts = qualified.split(".")
        for cut in range(len(parts), 0, -1):
            module = self.resolve_module(".".join(parts[:cut]), importer)
            if module is None:
                continue
            if cut == len(parts) > 1:
                # ``from pkg.tools import train``: the package's own ``train`` (``from
                # .train import train`` in its ``__init__``) hides its submodule.
                package = self.resolve_module(".".join(parts[:-1]), importer)
                if package is not None and self._binds_own(package, parts[-1]):
                    return self._member(("module", package), parts[-1], depth + 1)
            symbol: Symbol | None = ("module", module)
            for attribute in parts[cut:]:
                if symbol is None:
                    return None
                symbol = self._member(symbol, attribute, depth + 1)
            return symbol
        return None

    def _binds_own(self, package: str, attribute: str) -> bool:
        """Whether the package's ``__init__`` binds ``attribute`` to something other
        than its submodule of that name: a function, class or instance it defines, or a
        name it imports from elsewhere (an attribute lookup finds that binding first)."""
        if package not in self.packages:
            return False
        summary = self.summaries[package]
        if any(attribute in summary[part] for part in ("functions", "classes", "instances")):
            return True
        bound = summary["imports"].get(attribute)
        if bound is None:
            return False
        absolute = self._absolute(bound, package) if bound.startswith(".") else bound
        return absolute != f"{package}.{attribute}"

    def spelled(self, name: str, module: str, owner: str | None = None) -> Symbol | None:
        """What ``name``, as written in ``module`` (inside class ``owner``), names."""
        head, _, rest = name.partition(".")
        if head in ("self", "cls"):
            if owner is None or not rest or "." in rest:
                return None
            return self._member(("class", module, owner), rest, 0)
        return self._resolve_at_depth(name, module, 0)

    def function_key(self, name: str, module: str, owner: str | None) -> FunctionKey | None:
        """The project function ``name`` (as written in ``module``) runs, if known."""
        asked = (name, module, owner)
        if asked in self.resolved:
            return self.resolved[asked]
        symbol = self.spelled(name, module, owner)
        key = (symbol[1], symbol[2]) if symbol is not None and symbol[0] == "function" else None
        self.resolved[asked] = key
        return key

    def called_key(self, name: str, module: str, owner: str | None) -> FunctionKey | None:
        """The project function a call of ``name`` runs: the function itself, or the
        ``__init__`` a class's constructor runs (its own or a project base's)."""
        key = self.function_key(name, module, owner)
        if key is not None:
            return key
        symbol = self.spelled(name, module, owner)
        if symbol is None or symbol[0] != "class":
            return None
        for cls_module, cls in self.mro(symbol[1], symbol[2]):
            if "__init__" in self.summaries[cls_module]["classes"][cls]["methods"]:
                return (cls_module, f"{cls}.__init__")
        return None

    def parameter_position(self, callee: FunctionKey, argument: int | str) -> int | None:
        """The position of the parameter an argument fills: its own position, or the
        position of the parameter its keyword names (None for a keyword-only one)."""
        if isinstance(argument, int):
            return argument
        self._touched.add_read(callee[0])
        function = self.summaries[callee[0]]["functions"].get(callee[1], {})
        parameters = function.get("params", [])
        return parameters.index(argument) if argument in parameters else None

    def _member(self, symbol: Symbol, attribute: str, depth: int) -> Symbol | None:
        if depth > MAX_DEPTH:
            return None
        if symbol[0] == "module":
            return self._module_member(symbol[1], attribute, depth)
        if symbol[0] in ("class", "instance"):
            for module, cls in self.mro(symbol[1], symbol[2]):
                summary = self.summaries[module]["classes"][cls]
                if attribute in summary["methods"]:
                    return ("function", module, f"{cls}.{attribute}")
                if (
                    attribute in summary["rank_attributes"]
                    or attribute in summary.get("attribute_calls", {})
                    or attribute in summary.get("first_items", {})
                    or attribute in summary.get("parameter_attributes", {})
                ):
                    return ("attribute", module, cls, attribute)
        return None

    def _module_member(self, module: str, attribute: str, depth: int) -> Symbol | None:
        summary = self.summaries[module]
        if attribute in summary["functions"]:
            return ("function", module, attribute)
        if attribute in summary["classes"]:
            return ("class", module, attribute)
        made = summary["instances"].get(attribute)
        if made is not None:
            cls = self.spelled_class(made, module, depth + 1)
            return ("instance", *cls[1:]) if cls is not None else None
        bound = summary["imports"].get(attribute)
        if bound is not None:
            return self.lookup(bound, module, depth + 1)
        submodule = f"{module}.{attribute}"
        return ("module", submodule) if submodule in self.summaries else None

    def spelled_class(self, name: str, module: str, depth: int = 0) -> Symbol | None:
        """The project class ``name`` (as written in ``module``) names, if any."""
        symbol = self._resolve_at_depth(name, module, depth)
        return symbol if symbol is not None and symbol[0] == "class" else None

    def _resolve_at_depth(self, name: str, module: str, depth: int) -> Symbol | None:
        head, _, rest = name.partition(".")
        bound = self.summaries[module]["imports"].get(head)
        if bound is not None:
            return self.lookup(f"{bound}.{rest}" if rest else bound, module, depth)
        symbol: Symbol | None = ("module", module)
        for attribute in name.split("."):
            if symbol is None:
                return None
            symbol = self._member(symbol, attribute, depth)
        return symbol

    def mro(self, module: str, cls: str) -> list[tuple[str, str]]:
        """The class and its project bases, depth first, left to right, each once."""
        order: list[tuple[str, str]] = []
        stack = [(module, cls, 0)]
        while stack:
            current_module, current, depth = stack.pop()
            if (current_module, current) in order or depth > MAX_DEPTH:
                continue
            summary = self.summaries[current_module]["classes"].get(current)
            if summary is None:
                continue
            order.append((current_module, current))
            bases = summary["bases"]
            found = [self.spelled_class(b, current_module, depth + 1) for b in bases]
            stack.extend((s[1], s[2], depth + 1) for s in reversed(found) if s is not None)
        return order

    # -- links -----------------------------------------------------------------

    def _link_recorded(self, module: str) -> None:
        """Link the module, and record the module names resolving it asked about and
        the modules whose other parts it read."""
        touched = self._touched
        touched.start(module)
        try:
            self.links[module] = self.link(module)
            self.asked[module] = frozenset(touched.names or ())
            self.read[module] = frozenset(touched.read)
            self.named[module] = asked_by_module(
                touched.names or set(), touched.named, touched.whole
            )
        finally:
            touched.stop()

    def _handed_positions(
        self, handed: Iterable[list[Any]], module: str, owner: str | None
    ) -> list[list[Any]]:
        """``[module, function, parameter position]`` for each ``[target, argument
        position or keyword]`` of a summary that names a project function's parameter."""
        return [
            [*callee, position]
            for target, argument in handed
            if (callee := self.called_key(target, module, owner)) is not None
            and (position := self.parameter_position(callee, argument)) is not None
        ]

    def _handed_items(
        self, handed: Iterable[list[Any]], module: str, owner: str | None
    ) -> list[list[Any]]:
        """``[called module, called function, item, module, function, parameter
        position]`` for each ``[called, item, target, argument position or keyword]`` of
        a summary whose calls both name project functions (``item_arguments``)."""
        return [
            [*called_key, item, *callee, position]
            for called, item, target, argument in handed
            if (called_key := self.function_key(called, module, owner)) is not None
            and (callee := self.called_key(target, module, owner)) is not None
            and (position := self.parameter_position(callee, argument)) is not None
        ]

    def link(self, module: str) -> Links:
        """What the fixpoints and the facts read of a module, its names resolved: per
        function (in order) its resolved calls, return calls, forwarded parameters and
        DDP-wrapped arguments, and the flags of its summary (calls without their lines:
        the fixpoints read only which functions are called, in order); the module-level calls;
        per class, its rank attributes and the resolved calls attributes are set to.
        Empty parts, functions and classes are left out."""
        summary = self.summaries[module]
        functions: dict[str, Links] = {}
        for name, function in summary["functions"].items():
            owner = function["owner"]
            key = (module, name)
            linked: Links = {
                "calls": _distinct(
                    self.function_key(target, module, owner) for target, _line in function["calls"]
                ),
                "return_calls": (
                    returned := [
                        list(callee)
                        for called in function["return_calls"]
                        if (callee := self.function_key(called, module, owner)) is not None
                    ]
                ),
                # every ``return`` hands back the result of a project function of these
                # (with the parameters, for the agreement that may follow from it)
                **(
                    {"returns_project_calls": function.get("params", [])}
                    if function.get("returns_calls_only")
                    and len(returned) == len(function["return_calls"])
                    else {}
                ),
                "forwards": [
                    [*callee, argument, own]
                    for target, argument, own in function.get("forwards", ())
                    if (callee := self.function_key(target, module, owner)) not in (None, key)
                ],
                # what a forwarded parameter is called and its literal default, for a
                # condition switch handed on (``_handed_switch``)
                **(
                    {
                        "params": function.get("params", []),
                        "param_defaults": function.get("param_defaults", {}),
                    }
                    if function.get("forwards")
                    else {}
                ),
                "wrapped_args": [
                    [*callee, argument]
                    for target, argument in function.get("wrapped_args", ())
                    if (callee := self.function_key(target, module, owner)) is not None
                ],
                "rank_args": self._handed_positions(function.get("rank_args", ()), module, owner),
                "rank_items": function.get("rank_items", []),
                "rank_item_args": self._handed_items(function.get("item_args", ()), module, owner),
                "loader_args": self._handed_positions(
                    function.get("loader_args", ()), module, owner
                ),
                "shards": list(function.get("shards") or ()),
                "may_wait": bool(function.get("may_wait")),
                "wait_tail": self._wait_tail(function.get("wait_tail", ()), module, owner),
                "wait_parameters": self._wait_parameters(
                    function.get("wait_tail", ()), module, owner
                ),
                **{flag: function[flag] for flag in _FUNCTION_FLAGS},
            }
            kept = {part: value for part, value in linked.items() if value}
            if kept:
                functions[name] = kept
        top = summary.get("top", {})
        top_calls = [
            list(callee)
            for target, _line in top.get("calls", ())
            if (callee := self.function_key(target, module, None)) is not None
        ]
        classes = {}
        for cls, described in summary["classes"].items():
            calls = {
                attribute: [
                    list(callee)
                    for called in called_list
                    if (callee := self.function_key(called, module, cls)) is not None
                ]
                for attribute, called_list in described.get("attribute_calls", {}).items()
            }
            parameters = described.get("parameter_attributes", {})
            if described["rank_attributes"] or any(calls.values()) or parameters:
                classes[cls] = {
                    "rank_attributes": list(described["rank_attributes"]),
                    "calls": calls,
                    "parameters": parameters,
                }
        links: Links = {"functions": functions, "classes": classes}
        if top_calls:
            links["top_calls"] = top_calls
        if top.get("sets_device"):
            links["top_sets_device"] = True
        top_rank_args = self._handed_positions(top.get("rank_args", ()), module, None)
        if top_rank_args:
            links["top_rank_args"] = top_rank_args
        links["program"] = program_part(summary, module, self.resolve_module)
        links["reach"] = reach_part(self, module, self._loose)
        links["group"] = group_part(self, module, self._loose)
        names = imported_names(summary)
        folders = self._folder_spans.folders(names)
        if folders:  # what it imports from them is read again when a program runs there
            links["folders"] = {"names": sorted(names), "folders": folders}
        with self._touched.reading():  # the kinds of what it passes read what functions do
            made = passed_kinds(self, module)
            handed = self.handed_classes_of(module)
        sites = call_sites(self, module)
        links["kinds"] = {
            part: found
            for part, found in (("made", made), ("sites", sites), ("classes", handed))
            if found
        }
        return {part: value for part, value in links.items() if value or part in _ALWAYS}

    @cached_property
    def _folder_spans(self) -> FolderSpans:
        """The folders a program may run from that can change what a module imports."""
        return FolderSpans(self.paths)

    @cached_property
    def _loose(self) -> LooseImports:
        """What an import the index cannot resolve may read (``reach.LooseImports``)."""
        return LooseImports(self, self.paths, self._touched.add)

    # -- fixpoints ---------------------------------------------------------------

    def _function(self, key: FunctionKey) -> Links:
        """The function's links (empty for one that calls, returns and flags nothing)."""
        return self.links[key[0]]["functions"].get(key[1], {})

    def _functions(self) -> Iterator[tuple[FunctionKey, Links]]:
        """Every function's links, in module and then definition order."""
        for module, links in self.links.items():
            for name, function in links["functions"].items():
                yield (module, name), function

    def _solve(self) -> None:
        for key, function in self._functions():
            self._calls[key] = [(module, name) for module, name in function.get("calls", ())]
        self._solve_reach()
        self._solve_rank_tests()
        self._solve_agreed_results()
        self._solve_device_setters()
        self._solve_device_chosen_by_callers()
        self._solve_sharded_parameters()
        self._solve_wrapped_parameters()
        self._solve_rank_parameters()
        self._solve_loader_parameters()
        self._solve_may_wait()

    def _solve_reach(self) -> None:
        for key in self._calls:
            world = [c for c in self._function(key).get("collectives", ()) if not c[5]]
            always = [c for c in world if not c[6]]
            if always or world:
                *kind, _grouped, switch, line = (always or world)[0]
                where = f"{self.paths[key[0]]}:{line}"
                switched = None if always else _joined_switch([c[6] for c in world])
                self.reach[key] = Reach(tuple(kind), (), where, switched)
        forwards = self._parameter_forwards
        for _ in range(MAX_ROUNDS):
            changed = False
            for key, calls in self._calls.items():
                if key in self.reach:
                    continue
                for target in calls:
                    inner = self.reach.get(target)
                    if inner is None or target == key or self._function(target).get("zero_only"):
                        continue
                    if len(inner.chain) + 1 >= MAX_CHAIN:
                        continue
                    switch = None
                    if inner.switch is not None:
                        # Followed where the caller hands on its own parameter as the one
                        # compared with literals; whether another call switches it on
                        # is not followed.
                        switch = self._handed_switch(key, target, inner.switch, forwards)
                        if switch is None:
                            continue
                    chain = (self.label(target), *inner.chain)
                    self.reach[key] = Reach(inner.kind, chain, inner.where, switch)
                    changed = True
                    break
            if not changed:
                return

    def _handed_switch(
        self,
        key: FunctionKey,
        target: FunctionKey,
        switch: Switch,
        forwards: dict[FunctionKey, list[tuple[FunctionKey, int, int]]],
    ) -> Switch | None:
        """The switch on ``key``'s own parameter that ``key`` passes as it is to
        ``target``'s condition switch (``create_dataloader(rank=-1)`` ->
        ``torch_distributed_zero_first(rank)``), with its own literal default."""
        if switch.values is None or switch.position < 0:
            return None
        function = self._function(key)
        names = function.get("params", ())
        for callee, argument, own in forwards.get(key, ()):
            if callee == target and argument == switch.position and own < len(names):
                name = names[own]
                default = tuple(function.get("param_defaults", {}).get(name, ()))
                return replace(switch, parameter=name, position=own, default=default)
        return None

    def _wait_tail(self, tail: Iterable[str], module: str, owner: str | None) -> list[list[str]]:
        """The project functions a function's last work runs (``wait_tail``, as
        spelled): a function, or the ``forward`` / ``__call__`` of a project class whose
        instance a field holds (``self.criterion(out, y)``, the field assigned
        ``Loss(...)``)."""
        found: list[FunctionKey | None] = []
        for target in tail:
            key = self.function_key(target, module, owner)
            if key is not None:
                found.append(key)
                continue
            if owner is None or not target.startswith("self.") or target.count(".") != 1:
                continue
            symbol = self.spelled(target, module, owner)
            if symbol is not None and symbol[0] in ("attribute", "instance"):
                held = self._held_classes(symbol, handed=False)
                found.extend(self._instance_call(cls) for cls in held)
        return _distinct(found)

    def _wait_parameters(self, tail: Iterable[str], module: str, owner: str | None) -> list[Any]:
        """``[module, method, position]`` of the method parameters whose values the
        fields a function's last work calls hold (``self.matcher(out, y)`` with
        ``self.matcher = matcher`` in ``__init__``): the classes callers hand in there
        decide, once every module is linked (``_solve_may_wait``)."""
        found: list[Any] = []
        for target in tail:
            if owner is None or not target.startswith("self.") or target.count(".") != 1:
                continue
            symbol = self.spelled(target, module, owner)
            if symbol is not None and symbol[0] == "attribute":
                found.extend(self._field_parameters(symbol))
        return found

    def _held_classes(self, symbol: Symbol, handed: bool = True) -> list[tuple[str, str]]:
        """The project classes a field (by the calls assigned to it; with ``handed``,
        also by what the project's calls hand the method parameter assigned to it:
        ``self.matcher = matcher`` in ``__init__``, read of the links) or a module-level
        instance may hold."""
        if symbol[0] == "instance":
            return [(symbol[1], symbol[2])]
        module, cls, attribute = symbol[1], symbol[2], symbol[3]
        described = self.summaries[module]["classes"][cls]
        held: list[tuple[str, str]] = []
        for name in described.get("attribute_calls", {}).get(attribute, ()):
            made = self.spelled_class(name, module)
            if made is not None:
                held.append((made[1], made[2]))
        if handed:
            for method, position in described.get("parameter_attributes", {}).get(attribute, ()):
                held.extend(self._handed_classes.get(((module, f"{cls}.{method}"), position), ()))
        return held

    def _field_parameters(self, symbol: Symbol) -> list[list[Any]]:
        """``[module, method, position]`` of each method parameter a field is assigned
        (``self.matcher = matcher`` in ``__init__``): it holds what callers hand in."""
        module, cls, attribute = symbol[1], symbol[2], symbol[3]
        described = self.summaries[module]["classes"][cls]
        return [
            [module, f"{cls}.{method}", position]
            for method, position in described.get("parameter_attributes", {}).get(attribute, ())
        ]

    def _returned_classes(self, key: FunctionKey, depth: int = 0) -> list[tuple[str, str]]:
        """The project classes a factory function may return an instance of: those its
        ``return`` statements construct (``return Matcher(...)``, or a name bound to
        one), also through the project factories it returns the result of."""
        function = self.summaries[key[0]]["functions"].get(key[1], {})
        owner = function.get("owner")
        returned = [
            *function.get("return_calls", ()),
            *(callee for callee, item in function.get("returned_made", ()) if item == -1),
        ]
        held: list[tuple[str, str]] = []
        for name in returned:
            made = self.spelled_class(name, key[0])
            if made is not None:
                held.append((made[1], made[2]))
                continue
            inner = self.function_key(name, key[0], owner)
            if inner is not None and inner != key and depth < MAX_FACTORY_DEPTH:
                held.extend(self._returned_classes(inner, depth + 1))
        return held

    def handed_classes_of(self, module: str) -> list[list[Any]]:
        """``[module, function, position, class module, class]`` for each project class
        whose instance (made by the class or a project factory returning one) a call of
        the module hands a project function's parameter (``SetCriterion(matcher=m)``
        after ``m = HungarianMatcher(...)``)."""
        found: list[list[Any]] = []
        for key, position, owner, allocation in self.handed_allocations(module):
            made = self.spelled_class(allocation, module)
            if made is not None:
                held = [(made[1], made[2])]
            else:
                factory = self.function_key(allocation, module, owner)
                held = [] if factory is None else self._returned_classes(factory)
            found.extend([*key, position, *cls] for cls in _distinct(held))
        return found

    def handed_allocations(self, module: str) -> Iterator[tuple[FunctionKey, int, str | None, str]]:
        """``(function, position, owner, allocation)`` for each project function
        parameter a function of the module hands an allocation in (the summaries'
        ``made_args``: the callee as spelled, in the class ``owner``'s method)."""
        for function in self.summaries[module]["functions"].values():
            owner = function["owner"]
            for target, at, allocation in function.get("made_args", ()):
                key = self.called_key(target, module, owner)
                position = None if key is None else self.parameter_position(key, at)
                if key is not None and position is not None:
                    yield key, position, owner, allocation

    @cached_property
    def _handed_classes(self) -> dict[tuple[FunctionKey, int], list[tuple[str, str]]]:
        """Per project function parameter, the project classes whose instances the
        project's calls hand it (each module's ``handed_classes_of``, kept with its
        links)."""
        found: dict[tuple[FunctionKey, int], list[tuple[str, str]]] = {}
        for links in self.links.values():
            for module, name, position, cls_module, cls in links.get("kinds", {}).get(
                "classes", ()
            ):
                found.setdefault(((module, name), position), []).append((cls_module, cls))
        return found

    def _instance_call(self, held: tuple[str, str]) -> FunctionKey | None:
        """The method a call of an instance of the class runs: the first ``__call__`` or
        ``forward`` along its project bases."""
        for cls_module, current in self.mro(*held):
            methods = self.summaries[cls_module]["classes"][current]["methods"]
            for method in ("__call__", "forward"):
                if method in methods:
                    return (cls_module, f"{current}.{method}")
        return None

    def _solve_may_wait(self) -> None:
        """The functions a call of which may end with the host waiting for the device:
        by their own code, or through a project function or an instance's forward
        their last work runs (to a fixed point)."""
        callees: dict[FunctionKey, list[FunctionKey]] = {}
        for key in self._calls:
            function = self._function(key)
            if function.get("may_wait"):
                self.may_wait.add(key)
            callees[key] = [(m, name) for m, name in function.get("wait_tail", ())]
            for module, method, position in function.get("wait_parameters", ()):
                for held in self._handed_classes.get(((module, method), position), ()):
                    call = self._instance_call(held)
                    if call is not None:
                        callees[key].append(call)
        for _ in range(MAX_ROUNDS):
            found = {
                key
                for key, targets in callees.items()
                if key not in self.may_wait and any(t in self.may_wait for t in targets)
            }
            if not found:
                return
            self.may_wait |= found

    def _instances_may_wait(self, held: tuple[str, str]) -> bool:
        """Whether a call of an instance of the class may make the host wait (asked
        of the facts, after linking: remembered per class)."""
        if held not in self._call_methods:
            self._call_methods[held] = self._instance_call(held)
        method = self._call_methods[held]
        return method is not None and method in self.may_wait

    def _solve_rank_tests(self) -> None:
        for key in self._calls:
            if self._function(key).get("returns_rank"):
                self.rank_tests.add(key)
        returning = [
            (key, [(module, name) for module, name in function["return_calls"]])
            for key, function in self._functions()
            if "return_calls" in function
        ]
        _grow_by_returns(self.rank_tests, returning, any)

    def _solve_agreed_results(self) -> None:
        """Functions whose result every rank holds alike whatever it is handed: an
        agreement fact that lets no parameter reach it (``return value_tensor.item()``
        after a broadcast), or every ``return`` handing back such a function's result
        (``def synchronize_flag(flag): return synchronize_value(flag)``)."""
        for key, function in self._functions():
            agreement = function.get("agreement")
            if agreement is not None and agreement[1] == [] and not function.get("zero_only"):
                self.agreed_results.add(key)
        returning = [
            (key, [(module, name) for module, name in function["return_calls"]])
            for key, function in self._functions()
            if "returns_project_calls" in function and key not in self.agreed_results
        ]
        _grow_by_returns(self.agreed_results, returning, all)

    def _attribute_is_rank_test(self, symbol: Symbol) -> bool:
        """``self.x`` set to a rank test, or to what a project rank test returns."""
        _, module, cls, attribute = symbol
        linked = self.links[module]["classes"].get(cls, _NO_CLASS_LINKS)
        if attribute in linked["rank_attributes"]:
            return True
        for method, position in linked["parameters"].get(attribute, ()):
            if position in self.rank_parameters.get((module, f"{cls}.{method}"), ()):
                return True
        return any(
            (called[0], called[1]) in self.rank_tests
            for called in linked["calls"].get(attribute, ())
        )

    def _solve_device_setters(self) -> None:
        """A function chooses the rank's GPU when it, or a function it calls, does."""
        self.device_setters = {k for k in self._calls if self._function(k).get("sets_device")}
        for _ in range(MAX_ROUNDS):
            found = {
                key
                for key, calls in self._calls.items()
                if key not in self.device_setters
                and any(target in self.device_setters for target in calls)
            }
            if not found:
                return
            self.device_setters |= found

    def _solve_device_chosen_by_callers(self) -> None:
        """Functions that choose no GPU and issue no collective themselves, called from
        the project only by code that chooses the GPU (``setup()`` creates the group,
        its caller calls ``torch.cuda.set_device`` next): the caller sets the device up."""
        choosers: dict[FunctionKey, bool] = {}
        for caller, calls in self._calls.items():
            for target in calls:
                chosen = caller in self.device_setters
                choosers[target] = choosers.get(target, True) and chosen
        for links in self.links.values():
            chosen = bool(links.get("top_sets_device"))
            for module, name in links.get("top_calls", ()):
                choosers[(module, name)] = choosers.get((module, name), True) and chosen
        self.device_chosen_by_callers = {
            key
            for key, chosen in choosers.items()
            if chosen
            and key not in self.device_setters
            and key not in self.reach
            and not self._function(key).get("collectives")
        }

    @cached_property
    def _parameter_forwards(self) -> dict[FunctionKey, list[tuple[FunctionKey, int, int]]]:
        """Per function, the parameters it passes on as they are to another project
        function: ``(callee, argument position, own parameter position)``."""
        forwards: dict[FunctionKey, list[tuple[FunctionKey, int, int]]] = {}
        for key, function in self._functions():
            for module, name, argument, own in function.get("forwards", ()):
                forwards.setdefault(key, []).append(((module, name), argument, own))
        return forwards

    def _solve_sharded_parameters(self) -> None:
        """The parameters a function shards: passes to ``fully_shard`` / ``FSDP(...)``,
        or on to a project function that shards them (``prepare(model)`` ->
        ``apply(model)`` -> ``fully_shard(model)``)."""
        for key, function in self._functions():
            if function.get("shards"):
                self.sharded_parameters[key] = set(function["shards"])
        for _ in range(MAX_ROUNDS):
            changed = False
            for key, passed in self._parameter_forwards.items():
                found = self.sharded_parameters.setdefault(key, set())
                for callee, argument, own in passed:
                    if own not in found and argument in self.sharded_parameters.get(callee, ()):
                        found.add(own)
                        changed = True
            if not changed:
                break
        self.sharded_parameters = {k: v for k, v in self.sharded_parameters.items() if v}

    def _solve_wrapped_parameters(self) -> None:
        """The parameters a function is handed a ``DistributedDataParallel`` model in:
        a caller wraps it and passes it (``model = DDP(model); evaluate(model)``), or
        passes on a parameter it was handed one in."""
        self._hand_on(self.wrapped_parameters, "wrapped_args")

    def _solve_rank_parameters(self) -> None:
        """The parameters a function is handed the process's rank in: a caller passes
        the rank (or a name bound to it; a constructor call counts for ``__init__``),
        or passes on a parameter it was handed the rank in; a name bound to an item of
        what a project function returns counts where that item is the rank (``rank, world
        = init_distributed(args)`` in one module, ``return rank, world`` in another)."""
        for _key, function in self._functions():
            for *called, item, module, name, position in function.get("rank_item_args", ()):
                returned = self._function((called[0], called[1]))
                if (item < 0 and tuple(called) in self.rank_tests) or item in returned.get(
                    "rank_items", ()
                ):
                    self.rank_parameters.setdefault((module, name), set()).add(position)
        self._hand_on(self.rank_parameters, "rank_args")

    def _solve_loader_parameters(self) -> None:
        """The parameters a function is handed a data loader on a distributed sampler
        in: a caller of another module builds it (``DataLoader(ds,
        sampler=DistributedSampler(ds))``) and passes it, or passes on a parameter it
        was handed one in. A loader the module builds itself is its own analysis's
        (``sampler_epochs`` follows it from the sampler)."""
        self._hand_on(self.loader_parameters, "loader_args", across_modules=True)

    def _hand_on(
        self, handed: dict[FunctionKey, set[int]], seeds: str, across_modules: bool = False
    ) -> None:
        """Fill ``handed`` (per function, parameter positions) from the callers' links
        named ``seeds`` (``[module, function, position]``; ``across_modules``: only
        those of callers in another module; a module's top level counts as a caller,
        its links named ``top_`` + ``seeds``), then to a fixpoint along the parameters
        each function passes on as they are."""
        callers = [(key[0], function) for key, function in self._functions()]
        callers += [
            (module, {seeds: links.get(f"top_{seeds}", ())}) for module, links in self.links.items()
        ]
        for caller, function in callers:
            for module, name, argument in function.get(seeds, ()):
                if not (across_modules and module == caller):
                    handed.setdefault((module, name), set()).add(argument)
        for _ in range(MAX_ROUNDS):
            changed = False
            for key, passed in self._parameter_forwards.items():
                own_handed = handed.get(key, set())
                for callee, argument, own in passed:
                    found = handed.setdefault(callee, set())
                    if own in own_handed and argument not in found:
                        found.add(argument)
                        changed = True
            if not changed:
                return

    def label(self, key: FunctionKey) -> str:
        """``utils.save_checkpoint`` / ``Distributed.barrier`` for messages."""
        module, name = key
        return name if "." in name else f"{module.rpartition('.')[2]}.{name}"

    # -- what one file is told ---------------------------------------------------

    def facts_for(self, path: str) -> FileFacts:
        """Facts about the project names the file at ``path`` uses, keyed as it spells
        them (``Class:self.x`` inside a class), and about its own functions (``f``,
        ``Class.f``): see ``facts.NameFacts`` and ``facts.OwnFunctionFacts``. A function
        of the file itself gets no reach: its own analysis follows its own calls."""
        module = self.module_of_path.get(path)
        if module is None:
            return NO_FACTS
        names: dict[str, NameFacts] = {}
        for use in self.summaries[module]["uses"]:
            owner, _, spelled = use.rpartition(":")
            symbol = self.spelled(spelled, module, owner or None)
            if symbol is None:
                continue
            fact = self._fact(symbol, module, spelled)
            if fact is not None:
                names[use] = fact
        roles, reach = self.program_roles, self.reach_of_code
        return FileFacts(
            names,
            self._own_function_facts.get(module, {}),
            runs_alone=module in roles.alone,
            off_training=module in roles.untrained,
            unrun=module in reach.unrun,
            unreferenced=tuple(sorted(reach.unreferenced.get(module, ()))),
            main_alone=module in roles.alone_programs,
        )

    @cached_property
    def reach_of_code(self) -> CodeReach:
        """Which modules nothing in the project runs, and which top-level names of the
        others nothing references (``reach``)."""
        return project_reach(
            {module: links.get("reach", {}) for module, links in self.links.items()},
            self.paths,
            lambda module, folder: self._imports_from(module, folder, reach=True),
        )

    @cached_property
    def program_roles(self) -> ProgramRoles:
        """Which modules only single-process programs run, and which no training
        program runs."""
        return program_roles(
            {module: links.get("program", {}) for module, links in self.links.items()},
            lambda module, folder: self._imports_from(module, folder, reach=False),
            lambda folder: self._folder_candidates.get(folder, ()),
            GroupReach(
                {module: links.get("group", {}) for module, links in self.links.items()},
                unseen_reach(
                    {module: links.get("reach", {}) for module, links in self.links.items()}
                ),
            ),
        )

    @cached_property
    def _folder_candidates(self) -> dict[str, list[str]]:
        """Per folder, the modules whose imports a program run from it may read
        otherwise (``programs.FolderSpans``, as their links keep it)."""
        found: dict[str, list[str]] = {}
        for module, links in self.links.items():
            for folder in links.get("folders", {}).get("folders", ()):
                found.setdefault(folder, []).append(module)
        return found

    def _imports_from(self, module: str, folder: str, reach: bool) -> Iterable[str]:
        """The project modules ``module`` imports in a program run from ``folder``: as
        its links say (from no folder), read again from a folder that can change them;
        with ``reach``, an unresolved import reaches the modules named as it is
        (``reach.imported``), else it reaches none (``programs.imported_modules``)."""
        links = self.links.get(module)
        if links is None:
            return ()
        by_folder = links.get("folders")
        if not folder or by_folder is None or folder not in by_folder["folders"]:
            part = links.get("reach" if reach else "program", {})
            return part.get("reached" if reach else "imports", ())
        asked = (module, folder, reach)
        found = self._folder_imports.get(asked)
        if found is None:
            names = by_folder["names"]
            if reach:
                found = imported(self, module, self._loose, folder, names)
            else:
                found = imported_modules(self.resolve_module, module, names, folder)
            self._folder_imports[asked] = found
        return found

    @cached_property
    def _own_function_facts(self) -> dict[str, dict[str, OwnFunctionFacts]]:
        """Per module, the facts of its own functions (every caller chooses the GPU,
        the parameters callers hand a DDP model or the rank in), grouped once so that
        ``facts_for`` reads only its module's."""
        chosen: dict[str, set[str]] = {}
        for owner, name in self.device_chosen_by_callers:
            chosen.setdefault(owner, set()).add(name)
        wrapped = _by_module(self.wrapped_parameters)
        ranks = _by_module(self.rank_parameters)
        loaders = _by_module(self.loader_parameters)
        kinds: dict[str, dict[str, tuple[tuple[int, str], ...]]] = {}
        for (owner, name), by_position in self.parameter_kinds.items():
            kinds.setdefault(owner, {})[name] = tuple(sorted(by_position.items()))
        grouped: dict[str, dict[str, OwnFunctionFacts]] = {}
        for owner in chosen.keys() | wrapped.keys() | ranks.keys() | loaders.keys() | kinds.keys():
            choosing, handed = chosen.get(owner, set()), wrapped.get(owner, {})
            ranked, typed = ranks.get(owner, {}), kinds.get(owner, {})
            sampled = loaders.get(owner, {})
            names = choosing | handed.keys() | ranked.keys() | sampled.keys() | typed.keys()
            grouped[owner] = {
                name: OwnFunctionFacts(
                    name in choosing,
                    handed.get(name, ()),
                    ranked.get(name, ()),
                    typed.get(name, ()),
                    sampled.get(name, ()),
                )
                for name in sorted(names)
            }
        return grouped

    @cached_property
    def parameter_kinds(self) -> dict[FunctionKey, dict[int, str]]:
        """Per function, the kind of each parameter every project call passes an
        allocation of that kind in (``object_kinds.parameter_kinds``)."""
        return parameter_kinds(links.get("kinds", {}) for links in self.links.values())

    @cached_property
    def kinds(self) -> ProjectKinds:
        """The kinds of objects project names make or hold."""
        return ProjectKinds(self)

    def _fact(self, symbol: Symbol, module: str, spelled: str) -> NameFacts | None:
        kind = self.kinds.of_symbol(symbol)
        if symbol[0] == "attribute":
            held = self._attribute_is_rank_test(symbol)
            waits = self._waits_of_holder(symbol)
            if not held and kind is None and not waits:
                return None
            return NameFacts(rank_test=held, held=held, kind=kind, may_wait=waits)
        if symbol[0] != "function":
            fact = NameFacts(kind=kind) if kind is not None else None
            if symbol[0] in ("instance", "class") and self._waits_of_holder(symbol):
                instance = symbol[0] == "instance"
                return replace(
                    fact or NameFacts(), may_wait=instance, instances_may_wait=not instance
                )
            return fact
        key = (symbol[1], symbol[2])
        function = self._function(key)
        rank_test = key in self.rank_tests
        local = NameFacts(
            kind=kind,
            rank_test=rank_test,
            held=rank_test and bool(function.get("property")),
            no_rank_test=not rank_test,  # a known function whose result is no rank test
            chooses_device=key in self.device_setters,
            sharded_arguments=tuple(sorted(self.sharded_parameters.get(key, ()))),
            may_wait=key in self.may_wait,
            instances_may_wait=any(
                self._instances_may_wait(held) for held in self._returned_classes(key)
            ),
        )
        if key[0] == module:
            return local  # the file's own functions: its own analysis reads them
        reach = self.reach.get(key)
        zero_only = bool(function.get("zero_only"))
        receiver, _, method = spelled.rpartition(".")
        agreement = function.get("agreement")
        if agreement is None and key in self.agreed_results:
            # every return hands back an agreed result of another project function
            agreement = [function["returns_project_calls"], [], []]
        return replace(
            local,
            reaches=None if zero_only or reach is None else self._reached(key, reach),
            agreement=None if agreement is None else _agreement(agreement),
            rank_zero_only=zero_only,
            rank_items=tuple(function.get("rank_items", ())),
            not_a_collective=reach is None
            and bool(receiver)
            and kind_of_method(receiver, method) is not None,
        )

    def _waits_of_holder(self, symbol: Symbol) -> bool:
        """Whether a call of what a field, an instance or a class's instances hold may
        make the host wait (its class's ``__call__`` / ``forward`` may)."""
        if symbol[0] == "class":
            return self._instances_may_wait((symbol[1], symbol[2]))
        return any(self._instances_may_wait(held) for held in self._held_classes(symbol))

    def _reached(self, key: FunctionKey, reach: Reach) -> ReachedCollective:
        api, op, family, creates_group, saves_checkpoint = reach.kind
        chain = (self.label(key), *reach.chain)
        return ReachedCollective(
            api, op, family, creates_group, saves_checkpoint, chain, reach.where, reach.switch
        )


def _grow_by_returns(
    found: set[FunctionKey],
    returning: list[tuple[FunctionKey, list[FunctionKey]]],
    joined: Callable[[Iterable[bool]], bool],
) -> None:
    """Add to ``found``, to a fixpoint, each function whose returned calls are in it as
    ``joined`` asks (``any``: one returned call of such a function; ``all``: every one)."""
    for _ in range(MAX_ROUNDS):
        changed = False
        for key, called in returning:
            if key not in found and joined(c in found for c in called):
                found.add(key)
                changed = True
        if not changed:
            return


def _agreement(summarised: list[Any]) -> Agreement:
    """A summary's ``agreement`` as the typed fact."""
    parameters, reaching, agreeing, *rest = summarised
    items = rest[0] if rest else None
    return Agreement(
        tuple(parameters),
        None if reaching is None else tuple(reaching),
        tuple(agreeing),
        None if items is None else tuple(None if i is None else tuple(i) for i in items),
    )


def _by_module(
    positions: dict[FunctionKey, set[int]],
) -> dict[str, dict[str, tuple[int, ...]]]:
    """Per module, per function, its parameter positions in order (empty sets left out)."""
    grouped: dict[str, dict[str, tuple[int, ...]]] = {}
    for (owner, name), found in positions.items():
        if found:
            grouped.setdefault(owner, {})[name] = tuple(sorted(found))
    return grouped
