"""Incremental linking: which modules' links an earlier run's still serve.

A run that links the project keeps, in the result cache, every source's content hash,
and per module its path, a digest of what name resolution reads of it
(``index.resolution_inputs``), the module names linking it asked about, its links
(``ProjectIndex.link``: with what the project-wide questions read of it, resolved), and
the modules whose other parts linking it read (what a function does, its parameters).
The next run after an edit re-summarises the files whose bytes changed and links again
only the modules whose bytes changed, the modules whose linking asked about a module
that went, moved, or changed what it exports (its importers, along the names their
imports lead through), and those whose linking read a module whose bytes changed;
every other module keeps its links. A module that came links every module again
(which names were asked about and not found is not kept). The fixpoints and the
project-wide questions then run over all links, so the facts equal a fresh link's.
A module that changed what it exports makes stale only the modules that asked about
the names that changed, or read it beyond single names (``touched``), where the
summary the earlier link read is still in the cache (else every module that asked
about it).
The state is kept as records by name (``state_records``: a source's, a module's, the
folders a module puts on ``sys.path``) in a
``cache.LayeredEntry``, so that a run that links a few modules again writes their
records, not every module's links.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ddplint.code.project.encoding import FACTS_VERSION, SUMMARY_VERSION
from ddplint.code.project.index import (
    KeptLinks,
    Links,
    ProjectIndex,
    inserted_by_path,
    module_paths,
    resolution_inputs,
)
from ddplint.code.project.summaries import Summary
from ddplint.code.project.touched import asks_about, changed_names

#: Version of the links' layout (``ProjectIndex.link``) and of this entry (8: records by
#: name in a layered entry; 9: the folders modules put on ``sys.path`` among them; 10:
#: the names each module's linking asked of the others; 11: a program part is distributed
#: by the names it reads, not those it imports; a forwarding function's parameters and
#: literal defaults).
LINKS_VERSION = "11"
#: The cache key of the kept links (one per cache: the project's latest link).
LINKS_KEY = f"project-links:{SUMMARY_VERSION}.{FACTS_VERSION}.{LINKS_VERSION}"
#: A run that linked at most this many modules again leaves the kept links as they
#: were: the next run links those few again (a few milliseconds each), which costs
#: less than writing every module's links (tens of milliseconds on NeMo); a pre-commit
#: run on a file edited inside its functions links one module.
REWRITE_AFTER = 4
#: The prefixes of the state's records: a source's (by relative path), a module's, and
#: the folders a module (by path) puts on ``sys.path``.
_SOURCE, _MODULE, _INSERTED = "source:", "module:", "inserted:"


def resolution_digest(summary: Summary) -> str:
    """A digest of what name resolution reads of a module's summary."""
    text = json.dumps(resolution_inputs(summary), separators=(",", ":"))
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


@dataclass(frozen=True)
class _KeptModule:
    path: str
    digest: str
    links: Links
    read: frozenset[str]
    #: Per module asked about, the names asked of it (``touched.asked_by_module``).
    named: dict[str, str]

    @property
    def asked(self) -> frozenset[str]:
        return frozenset(self.named)


@dataclass(frozen=True)
class LinkState:
    """An earlier link: each source's content hash and whether it has a summary (a
    file ``ast`` cannot read has none), the kept modules by name, and by path the
    folders modules put on ``sys.path`` (``ProjectIndex.inserted``)."""

    sources: dict[str, tuple[str, bool]]
    modules: dict[str, _KeptModule]
    inserted: dict[str, list[str]]

    @classmethod
    def read(cls, records: Mapping[str, Any]) -> LinkState | None:
        """The state ``state_records`` kept; None when there is none or one of another
        shape."""
        sources: dict[str, tuple[str, bool]] = {}
        modules: dict[str, _KeptModule] = {}
        inserted: dict[str, list[str]] = {}
        try:
            for name, value in records.items():
                if name.startswith(_SOURCE):
                    sources[name[len(_SOURCE) :]] = (str(value[0]), bool(value[1]))
                elif name.startswith(_MODULE):
                    modules[name[len(_MODULE) :]] = _kept(value)
                elif name.startswith(_INSERTED) and isinstance(value, list):
                    inserted[name[len(_INSERTED) :]] = [str(folder) for folder in value]
                else:
                    return None
        except (TypeError, ValueError, IndexError, KeyError):
            return None
        return cls(sources, modules, inserted) if sources else None

    def changed(self, hashes: Mapping[str, str]) -> list[str]:
        """The sources whose bytes differ from this state's, or that are new."""
        return [path for path, hash_ in hashes.items() if self.sources.get(path, ("",))[0] != hash_]

    def summarised(
        self, hashes: Mapping[str, str], built: Mapping[str, Summary | None]
    ) -> list[str]:
        """The sources that have a summary now: ``built`` for the changed ones (their
        summaries, None for none), this state's word for the others."""
        return [
            path
            for path in hashes
            if (built[path] is not None if path in built else self.sources[path][1])
        ]

    def inserted_now(
        self, project: list[str], built: Mapping[str, Summary | None]
    ) -> dict[str, list[str]]:
        """By path, the folders the modules of ``project`` put on ``sys.path``: the
        changed ones' from their new summaries, the others' as this state kept them."""
        kept = {path: folders for path, folders in self.inserted.items() if path not in built}
        now = inserted_by_path({path: built[path] or {} for path in built})
        present = set(project)
        return {path: folders for path, folders in {**kept, **now}.items() if path in present}

    def kept(
        self,
        project: list[str],
        built: Mapping[str, Summary | None],
        earlier: Callable[[str], Summary | None],
    ) -> dict[str, KeptLinks]:
        """The links still valid for a project of the paths ``project`` (each with a
        summary), ``built`` holding the summaries of the sources that changed;
        ``earlier`` gives the summary this state's link read of a source by its
        content hash (None when it cannot be had)."""
        now = module_paths(project)
        if now.keys() - self.modules.keys():
            return {}  # a module came: what asked for its name before is not known
        if self.inserted_now(project, built) != self.inserted:
            return {}  # the folders on ``sys.path`` changed: any import may read another
        stale, edited = set(), set()
        renamed: dict[str, set[str]] = {}
        for name, old in self.modules.items():
            path = now.get(name)
            if path is None or old.path != path:
                stale.add(name)  # went, or moved (a package beside a module)
            elif path in built:
                edited.add(name)
                summary = built[path] or {}
                if resolution_digest(summary) != old.digest:  # exports other names
                    before = earlier(self.sources[path][0])
                    if before is None:
                        stale.add(name)
                    else:
                        renamed[name] = changed_names(before, summary)
        return {
            name: (old.links, old.asked, old.read, old.named)
            for name, old in self.modules.items()
            if now.get(name) == old.path
            and old.path not in built
            and old.named.keys().isdisjoint(stale)
            and not old.read & edited
            and not asks_about(old.named, renamed)
        }


def _kept(value: Any) -> _KeptModule:
    path, digest, named, links, read = value
    if not (isinstance(path, str) and isinstance(digest, str) and isinstance(links, dict)):
        raise TypeError("not a kept module")
    if not (isinstance(named, dict) and all(isinstance(v, str) for v in named.values())):
        raise TypeError("not the names a module asked")
    if not isinstance(links.get("functions"), dict) or not isinstance(links.get("classes"), dict):
        raise TypeError("not a module's links")
    return _KeptModule(path, digest, links, frozenset(map(str, read)), named)


def state_records(
    index: ProjectIndex,
    hashes: Mapping[str, str],
    summarised: set[str],
    previous: LinkState | None,
) -> dict[str, Any]:
    """The records of ``index``'s links by name (``LinkState.read``): per source its
    content hash and whether it has a summary, per module its path, resolution digest,
    the names it asked of each module (``touched.asked_by_module``: the modules it asked
    about are their keys), its links and the modules it read, and per module that
    puts folders on ``sys.path`` those folders. The digest of a module linked again is
    computed from its summary (read while linking), a kept one's is the previous one."""
    records: dict[str, Any] = {
        _SOURCE + path: [hash_, path in summarised] for path, hash_ in hashes.items()
    }
    linked = set(index.linked)
    for name, path in index.paths.items():
        if name in linked or previous is None:
            digest = resolution_digest(index.summaries[name])
        else:
            digest = previous.modules[name].digest
        records[_MODULE + name] = [
            path,
            digest,
            index.named[name],
            index.links[name],
            sorted(index.read[name]),
        ]
    records.update((_INSERTED + path, folders) for path, folders in index.inserted.items())
    return records
