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
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from ddplint.code.project.programs import imported_modules, imported_names
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


def project_reach(project: Project) -> Reach:
    """The project's reach (see the module docstring), built once from the summaries."""
    summaries = project.summaries
    modules = list(project.paths)
    parts = {module: summaries[module].get("reach", {}) for module in modules}
    words, named, dotted = _named_words(parts.values())
    loaded_by_name = _loaded_by_name(project, parts)
    loads = [load for part in parts.values() for load in part.get("loads", ())]
    defined = {module: _top_level(summaries[module]) for module in modules}
    roots = {
        module
        for module in modules
        if summaries[module].get("top", {}).get("program")
        or module.rpartition(".")[2] == "__main__"
        or _runs_project_code(project, module)
        or is_test_file(project.paths[module])
        or _named(module, words, named, dotted)
        or module in loaded_by_name
        or (loads and any(_loaded(module, _bound(summaries[module]), h, a) for h, a in loads))
    }
    loose = LooseImports(project, modules)
    run = _run_from(project, roots, loose)
    installable = _SETUP in defined or any(_versioned(project, m) for m in modules if "." not in m)
    programs = any(summaries[m].get("top", {}).get("program") for m in modules)
    unheaded = any(not head for head, _ in loads)
    unrun = (
        frozenset(m for m in modules if m not in run)
        if programs and not installable and not unheaded
        else frozenset()
    )
    everything = _wholly_reached(project, parts, modules, loads)
    everything.update(_named_wholly(modules, named, dotted), loaded_by_name)
    words.update(attribute for _, attribute in loads)
    referenced = _referenced(project, modules, defined, words, loose)
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


def unseen_reach(project: Project) -> Unseen:
    """The project's ``Unseen`` (see ``project_reach``: the same strings, star imports
    and decorators; a load by a computed name and a lookup by one are left to whoever
    follows the code that makes them)."""
    summaries = project.summaries
    modules = list(project.paths)
    parts = {module: summaries[module].get("reach", {}) for module in modules}
    words, named, dotted = _named_words(parts.values())
    wholly = _star_imported(project, parts, modules)
    wholly.update(_named_wholly(modules, named, dotted), _loaded_by_name(project, parts))
    marked: dict[str, frozenset[str]] = {}
    for module in modules:
        found = _registered(summaries[module]) | (_top_level(summaries[module]) & words)
        if found:
            marked[module] = frozenset(found)
    return Unseen(frozenset(wholly), marked)


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


def _run_from(project: Project, roots: set[str], loose: LooseImports) -> set[str]:
    """The roots and every module they import, transitively (``programs.imported_modules``:
    with the packages around them; every import read, nested ones and ``*`` too, for
    the summary's imports keep one module per local name). Each module is read once,
    with the folder of the first root that reached it on ``sys.path``; an import the
    index cannot resolve reaches every module whose name ends as it does (``LooseImports``)."""
    run = set(roots)
    pending = [(root, root.rpartition(".")[0]) for root in roots]
    while pending:
        module, folder = pending.pop()
        reached: set[str] = set()
        for name in sorted(imported_names(project.summaries[module])):
            strict = imported_modules(project.resolve_module, module, [name], folder)
            if not strict:
                for found in loose.modules(name):
                    parts = found.split(".")
                    strict.update(".".join(parts[:cut]) for cut in range(1, len(parts) + 1))
            reached.update(strict)
        for found in reached:
            if found not in run and found in project.paths:
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


def _named_words(parts: Iterable[Summary]) -> tuple[set[str], set[str], set[str]]:
    """Every word of the project's naming strings; the dotted names they begin and end
    with (``a.b.c``: ``a.b``, ``b.c``, ``a.b.c``); and their dotted forms (a path's
    ``tools/train.py`` as ``tools.train``, an entry point's ``m:f`` as ``m.f``)."""
    words: set[str] = set()
    named: set[str] = set()
    dotted: set[str] = set()
    for part in parts:
        for text in part.get("strings", ()):
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


def _loaded_by_name(project: Project, parts: Mapping[str, Summary]) -> set[str]:
    """The modules a load names by a constant (``import_module("plugins.fancy")``,
    ``instantiate`` of ``"pkg.models.Net"``: the module the name leads to)."""
    found: set[str] = set()
    for module, part in parts.items():
        for name in part.get("loaded", ()):
            symbol = project.lookup(name.replace(":", "."), module)
            if symbol is not None:
                found.add(symbol[1])
    return found


def _loaded(module: str, names: set[str], head: str, attribute: str) -> bool:
    """Whether a load by a computed name with this constant head may load the module:
    its name starts with the head and it defines the attribute read on the result."""
    return module.startswith(head) and (not attribute or attribute in names)


def _wholly_reached(
    project: Project,
    parts: Mapping[str, Summary],
    modules: list[str],
    loads: list[list[str]],
) -> set[str]:
    """Modules every name of which may be reached where analysis cannot see: imported
    with ``*``, looking their own names up, looked up by a computed name, or loaded by
    a computed name whose result is not read by one attribute."""
    found = _star_imported(project, parts, modules)
    for module in modules:
        part = parts[module]
        if part.get("own_lookup"):
            found.add(module)
        imports = project.summaries[module].get("imports", {})
        for receiver in part.get("lookups", ()):
            qualified = qualify(receiver, imports) if receiver else None
            symbol = project.lookup(qualified, module) if qualified else None
            if symbol is not None and symbol[0] == "module":
                found.add(symbol[1])
    heads = [head for head, attribute in loads if not attribute]
    found.update(m for m in modules if any(m.startswith(head) for head in heads))
    return found


def _star_imported(project: Project, parts: Mapping[str, Summary], modules: list[str]) -> set[str]:
    """The modules some module imports with ``*``."""
    found: set[str] = set()
    for module in modules:
        for name in parts[module].get("star", ()):
            target = project.resolve_module(name, module)
            if target is not None:
                found.add(target)
    return found


def _referenced(
    project: Project,
    modules: list[str],
    defined: Mapping[str, set[str]],
    words: set[str],
    loose: LooseImports,
) -> dict[str, set[str]]:
    """Per module, its top-level names some module of the project references (see the
    module docstring), in one pass over every module's imports and reads."""
    found: dict[str, set[str]] = {}

    def add(symbols: list[tuple[str, ...]]) -> bool:
        """Mark what they name; whether one is a module."""
        for symbol in symbols:
            if symbol[0] in ("function", "class", "name") and len(symbol) > 2:
                found.setdefault(symbol[1], set()).add(symbol[2].partition(".")[0])
        return any(symbol[0] == "module" for symbol in symbols)

    for module in modules:
        summary = project.summaries[module]
        own = defined[module]
        found.setdefault(module, set()).update(own & words)
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
                found[module].add(head)
            elif rest and projected.get(head):
                add(loose.symbols(f"{imports[head]}.{rest}", module))
        found[module].update(_registered(summary))
    return found


class LooseImports:
    """What an import the index cannot resolve may read: a project module whose name
    ends with the imported one (``from core.function import f`` where a script puts
    ``lib/`` on ``sys.path``; ``from utils import f`` from a subfolder of the script's),
    or one the imported name ends with (``from src.data import M`` where ``src/`` holds
    no ``__init__``). Every such module is taken: an import never says nothing runs."""

    def __init__(self, project: Project, modules: list[str]) -> None:
        self._project = project
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
