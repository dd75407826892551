"""``${...}`` interpolations between keys, resolved by OmegaConf without running code.

Only node interpolations are resolved (``${model.sample_rate}``, ``${..batch_size}``,
``${name}-{step}``). A resolver call (``${oc.env:HOME}``, ``${now:...}``, any custom
resolver) is never run: the string is replaced by ``???`` before OmegaConf sees it, so
its value, and every value interpolating it, is unknown. OmegaConf does not instantiate
``_target_``; nothing else is built.

OmegaConf does not remember what it resolved: ``b: ${a}${a}``, ``c: ${b}${b}``, ... doubles
its work per level (an interpolation bomb). Before asking it, the interpolations a value
leads to are counted, each once (``resolution_steps``); above ``MAX_RESOLUTION_STEPS``,
or through a chain longer than ``MAX_CHAIN``, the value is unknown.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from ddplint.config.values import UNKNOWN, expanded_size, plain_scalar, plain_tree

# ``${name:`` opens a resolver call; node interpolations never hold a colon.
_RESOLVER_CALL = re.compile(r"\$\{\s*[A-Za-z_][\w.\-]*\s*:")
_KEY_OK = re.compile(r"^[A-Za-z_][\w\-]*$")
# ``${model.train_ds.bs}``, ``${..bs}``, ``${a.b[0]}``: a node interpolation, nothing nested.
_NODE_INTERPOLATION = re.compile(r"\$\{\s*(\.*)([^${}\s]*)\s*\}")
_INDEX = re.compile(r"\[(\d+)\]")

#: Most interpolations OmegaConf may follow to resolve one value (real configs need a few).
MAX_RESOLUTION_STEPS = 1000
#: Longest chain of interpolations (``a: ${b}``, ``b: ${c}``, ...) followed.
MAX_CHAIN = 64

NodePath = tuple[str | int, ...]


def has_interpolation(value: Any) -> bool:
    return isinstance(value, str) and "${" in value


def _without_resolvers(value: Any) -> Any:
    plain = plain_scalar(value)
    if plain is UNKNOWN:
        return "???"
    if isinstance(plain, str) and _RESOLVER_CALL.search(plain):
        return "???"
    return plain


def _select_key(path: tuple[str | int, ...]) -> str | None:
    parts: list[str] = []
    for key in path:
        if isinstance(key, int) and not isinstance(key, bool):
            if not parts:
                return None
            parts[-1] += f"[{key}]"
        elif isinstance(key, str) and _KEY_OK.match(key):
            parts.append(key)
        else:
            return None
    return ".".join(parts)


def _references(value: str) -> list[tuple[int, list[str | int]]] | None:
    """The node interpolations in ``value``: (leading dots, key parts); None when it
    holds ``${`` that is not one (a nested interpolation)."""
    found = []
    for match in _NODE_INTERPOLATION.finditer(value):
        parts: list[str | int] = []
        for part in match.group(2).split(".") if match.group(2) else []:
            name = _INDEX.split(part)
            parts.append(name[0])
            parts.extend(int(i) for i in name[1::2])
        found.append((len(match.group(1)), [p for p in parts if p != ""]))
    if len(found) != value.count("${"):
        return None
    return found


def _child(node: Any, key: str | int) -> tuple[bool, Any]:
    if isinstance(node, Mapping):
        for candidate in (key, int(key) if isinstance(key, str) and key.isdigit() else None):
            if candidate is not None and candidate in node:
                return True, node[candidate]
        return False, None
    if isinstance(node, list):
        index = int(key) if isinstance(key, str) and key.isdigit() else key
        if isinstance(index, int) and 0 <= index < len(node):
            return True, node[index]
    return False, None


class _Unbounded(Exception):
    """Resolving the value may take too long (or never end)."""


class Resolver:
    """OmegaConf view of one document, built on first use."""

    def __init__(self, root: Any) -> None:
        self._root = root
        self._tree: Any = None
        self._config: Any = None
        self._built = False
        self._steps: dict[NodePath, int] = {}

    def _omegaconf(self) -> Any:
        if not self._built:
            self._built = True
            if isinstance(self._root, Mapping) and expanded_size(self._root) is not None:
                self._tree = plain_tree(self._root, _without_resolvers)
                try:
                    self._config = OmegaConf.create(self._tree)
                except (OmegaConfBaseException, RecursionError):  # too deep for OmegaConf
                    self._config = None
        return self._config

    def _node(self, path: NodePath) -> tuple[bool, Any]:
        node = self._tree
        for key in path:
            found, node = _child(node, key)
            if not found:
                return False, None
        return True, node

    def resolution_steps(self, path: NodePath) -> int | None:
        """How many interpolations resolving the value at ``path`` follows, each counted
        once; None when above ``MAX_RESOLUTION_STEPS``, through a chain longer than
        ``MAX_CHAIN``, circular, or not understood."""
        if self._omegaconf() is None:
            return None
        try:
            return self._count(path, set())
        except _Unbounded:
            return None

    def _count(self, path: NodePath, chain: set[NodePath]) -> int:
        if path in self._steps:
            return self._steps[path]
        if path in chain or len(chain) >= MAX_CHAIN:
            raise _Unbounded
        found, value = self._node(path)
        if not found:
            raise _Unbounded
        steps = 0
        if isinstance(value, str) and "${" in value:
            references = _references(value)
            if references is None:
                raise _Unbounded
            chain.add(path)
            for dots, parts in references:
                base = path[: len(path) - dots] if dots else ()
                steps += 1 + self._count((*base, *parts), chain)
                if steps > MAX_RESOLUTION_STEPS:
                    raise _Unbounded
            chain.discard(path)
        self._steps[path] = steps
        return steps

    def resolve(self, path: tuple[str | int, ...]) -> Any:
        """The resolved scalar at ``path``, or UNKNOWN."""
        key = _select_key(path)
        config = self._omegaconf()
        if key is None or config is None or self.resolution_steps(path) is None:
            return UNKNOWN
        try:
            value = OmegaConf.select(config, key, throw_on_missing=True)
        except OmegaConfBaseException:
            return UNKNOWN
        if value is None or isinstance(value, (str, int, float, bool)):
            return value
        return UNKNOWN
