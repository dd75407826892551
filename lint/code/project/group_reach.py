"""Whether a program's entry can reach code that starts a process group.

A program runs the top level of every module it imports (``programs``); from there it
runs what that code names: a top-level function or class of the project (a call, a
callback, a base class: any read), and what those name in turn, a class with all its
methods. A module's *unit* is one of its top-level functions or classes, or the rest of
its top level (``""``); what each unit reads is the summary's ``units``. A unit *starts
a group* when it reads a group starter (``api.GROUP_STARTERS``) other than as the class
of a type test. A program whose imports hold a starter that nothing its entry reaches
reads is one process: the helper that starts the group is imported but never run
(``from utils import setup_ddp, AverageMeter`` where only the meter is used).

Where analysis cannot see a reference, every unit it may reach is taken: each unit of a
module star-imported, looking its own names up, looked up or loaded by a computed name
(among the program's imports: such a load adds no module to them, as ``programs`` reads
it);
a unit a string names (``getattr(m, "f")``, a config's ``_target_``) or a registering
decorator marks (``reach.Unseen``). A read the index cannot resolve reaches every
module whose name ends as it does (``reach.LooseImports``), and a name of a module that
is none of its units (a re-export the index does not follow, a name bound at run time)
reaches every unit of that module.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ddplint.analysis.api import GROUP_STARTERS
from ddplint.code.project.reach import LooseImports, Project, Unseen
from ddplint.code.project.summaries import Summary

#: A module and one of its units: a top-level function or class, or ``""``.
Unit = tuple[str, str]
#: The unit of the module's top level outside its functions and classes.
TOP = ""
_STARTERS = frozenset(GROUP_STARTERS)


class GroupReach:
    """Which units start a group, and which units a program's entry reaches."""

    def __init__(self, project: Project, unseen: Unseen) -> None:
        self._project = project
        self._unseen = unseen
        self._loose = LooseImports(project, list(project.paths))
        self._edges: dict[Unit, list[Unit]] = {}
        self._starting = {
            (module, unit)
            for module in project.paths
            for unit, (_, qualified, *_) in _units(project.summaries[module]).items()
            if any(_starts(name) for name in qualified)
        }
        self._starting_modules = {module for module, _ in self._starting}

    def starts_group(self, modules: Iterable[str]) -> bool:
        """Whether running the top levels of ``modules`` (a program's imports) reaches
        a unit that starts a group."""
        modules = set(modules)
        if not modules & self._starting_modules:
            return False
        pending = [unit for module in modules for unit in self._entered(module)]
        seen = set(pending)
        while pending:
            unit = pending.pop()
            if unit in self._starting:
                return True
            for reached in [*self._reads(unit), *self._loaded(unit, modules)]:
                if reached not in seen:
                    seen.add(reached)
                    pending.append(reached)
        return False

    def _entered(self, module: str) -> Iterator[Unit]:
        """The units that run when a module is imported, seen or not."""
        yield module, TOP
        if module in self._unseen.wholly:
            yield from self._every_unit(module)
        else:
            yield from ((module, name) for name in self._unseen.named.get(module, ()))

    def _every_unit(self, module: str) -> Iterator[Unit]:
        return ((module, unit) for unit in _units(self._project.summaries[module]))

    def _reads(self, unit: Unit) -> list[Unit]:
        found = self._edges.get(unit)
        if found is None:
            found = self._edges[unit] = list(self._resolved(unit))
        return found

    def _resolved(self, unit: Unit) -> Iterator[Unit]:
        module, name = unit
        summary = self._project.summaries.get(module)
        if summary is None:
            return
        own, qualified, _, looked = _units(summary).get(name, ((), (), (), ()))
        yield from ((module, read) for read in own)
        for read in qualified:
            for symbol in self._loose.symbols(read, module):
                yield from self._units_of(symbol)
        for receiver in looked:
            if not receiver:
                yield from self._every_unit(module)
            for symbol in self._loose.symbols(receiver, module) if receiver else ():
                if symbol[0] == "module":
                    yield from self._every_unit(symbol[1])
                else:
                    yield from self._units_of(symbol)

    def _loaded(self, unit: Unit, modules: set[str]) -> Iterator[Unit]:
        """What the unit's loads by a computed name run among the program's ``modules``
        (what the program imports: a load by a computed name adds no module to it, as
        ``programs`` reads it): the unit a load reads on its result in each module its
        constant head may name, every unit where none is read by name."""
        module, name = unit
        summaries = self._project.summaries
        loads = (
            _units(summaries[module]).get(name, ((), (), (), ()))[2] if module in summaries else ()
        )
        for head, attribute in loads:
            for loaded in sorted(modules):
                if not loaded.startswith(head) or loaded not in summaries:
                    continue
                if not attribute:
                    yield from self._every_unit(loaded)
                elif attribute in _units(summaries[loaded]):
                    yield loaded, attribute

    def _units_of(self, symbol: tuple[str, ...]) -> Iterator[Unit]:
        """The units a project symbol (``ProjectIndex.lookup``'s answer) names."""
        kind, module = symbol[0], symbol[1]
        if kind == "module":
            yield from self._entered(module)
            return
        name = symbol[2].partition(".")[0]
        summary = self._project.summaries[module]
        if kind != "name" or name in summary.get("functions", {}) or name in summary["classes"]:
            yield module, name
        else:
            yield from self._every_unit(module)


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
