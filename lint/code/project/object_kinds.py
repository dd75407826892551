"""Object types across the project: the kind (``analysis.object_kinds``) of what a
project name makes or holds, from allocation sites, not from names.

A project class has the kind of its first base that has one, through the project's class
hierarchy across modules down to the library catalogue (``class Backbone(nn.Module)`` in one
file, ``class Head(Backbone)`` in another: a module); a class whose bases are all known and
none catalogued is an ``OBJECT``; one whose own ``__iter__`` loops forever an
``ENDLESS_ITERABLE`` (``object_kinds.iterating_kind``), as is a generator function that
does. A project function has the kind of what it returns (``return Accelerator(...)``,
``acc = Accelerator(); return acc``, the engine of ``engine, *_ = deepspeed.initialize(...)``,
another project function's or class's result) when every returned allocation agrees; a
``self.x`` field the kind of what the methods of its class and of its project bases assign
it (``self.x, *_ = deepspeed.initialize(...)`` in a base class: the engine), unknown ones
left out; a module-level instance its class's kind; a parameter the kind every project call
of its function passes there (``train(model, acc)`` after ``acc = Accelerator()``), when
each passes an allocation of that one kind.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ddplint.analysis.names import BUILTIN_NAMES
from ddplint.analysis.object_kinds import (
    ENDLESS_ITERABLE,
    ENGINE,
    FIRST_ARGUMENT_ITEMS,
    OBJECT,
    is_deepspeed_initialize,
    iterating_kind,
    library_kind,
)
from ddplint.code.project.programs import Part
from ddplint.code.project.summaries import Summary, qualify

if TYPE_CHECKING:
    from ddplint.code.project.index import FunctionKey, ProjectIndex, Symbol

#: Bound on the chain of classes and factories followed for one kind.
_MAX_DEPTH = 12
#: Bases that make a class no object of the frameworks (``ABC``, ``Generic``, ``Enum``).
_PLAIN_MODULES = ("abc.", "typing.", "enum.", "collections.", "dataclasses.")
_UNKNOWN = "?"


class ProjectKinds:
    """Kinds of project symbols, each computed once."""

    def __init__(self, index: ProjectIndex) -> None:
        self._index = index
        self._known: dict[tuple[str, ...], str] = {}

    def of_symbol(self, symbol: Symbol, depth: int = 0) -> str | None:
        """The kind of object ``symbol`` makes (a class, a function) or holds (an
        instance, a ``self.x`` field); None when unknown."""
        if symbol in self._known:
            found = self._known[symbol]
            return None if found == _UNKNOWN else found
        self._known[symbol] = _UNKNOWN  # a cycle stays unknown
        kind = self._compute(symbol, depth) if depth <= _MAX_DEPTH else None
        self._known[symbol] = _UNKNOWN if kind is None else kind
        return kind

    def _compute(self, symbol: Symbol, depth: int) -> str | None:
        what, module = symbol[0], symbol[1]
        if what in ("class", "instance"):
            return self._class_kind(module, symbol[2], depth)
        if what == "function":
            return self._returned_kind(module, symbol[2], depth)
        if what == "attribute":
            cls, attribute = symbol[2], symbol[3]
            return _agreed(
                kind
                for owner_module, owner in self._index.mro(module, cls)
                for kind in self._assigned_kinds(owner_module, owner, attribute, depth)
            )
        return None

    def _assigned_kinds(
        self, module: str, cls: str, attribute: str, depth: int
    ) -> Iterator[str | None]:
        """The kinds of what the methods of one class of a field's class hierarchy
        assign it: a call's result, or the engine of ``self.x, *_ =
        deepspeed.initialize(...)``."""
        summary = self._index.summaries[module]["classes"].get(cls, {})
        for callee in summary.get("attribute_calls", {}).get(attribute, ()):
            yield self.of_spelled(callee, module, cls, depth + 1)
        imports = self._index.summaries[module]["imports"]
        for callee in summary.get("first_items", {}).get(attribute, ()):
            if is_deepspeed_initialize(qualify(callee, imports)):
                yield ENGINE

    def of_spelled(
        self, name: str, module: str, owner: str | None = None, depth: int = 0
    ) -> str | None:
        """The kind of what ``name`` (as written in ``module``, inside class ``owner``)
        makes when called: a project symbol's, or the library catalogue's."""
        symbol = self._index.spelled(name, module, owner)
        if symbol is not None:
            return self.of_symbol(symbol, depth + 1)
        qualified = qualify(name, self._index.summaries[module]["imports"])
        return library_kind(qualified) if qualified is not None else None

    def _class_kind(self, module: str, cls: str, depth: int) -> str | None:
        summary = self._index.summaries[module]["classes"].get(cls)
        if summary is None:
            return None
        functions = self._index.summaries[module]["functions"]
        own_iteration = _iteration_kind(
            functions.get(f"{cls}.__iter__"), summary.get("parameter_attributes", {})
        )
        known = True
        for base in summary["bases"]:
            kind = self.of_spelled(base, module, None, depth + 1)
            if kind is not None and kind != OBJECT:
                return iterating_kind(kind, own_iteration)
            if kind is None and not self._plain_base(base, module):
                known = False
        return iterating_kind(OBJECT if known else None, own_iteration)

    def _plain_base(self, base: str, module: str) -> bool:
        """``object``, ``ABC``, ``Generic``, ``Exception``: a base of no framework."""
        qualified = qualify(base, self._index.summaries[module]["imports"])
        if qualified is None:
            return base in BUILTIN_NAMES
        return qualified.startswith(_PLAIN_MODULES)

    def _returned_kind(self, module: str, name: str, depth: int) -> str | None:
        function = self._index.summaries[module]["functions"].get(name)
        if function is None:
            return None
        if function.get("endless"):
            return ENDLESS_ITERABLE
        parameters = function.get("params", ())
        if function.get("draws") is not None and function.get("draws") in parameters[:1]:
            return FIRST_ARGUMENT_ITEMS
        owner = function.get("owner")
        kinds: list[str | None] = [
            self.of_spelled(callee, module, owner, depth + 1)
            for callee in function.get("return_calls", ())
        ]
        for callee, item in function.get("returned_made", ()):
            if item == -1:
                kinds.append(self.of_spelled(callee, module, owner, depth + 1))
            elif item == 0 and is_deepspeed_initialize(
                qualify(callee, self._index.summaries[module]["imports"])
            ):
                kinds.append(ENGINE)
        return _agreed(kinds)


def passed_kinds(index: ProjectIndex, module: str) -> list[list[Any]]:
    """Per project function parameter the module's functions pass an allocation in,
    the allocation's kind: ``[module, function, position, kind or None]`` (what
    ``parameter_kinds`` reads of the module, with ``call_sites``)."""
    kinds = ProjectKinds(index)
    return [
        [*key, position, kinds.of_spelled(allocation, module, owner)]
        for key, position, owner, allocation in index.handed_allocations(module)
    ]


def call_sites(index: ProjectIndex, module: str) -> list[list[Any]]:
    """The project functions the module's calls run, counted by the last part of the
    name called ("" where it is the function's own) and whether the name begins with a
    capital: ``[module, function, last part, capital, count]``."""
    sites: Counter[tuple[str, str, str, bool]] = Counter()
    for owner, target in _calls(index.summaries[module]):
        key = index.called_key(target, module, owner)
        if key is not None:
            last = target.rpartition(".")[2]
            own = last == key[1].rpartition(".")[2]
            sites[(*key, "" if own else last, target[:1].isupper())] += 1
    return [[*site, count] for site, count in sites.items()]


def parameter_kinds(parts: Iterable[Part]) -> dict[FunctionKey, dict[int, str]]:
    """Per function, the kind of each parameter (by position, ``self`` not counted)
    that every project call of it passes an allocation of that kind in, from each
    module's ``passed_kinds`` (``made``) and ``call_sites`` (``sites``)."""
    read = list(parts)
    passed: dict[tuple[FunctionKey, int], list[str | None]] = {}
    for part in read:
        for module, name, position, kind in part.get("made", ()):
            passed.setdefault(((module, name), position), []).append(kind)
    if not passed:
        return {}
    callees = {key for key, _ in passed}
    last_names = {key[1].rpartition(".")[2] for key in callees} | {"__init__"}
    sites: Counter[FunctionKey] = Counter()
    for part in read:
        for module, name, last, capital, count in part.get("sites", ()):
            key = (module, name)
            if key in callees and (capital or (last or name.rpartition(".")[2]) in last_names):
                sites[key] += count
    found: dict[FunctionKey, dict[int, str]] = {}
    for (key, position), kinds in passed.items():
        agreed = kinds[0]
        if agreed in (None, OBJECT) or len(kinds) != sites[key] or set(kinds) != {agreed}:
            continue
        found.setdefault(key, {})[position] = agreed
    return found


def _calls(summary: Summary) -> Iterator[tuple[str | None, str]]:
    """Each call of a module (its functions', then its top level's): the class whose
    method makes it, and the name called."""
    for function in summary["functions"].values():
        for target, _line in function["calls"]:
            yield function["owner"], target
    for target, _line in summary.get("top", {}).get("calls", ()):
        yield None, target


def _iteration_kind(iteration: Summary | None, kept: dict[str, list[list[Any]]]) -> str | None:
    """What a class's own ``__iter__`` (its summary) makes: an endless iterable, the
    items of the first argument ``__init__`` keeps in the field it draws (``kept``: the
    class summary's ``parameter_attributes``), or an iteration that ends (``OBJECT``);
    None when the class defines none."""
    if iteration is None:
        return None
    if iteration.get("endless"):
        return ENDLESS_ITERABLE
    drawn = iteration.get("draws")
    field = drawn.removeprefix("self.") if isinstance(drawn, str) else None
    if field is not None and field != drawn and ["__init__", 0] in kept.get(field, []):
        return FIRST_ARGUMENT_ITEMS
    return OBJECT


def _agreed(kinds: Iterable[str | None]) -> str | None:
    """The one kind the known ``kinds`` agree on; None when none is known or they
    differ."""
    known = {kind for kind in kinds if kind is not None}
    return known.pop() if len(known) == 1 else None
