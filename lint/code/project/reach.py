"""What code of the project nothing in the project can run: modules no program runs,
and top-level functions and classes nothing names.

A module is *run* when it is a program, a package's ``__main__``, a script whose top
level calls a project function (``from lib import run; run()``), a test, named by a
string of the project (a dotted name, a path, a ``module:attribute`` entry point:
``importlib``, Hydra, ``runpy``), loaded by a computed name whose constant head it
starts with (``import_module(f"models.{name}")``, ``"models.{}".format(name)``: only
modules defining the attribute read on the result, ``.Config``, where one is read), or
imported by a run module. In a project with a program, no ``setup.py`` (an installable
package is a library its users import from outside) and no load by a computed name
without a head, a module that is not run is *unrun*. A project is installable when it
holds a ``setup.py`` or a top-level package binds ``__version__`` (a ``pyproject.toml``
package's mark).

A top-level function or class of a run module is *referenced* when any module of the
project names it in a way that can reach it: imports it (``from m import f``, through
package re-exports), reads it (a call or any load: a callback, a registry dict,
``mp.spawn(fn)``, a base class), reads it as an attribute of the module imported
(``import m; m.f``, ``import pkg.m``), names it by a string (``getattr(m, "f")``,
``__all__``, any dotted string's last part), decorates it (a decorator may register
it: any but Python's and torch's own), or reaches it where analysis cannot see: the
module imports everything (``from m import *``), looks its own names up
(``globals()``, ``eval``, ``exec``), another module looks names up on it by a computed
name (``getattr(m, name)``), or it may be loaded by a computed name whose result is
not read by one attribute. Names are resolved through imports, never by equality
across unrelated receivers (``model.train()`` does not reference a module-level
``train``). A method lives with its class. In an installable project only private
names (``_helper``) are decided: a public function is its users' to call. What
nothing references is *unreferenced*: nothing in the project can run it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from ddplint.code.project.programs import Part, imported_modules, imported_names
from ddplint.code.project.summaries import Summary, qualify
from ddplint.code_facts import is_test_file

#: Decorators of these libraries wrap what they decorate and register nothing.
_PLAIN_DECORATORS = (
    "torch",
    "functools",
    "contextlib",
    "dataclasses",
    "typing",
    "abc",
    "staticmethod",
    "classmethod",
    "property",
)
#: The module of an installable project's ``setup.py``.
_SETUP = "setup"
#: What separates the parts of a string that names code.
_PARTS = re.compile(r"[.:/]")


class Project(Protocol):
    """What reach asks of the project index."""

    @property
    def summaries(self) -> Mapping[str, Summary]: ...

    @property
    def paths(self) -> Mapping[str, str]: ...

    def resolve_module(self, name: str, importer: str) -> str | None: ...

    def lookup(self, qualified: str, importer: str, depth: int = 0) -> tuple[str, ...] | None: ...


@dataclass(frozen=True)
class Reach:
    """The modules nothing runs, and per run module its unreferenced top-level names."""

    unrun: frozenset[str]
    unreferenced: Mapping[str, frozenset[str]]


def reach_part(project: Project, module: str, loose: LooseImports) -> Part:
    """What ``project_reach`` reads of one module, its names resolved: its naming
    strings and loads by a computed name, whether its top level calls project code,
    the modules it loads by a constant name, those it imports with ``*`` and those it
    reaches wholly otherwise, its top-level names (and the others it binds, and those a
    registering decorator marks), what it references of each module, and the modules
    it imports from no folder (``imported``; the index reads them again from a folder
    that can change them). Falsy parts are left out."""
    summary = project.summaries[module]
    own = summary.get("reach", {})
    defined = _top_level(summary)
    part: Part = {
        "program": bool(summary.get("top", {}).get("program")),
        "strings": list(own.get("strings", ())),
        "loads": [list(load) for load in own.get("loads", ())],
        "runs_code": _runs_project_code(project, module),
        "loaded": sorted(_loaded_by_name(project, module, own)),
        "defined": sorted(defined),
        "bound": sorted(_bound(summary) - defined),
        "versioned": _versioned(project, module),
        "wholly": sorted(_wholly_reached(project, module, own)),
        "star": sorted(_star_targets(project, module, own)),
        "registered": sorted(_registered(summary)),
        "referenced": {
            m: sorted(names) for m, names in _referenced(project, module, loose).items()
        },
        "reached": sorted(imported(project, module, loose, "", imported_names(summary))),
    }
    return {name: value for name, value in part.items() if value}


def project_reach(
    parts: Mapping[str, Part],
    paths: Mapping[str, str],
    reached_of: Callable[[str, str], Iterable[str]],
) -> Reach:
    """The project's reach (see the module docstring), from each module's
    ``reach_part`` (``paths``: module name -> path) and the modules it imports in a
    program run from a folder (``reached_of(module, folder)``: ``imported``)."""
    modules = list(paths)
    words, named, dotted = _named_words(parts[module].get("strings", ()) for module in modules)
    loaded_by_name = {found for module in modules for found in parts[module].get("loaded", ())}
    loads = [load for module in modules for load in parts[module].get("loads", ())]
    defined = {module: set(parts[module].get("defined", ())) for module in modules}
    roots = {
        module
        for module in modules
        if parts[module].get("program")
        or module.rpartition(".")[2] == "__main__"
        or parts[module].get("runs_code")
        or is_test_file(paths[module])
        or _named(module, words, named, dotted)
        or module in loaded_by_name
        or (loads and any(_loaded(module, _bound_of(parts[module]), h, a) for h, a in loads))
    }
    run = _run_from(paths, roots, reached_of)
    installable = _SETUP in defined or any(
        parts[m].get("versioned") for m in modules if "." not in m
    )
    programs = any(parts[m].get("program") for m in modules)
    unheaded = any(not head for head, _ in loads)
    unrun = (
        frozenset(m for m in modules if m not in run)
        if programs and not installable and not unheaded
        else frozenset()
    )
    everything = {found for module in modules for found in parts[module].get("wholly", ())}
    everything.update(_star_imported(parts))
    heads = [head for head, attribute in loads if not attribute]
    everything.update(m for m in modules if any(m.startswith(head) for head in heads))
    everything.update(_named_wholly(modules, named, dotted), loaded_by_name)
    words.update(attribute for _, attribute in loads)
    referenced: dict[str, set[str]] = {}
    for module in modules:
        referenced.setdefault(module, set()).update(defined[module] & words)
        referenced[module].update(parts[module].get("registered", ()))
        for target, names in parts[module].get("referenced", {}).items():
            referenced.setdefault(target, set()).update(names)
    unreferenced = {}
    for module in run:
        if module in everything or module not in defined:
            continue
        left = defined[module] - referenced.get(module, set())
        if installable:
            left = {name for name in left if name.startswith("_")}
        if left:
            unreferenced[module] = frozenset(left)
    return Reach(unrun, unreferenced)


@dataclass(frozen=True)
class Unseen:
    """What may run where analysis cannot see a reference: every top-level name of the
    ``wholly`` reached modules, and per module the ``named`` ones a string names or a
    registering decorator marks."""

    wholly: frozenset[str]
    named: Mapping[str, frozenset[str]]


def unseen_reach(parts: Mapping[str, Part]) -> Unseen:
    """The project's ``Unseen``, from each module's ``reach_part`` (see
    ``project_reach``: the same strings, star imports and decorators; a load by a
    computed name and a lookup by one are left to whoever follows the code that makes
    them)."""
    modules = list(parts)
    words, named, dotted = _named_words(parts[module].get("strings", ()) for module in modules)
    wholly = _star_imported(parts)
    wholly.update(_named_wholly(modules, named, dotted))
    wholly.update(found for module in modules for found in parts[module].get("loaded", ()))
    marked: dict[str, frozenset[str]] = {}
    for module in modules:
        part = parts[module]
        found = set(part.get("registered", ())) | (set(part.get("defined", ())) & words)
        if found:
            marked[module] = frozenset(found)
    return Unseen(frozenset(wholly), marked)


def _star_imported(parts: Mapping[str, Part]) -> set[str]:
    """The modules some module imports with ``*``."""
    return {found for part in parts.values() for found in part.get("star", ())}


def _named_wholly(modules: list[str], named: set[str], dotted: set[str]) -> set[str]:
    """The packaged modules a dotted string names (what they hold is read on what a
    load of the string returns)."""
    return {m for m in modules if "." in m and _dotted_name(m, named, dotted)}


def _registered(summary: Summary) -> set[str]:
    """The module's top-level names a registering decorator marks."""
    imports = summary.get("imports", {})
    decorated = summary.get("reach", {}).get("decorated", {})
    return {
        name
        for name, decorators in decorated.items()
        if any(_registers(decorator, imports) for decorator in decorators)
    }


def _bound_of(part: Part) -> set[str]:
    """The names a module binds at its top level, from its part."""
    return {*part.get("defined", ()), *part.get("bound", ())}


def _runs_project_code(project: Project, module: str) -> bool:
    """Whether the module's top level calls a project function or class (a script:
    ``from train_lib import run; run()``)."""
    summary = project.summaries[module]
    imports = summary.get("imports", {})
    for name in summary.get("reach", {}).get("top_calls", ()):
        qualified = qualify(name, imports)
        symbol = project.lookup(qualified, module) if qualified else None
        if symbol is not None and symbol[0] in ("function", "class", "instance"):
            return True
    return False


def imported(
    project: Project, module: str, loose: LooseImports, folder: str, names: Iterable[str]
) -> set[str]:
    """The modules ``module`` imports by ``names`` (``programs.imported_names``: every
    import read, nested ones and ``*`` too) in a program run from ``folder``
    (``programs.imported_modules``: with the packages around them); an import the index
    cannot resolve reaches every module whose name ends as it does (``LooseImports``)."""
    reached: set[str] = set()
    for name in sorted(names):
        strict = imported_modules(project.resolve_module, module, [name], folder)
        if not strict:
            for found in loose.modules(name):
                parts = found.split(".")
                strict.update(".".join(parts[:cut]) for cut in range(1, len(parts) + 1))
        reached.update(strict)
    return reached


def _run_from(
    paths: Mapping[str, str], roots: set[str], reached_of: Callable[[str, str], Iterable[str]]
) -> set[str]:
    """The roots and every module they import, transitively (``imported``). Each
    module is read once, with the folder of the first root that reached it on
    ``sys.path``."""
    run = set(roots)
    pending = [(root, root.rpartition(".")[0]) for root in roots]
    while pending:
        module, folder = pending.pop()
        for found in reached_of(module, folder):
            if found not in run and found in paths:
                run.add(found)
                pending.append((found, folder))
    return run


def _versioned(project: Project, module: str) -> bool:
    """Whether a top-level package binds ``__version__`` (assigned or imported): the
    mark of a package made to be installed, a ``pyproject.toml`` project's too."""
    if not project.paths[module].endswith("__init__.py"):
        return False
    summary = project.summaries[module]
    return "__version__" in summary.get("imports", {}) or bool(
        summary.get("reach", {}).get("version")
    )


def _top_level(summary: Summary) -> set[str]:
    functions = summary.get("functions", {})
    return {name for name in functions if "." not in name} | set(summary.get("classes", {}))


def _bound(summary: Summary) -> set[str]:
    """The names a module binds at its top level (definitions, imports, instances)."""
    return _top_level(summary) | set(summary.get("imports", {})) | set(summary.get("instances", {}))


def _named_words(strings: Iterable[Iterable[str]]) -> tuple[set[str], set[str], set[str]]:
    """Every word of the project's naming strings (each module's); the dotted names
    they begin and end with (``a.b.c``: ``a.b``, ``b.c``, ``a.b.c``); and their dotted
    forms (a path's ``tools/train.py`` as ``tools.train``, an entry point's ``m:f`` as
    ``m.f``)."""
    words: set[str] = set()
    named: set[str] = set()
    dotted: set[str] = set()
    for texts in strings:
        for text in texts:
            pieces = [p for p in _PARTS.split(text.removesuffix(".py")) if p]
            words.update(pieces)
            if len(pieces) > 1:
                dotted.add(".".join(pieces))
                for cut in range(1, len(pieces) + 1):
                    named.add(".".join(pieces[:cut]))
                    named.add(".".join(pieces[cut - 1 :]))
    return words, named, dotted


def _named(module: str, words: set[str], named: set[str], dotted: set[str]) -> bool:
    """Whether a string names the module: its last part, or by its dotted name
    (``_dotted_name``)."""
    return module.rpartition(".")[2] in words or _dotted_name(module, named, dotted)


def _dotted_name(module: str, named: set[str], dotted: set[str]) -> bool:
    """Whether a dotted string names the module: one it begins or ends (``models.x.Net``,
    ``src.models.x``: ``named``), or one it ends with (``models.x`` for
    ``src.models.x``). What such a module holds is read on what a load returns."""
    parts = module.split(".")
    return module in named or any(
        ".".join(parts[cut:]) in dotted for cut in range(1, len(parts) - 1)
    )


def _loaded_by_name(project: Project, module: str, own: Summary) -> set[str]:
    """The modules the module's loads name by a constant (``import_module("plugins.fancy")``,
    ``instantiate`` of ``"pkg.models.Net"``: the module the name leads to)."""
    found: set[str] = set()
    for name in own.get("loaded", ()):
        symbol = project.lookup(name.replace(":", "."), module)
        if symbol is not None:
            found.add(symbol[1])
    return found


def _loaded(module: str, names: set[str], head: str, attribute: str) -> bool:
    """Whether a load by a computed name with this constant head may load the module:
    its name starts with the head and it defines the attribute read on the result."""
    return module.startswith(head) and (not attribute or attribute in names)


def _wholly_reached(project: Project, module: str, own: Summary) -> set[str]:
    """The modules every name of which the module may reach where analysis cannot see:
    itself where it looks its own names up, and those it looks up by a computed name
    (those it imports with ``*`` are its ``star`` part; a load by a computed name whose
    result is not read by one attribute is the project's: ``project_reach``)."""
    found: set[str] = set()
    if own.get("own_lookup"):
        found.add(module)
    imports = project.summaries[module].get("imports", {})
    for receiver in own.get("lookups", ()):
        qualified = qualify(receiver, imports) if receiver else None
        symbol = project.lookup(qualified, module) if qualified else None
        if symbol is not None and symbol[0] == "module":
            found.add(symbol[1])
    return found


def _star_targets(project: Project, module: str, own: Summary) -> set[str]:
    """The modules the module imports with ``*``."""
    found: set[str] = set()
    for name in own.get("star", ()):
        target = project.resolve_module(name, module)
        if target is not None:
            found.add(target)
    return found


def _referenced(project: Project, module: str, loose: LooseImports) -> dict[str, set[str]]:
    """Per module, its top-level names ``module`` references through its imports and
    reads (see the module docstring; a name a naming string holds or a registering
    decorator marks is the project's: ``project_reach``)."""
    found: dict[str, set[str]] = {}

    def add(symbols: list[tuple[str, ...]]) -> bool:
        """Mark what they name; whether one is a module."""
        for symbol in symbols:
            if symbol[0] in ("function", "class", "name") and len(symbol) > 2:
                found.setdefault(symbol[1], set()).add(symbol[2].partition(".")[0])
        return any(symbol[0] == "module" for symbol in symbols)

    summary = project.summaries[module]
    own = _top_level(summary)
    imports: dict[str, str] = summary.get("imports", {})
    projected = {
        local: add(loose.symbols(qualified, module)) for local, qualified in imports.items()
    }
    bound = set(imports.values())
    for qualified in summary.get("reach", {}).get("imported", ()):
        if qualified not in bound:
            add(loose.symbols(qualified, module))
    for use in summary.get("uses", ()):
        if ":" in use:
            continue
        head, _, rest = use.partition(".")
        if head in own and head not in imports:
            found.setdefault(module, set()).add(head)
        elif rest and projected.get(head):
            add(loose.symbols(f"{imports[head]}.{rest}", module))
    return found


class LooseImports:
    """What an import the index cannot resolve may read: a project module whose name
    ends with the imported one (``from core.function import f`` where a script puts
    ``lib/`` on ``sys.path``; ``from utils import f`` from a subfolder of the script's),
    or one the imported name ends with (``from src.data import M`` where ``src/`` holds
    no ``__init__``). Every such module is taken: an import never says nothing runs."""

    def __init__(
        self, project: Project, modules: Iterable[str], note: Callable[[str], None]
    ) -> None:
        """``note`` is told each module an answer names (a module that goes changes
        the answers that named it; one that comes, any answer)."""
        self._project = project
        self._note = note
        self._ending: dict[str, list[str]] = {}
        #: The most parts a module's name has: no longer run of parts names one.
        self._depth = 0
        for module in modules:
            parts = module.split(".")
            self._depth = max(self._depth, len(parts))
            for cut in range(len(parts)):
                self._ending.setdefault(".".join(parts[cut:]), []).append(module)

    def _named(self, parts: list[str], end: int) -> list[str]:
        """The modules whose name ends with ``parts[:end]``, or that it ends with (only
        the last ``_depth`` parts can name one: a dotted import of ten thousand parts
        costs no more than one of a module's depth)."""
        found = list(self._ending.get(".".join(parts[:end]), ())) if end <= self._depth else []
        for cut in range(max(1, end - self._depth), end):
            found.extend(
                m
                for m in self._ending.get(".".join(parts[cut:end]), ())
                if m.count(".") < end - cut
            )
        return found

    def modules(self, qualified: str) -> list[str]:
        """The modules an unresolved dotted import may name (the longest name)."""
        return next(iter(self._by_prefix(qualified)), (0, []))[1]

    def _by_prefix(self, qualified: str) -> Iterator[tuple[int, list[str]]]:
        parts = qualified.lstrip(".").split(".")
        for cut in range(len(parts), 0, -1):
            found = self._named(parts, cut)
            if found:
                for module in found:
                    self._note(module)
                yield cut, found
                return

    def symbols(self, qualified: str, importer: str) -> list[tuple[str, ...]]:
        """What a dotted name read in ``importer`` names: the index's answer, else
        the modules it may name (``modules``) or their top-level names."""
        symbol = self._project.lookup(qualified, importer)
        if symbol is not None:
            return [symbol]
        parts = qualified.lstrip(".").split(".")
        found: list[tuple[str, ...]] = []
        for cut, modules in self._by_prefix(qualified):
            for module in modules:
                if cut == len(parts):
                    found.append(("module", module))
                else:
                    found.append(("name", module, parts[cut]))
        return found


def _registers(decorator: str, imports: Mapping[str, str]) -> bool:
    """Whether a decorator may register what it decorates: any but those of Python and
    torch that only wrap it."""
    qualified = (qualify(decorator, dict(imports)) if decorator else None) or decorator
    return not any(
        qualified == plain or qualified.startswith(f"{plain}.") for plain in _PLAIN_DECORATORS
    )
