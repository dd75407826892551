"""What linking one module read of the others, name by name.

Name resolution asks other modules' summaries single names (``name in
summary["functions"]``, ``summary["imports"].get(name)``, ``summary["classes"][cls]``).
While a module is linked, the summaries of the other modules are handed out behind
views that note each name asked of the parts name resolution reads (``NAMED_PARTS``),
and the module whole for anything else (a whole part walked, another part read). An
edit that adds or changes names of a module then makes stale only the links that asked
about those names or read it whole (``changed_names``, ``asks_about``): an import added
under a new name leaves its importers' links as they were.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

#: The parts of a summary name resolution reads (``index.resolution_inputs``), each
#: asked by name. Of ``functions`` only the names are resolution's: a function's own
#: part read counts as the module read whole.
NAMED_PARTS = ("imports", "functions", "classes", "instances")
_ABSENT = object()


class Touched:
    """The project modules name resolution read or asked about while linking one
    module: when one of them goes or moves, that module's links are stale (``names``);
    the names asked of each (``named``), and those read beyond single names
    (``whole``): when one of those changes, they are stale; and those whose other
    parts it read (what a function does, its parameters: ``read``): when one of them
    changes at all, they are stale. (Names asked about and absent are not kept: a
    module that comes makes every link stale.)"""

    def __init__(self) -> None:
        self.names: set[str] | None = None
        self.named: dict[str, set[str]] = {}
        self.whole: set[str] = set()
        self.read: set[str] = set()
        #: The module being linked (its own summary is read as it is).
        self.linking: str | None = None
        #: The views handed out while linking it, by module.
        self._views: dict[str, _NamedSummary] = {}
        #: Whether every module asked about now is read (``reading``).
        self._reading = False

    def start(self, module: str) -> None:
        """Begin noting what linking ``module`` asks."""
        self.stop()
        self.names, self.linking = {module}, module
        self.named, self.whole, self.read = {}, set(), set()

    def stop(self) -> None:
        for view in self._views.values():
            view.retire()
        self.names, self.linking, self._views = None, None, {}

    def add(self, name: str) -> None:
        if self.names is not None:
            self.names.add(name)
            if self._reading:
                self.read.add(name)

    def add_read(self, name: str) -> None:
        """A module whose parts beyond its names were read."""
        if self.names is not None:
            self.names.add(name)
            self.read.add(name)

    def note(self, module: str, name: str) -> None:
        """A name asked of a module's named parts."""
        if self.names is not None:
            found = self.named.get(module)
            if found is None:
                found = self.named[module] = set()
            found.add(name)

    def note_whole(self, module: str) -> None:
        """A module read beyond single names."""
        if self.names is not None:
            self.whole.add(module)

    def view(self, module: str, summary: dict[str, Any]) -> Mapping[str, Any]:
        """``module``'s summary as linking now reads it: as it is for the module being
        linked, one read wholly, or when nothing is noted; else a ``_NamedSummary``."""
        if self.names is None or self._reading or module == self.linking:
            return summary
        found = self._views.get(module)
        if found is None:
            found = self._views[module] = _NamedSummary(summary, module, self)
        return found

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Every module asked about inside counts as read."""
        self._reading = True
        try:
            yield
        finally:
            self._reading = False


class _NamedSummary(Mapping[str, Any]):
    """A summary whose named parts note each name asked; any other part read notes
    the module whole."""

    def __init__(self, summary: dict[str, Any], module: str, touched: Touched) -> None:
        self._summary, self._module, self._touched = summary, module, touched
        self._parts: dict[str, _NamedPart] = {}
        #: The names asked of the module while the module that asked is linked.
        self._names: set[str] | None = touched.named.setdefault(module, set())

    def retire(self) -> None:
        """The link that asked is done: a name asked later is told to ``Touched``."""
        self._names = None

    def __getitem__(self, part: str) -> Any:
        found = self._parts.get(part)
        if found is not None:
            return found
        if part in NAMED_PARTS and part in self._summary:
            found = self._parts[part] = _NamedPart(self._summary[part], part != "functions", self)
            return found
        self.whole()
        return self._summary[part]

    def __iter__(self) -> Iterator[str]:
        self.whole()
        return iter(self._summary)

    def __len__(self) -> int:
        self.whole()
        return len(self._summary)

    def whole(self) -> None:
        self._touched.note_whole(self._module)

    def note(self, name: object) -> None:
        if not isinstance(name, str) or not name or " " in name:
            self.whole()  # not a name a record can keep apart from others
        elif self._names is not None:
            self._names.add(name)
        else:
            self._touched.note(self._module, name)


class _NamedPart(Mapping[str, Any]):
    """One named part of a summary: a name asked (present or not) is noted; walking
    the part, or reading a function's own part, notes the module whole."""

    def __init__(self, part: dict[str, Any], values: bool, owner: _NamedSummary) -> None:
        """``values``: whether a value read is resolution's (a function's own part is
        not)."""
        self._part, self._values, self._owner = part, values, owner

    def __getitem__(self, name: str) -> Any:
        if self._values:
            self._owner.note(name)
        else:
            self._owner.whole()
        return self._part[name]

    def __contains__(self, name: object) -> bool:
        self._owner.note(name)
        return name in self._part

    def __iter__(self) -> Iterator[str]:
        self._owner.whole()
        return iter(self._part)

    def __len__(self) -> int:
        self._owner.whole()
        return len(self._part)


def asked_by_module(
    names: set[str], named: Mapping[str, set[str]], whole: set[str]
) -> dict[str, str]:
    """Per module asked about (``names``), what was asked of it, as a record keeps it:
    ``*`` for a module read beyond single names (``whole``), else the names asked of
    it (``named``) joined by spaces ("" for a module asked about only by its name)."""
    return {
        module: "*" if module in whole else " ".join(sorted(named.get(module, ())))
        for module in sorted(names | named.keys() | whole)
    }


def asks_about(asked: Mapping[str, str], changed: Mapping[str, set[str]]) -> bool:
    """Whether a module's linking, which asked ``asked`` (``asked_by_module``), asked
    a name that changed (``changed``: per module whose exports changed, its
    ``changed_names``) or read one of those modules whole."""
    for module, names in changed.items():
        found = asked.get(module)
        if found is not None and (found == "*" or not names.isdisjoint(found.split(" "))):
            return True
    return False


def changed_names(before: Mapping[str, Any], after: Mapping[str, Any]) -> set[str]:
    """The names an edit from summary ``before`` to ``after`` changed in the parts name
    resolution reads: each that came, went or is bound otherwise in one of them (of
    ``functions``: came or went)."""
    found: set[str] = set()
    for part in NAMED_PARTS:
        old, new = before.get(part, {}), after.get(part, {})
        if part == "functions":
            differ = old.keys() ^ new.keys()
        else:
            differ = {
                name
                for name in old.keys() | new.keys()
                if old.get(name, _ABSENT) != new.get(name, _ABSENT)
            }
        found.update(differ)
    return found
