"""Whether a program's entry can reach code that starts a process group.

A program runs the top level of every module it imports (``programs``); from there it
runs what that code names: a top-level function or class of the project (a call, a
callback, a base class: any read), and what those name in turn, a class with all its
methods. A module's *unit* is one of its top-level functions or classes, or the rest of
its top level (``""``); what each unit reads is the summary's ``units``. A unit *starts
a group* when it reads a group starter (``api.GROUP_STARTERS``) other than as the class
of a type test, and other than a wrapper (``api.GROUP_WRAPPERS``: DDP, FSDP,
``SyncBatchNorm``), which needs a group another starter started: a program whose entry
reaches a wrapper and no starter never runs the wrap (it would raise). A program whose
imports hold a starter that nothing its entry reaches reads is one process: the helper
that starts the group is imported but never run (``from utils import setup_ddp,
AverageMeter`` where only the meter is used).

Where analysis cannot see a reference, every unit it may reach is taken: each unit of a
module star-imported, looking its own names up, looked up or loaded by a computed name
(among the program's imports: such a load adds no module to them, as ``programs`` reads
it);
a unit a string names (``getattr(m, "f")``, a config's ``_target_``) or a registering
decorator marks (``reach.Unseen``). A read the index cannot resolve reaches every
module whose name ends as it does (``reach.LooseImports``), and a name of a module that
is none of its units (a re-export the index does not follow, a name bound at run time)
reaches every unit of that module.

What one module says is resolved while linking it (``group_part``, kept with its links):
per unit, the units its reads name, the modules it enters or takes whole, and its loads;
what depends on the whole project (``reach.Unseen``, the modules a program imports) is
joined when a program is asked about (``GroupReach``), without reading a summary.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ddplint.analysis.api import GROUP_STARTERS, GROUP_WRAPPERS
from ddplint.code.project.programs import Part
from ddplint.code.project.reach import LooseImports, Project, Unseen
from ddplint.code.project.summaries import Summary

#: A module and one of its units: a top-level function or class, or ``""``.
Unit = tuple[str, str]
#: The unit of the module's top level outside its functions and classes.
TOP = ""
_STARTERS = frozenset(GROUP_STARTERS) - GROUP_WRAPPERS
#: What a unit's read names, once resolved: a unit, a module whose import runs (its top
#: level, and what it runs unseen), or every unit of a module.
_UNIT, _ENTER, _EVERY = "unit", "enter", "every"


def group_part(project: Project, module: str, loose: LooseImports) -> Part:
    """What ``GroupReach`` reads of one module, its names resolved: its units, those
    that start a group, and per unit what it reads (``reads``: ``[module, unit]``,
    ``enter`` and ``every``: modules) and its loads by a computed name. Falsy parts are
    left out."""
    units = _units(project.summaries[module])
    starting = [
        unit for unit, (_, qualified, *_) in units.items() if any(_starts(n) for n in qualified)
    ]
    reads: dict[str, dict[str, list[Any]]] = {}
    loads: dict[str, list[list[str]]] = {}
    for unit, (own, qualified, loaded, looked) in units.items():
        found: dict[str, set[Any]] = {_UNIT: set(), _ENTER: set(), _EVERY: set()}
        found[_UNIT].update((module, read) for read in own)
        for read in qualified:
            for symbol in loose.symbols(read, module):
                _add_symbol(project, symbol, found)
        for receiver in looked:
            if not receiver:
                found[_EVERY].add(module)
            for symbol in loose.symbols(receiver, module) if receiver else ():
                if symbol[0] == "module":
                    found[_EVERY].add(symbol[1])
                else:
                    _add_symbol(project, symbol, found)
        named = {
            kind: sorted(map(list, v)) if kind == _UNIT else sorted(v)
            for kind, v in found.items()
            if v
        }
        if named:
            reads[unit] = named
        if loaded:
            loads[unit] = [list(load) for load in loaded]
    part: Part = {"units": sorted(units), "starting": starting, "reads": reads, "loads": loads}
    return {name: value for name, value in part.items() if value}


def _add_symbol(project: Project, symbol: tuple[str, ...], found: dict[str, set[Any]]) -> None:
    """What a project symbol (``ProjectIndex.lookup``'s answer) names: the module it
    imports (entered), its unit, or every unit of its module where the name is none
    (a re-export the index does not follow, a name bound at run time)."""
    kind, module = symbol[0], symbol[1]
    if kind == "module":
        found[_ENTER].add(module)
        return
    name = symbol[2].partition(".")[0]
    summary = project.summaries[module]
    if kind != "name" or name in summary.get("functions", {}) or name in summary["classes"]:
        found[_UNIT].add((module, name))
    else:
        found[_EVERY].add(module)


class GroupReach:
    """Which units start a group, and which units a program's entry reaches, from each
    module's ``group_part`` and the project's ``Unseen``."""

    def __init__(self, parts: Mapping[str, Part], unseen: Unseen) -> None:
        self._parts = parts
        self._unseen = unseen
        self._edges: dict[Unit, list[Unit]] = {}
        self._starting = {
            (module, unit) for module, part in parts.items() for unit in part.get("starting", ())
        }
        #: The modules that hold a unit that starts a group (``programs.GroupStarts``).
        self.starting_modules = frozenset(module for module, _ in self._starting)
        self._loading = {
            (module, unit) for module, part in parts.items() for unit in part.get("loads", ())
        }
        #: Units whose reads alone lead to a unit that starts a group: in every program
        #: (reads are the program's choice nowhere; loads are), learnt as programs are asked.
        self._doomed = set(self._starting)

    def starts_group(self, modules: Iterable[str]) -> bool:
        """Whether running the top levels of ``modules`` (a program's imports) reaches
        a unit that starts a group."""
        modules = set(modules)
        if not modules & self.starting_modules:
            return False
        #: Per unit seen, the unit whose reads led to it (None: an entry or a load).
        led_by: dict[Unit, Unit | None] = {}
        for module in modules:
            entered = dict.fromkeys(self._entered(module))
            if not self._doomed.isdisjoint(entered):
                return True
            led_by.update(entered)
        ordered = sorted(modules)
        pending = list(led_by)
        while pending:
            unit = pending.pop()
            loaded = self._loaded(unit, ordered) if unit in self._loading else ()
            for reached, reader in [*((read, unit) for read in self._reads(unit)), *loaded]:
                if reached in led_by:
                    continue
                led_by[reached] = reader
                if reached in self._doomed:
                    self._doom(reached, led_by)
                    return True
                pending.append(reached)
        return False

    def _doom(self, unit: Unit, led_by: Mapping[Unit, Unit | None]) -> None:
        """Keep as doomed the units whose reads led to the doomed ``unit`` (back to an
        entry or a load, which another program may not make)."""
        while (reader := led_by[unit]) is not None:
            self._doomed.add(reader)
            unit = reader

    def _entered(self, module: str) -> Iterator[Unit]:
        """The units that run when a module is imported, seen or not."""
        yield module, TOP
        if module in self._unseen.wholly:
            yield from self._every_unit(module)
        else:
            yield from ((module, name) for name in self._unseen.named.get(module, ()))

    def _every_unit(self, module: str) -> Iterator[Unit]:
        return ((module, unit) for unit in self._parts.get(module, {}).get("units", ()))

    def _reads(self, unit: Unit) -> list[Unit]:
        found = self._edges.get(unit)
        if found is None:
            found = self._edges[unit] = list(self._resolved(unit))
        return found

    def _resolved(self, unit: Unit) -> Iterator[Unit]:
        module, name = unit
        reads = self._parts.get(module, {}).get("reads", {}).get(name, {})
        yield from ((read_module, read) for read_module, read in reads.get(_UNIT, ()))
        for entered in reads.get(_ENTER, ()):
            yield from self._entered(entered)
        for whole in reads.get(_EVERY, ()):
            yield from self._every_unit(whole)

    def _loaded(self, unit: Unit, modules: list[str]) -> Iterator[tuple[Unit, None]]:
        """What the unit's loads by a computed name run among the program's ``modules``
        (what the program imports: a load by a computed name adds no module to it, as
        ``programs`` reads it): the unit a load reads on its result in each module its
        constant head may name, every unit where none is read by name; each with no
        reader (``starts_group``: another program may load otherwise)."""
        module, name = unit
        for head, attribute in self._parts.get(module, {}).get("loads", {}).get(name, ()):
            for loaded in modules:
                if not loaded.startswith(head) or loaded not in self._parts:
                    continue
                if not attribute:
                    yield from ((found, None) for found in self._every_unit(loaded))
                elif attribute in self._parts[loaded].get("units", ()):
                    yield (loaded, attribute), None


def _units(summary: Summary) -> dict[str, list[list[Any]]]:
    """The summary's units: per unit, ``[own, qualified, loads, looked]``
    (``module_summary``)."""
    units: dict[str, list[list[Any]]] = summary.get("units", {})
    return units


def _starts(name: str) -> bool:
    """Whether a dotted library name is a group starter or inside one."""
    cut = name.find(".")
    while cut != -1:
        if name[:cut] in _STARTERS:
            return True
        cut = name.find(".", cut + 1)
    return name in _STARTERS
