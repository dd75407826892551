"""``${...}`` interpolations between keys, resolved by OmegaConf without running code.

Only node interpolations are resolved (``${model.sample_rate}``, ``${..batch_size}``,
``${name}-{step}``). A resolver call (``${oc.env:HOME}``, ``${now:...}``, any custom
resolver) is never run: the string is replaced by ``???`` before OmegaConf sees it, so
its value, and every value interpolating it, is unknown. OmegaConf does not instantiate
``_target_``; nothing else is built.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from lint.config.values import UNKNOWN, expanded_size, plain_scalar, plain_tree

# ``${name:`` opens a resolver call; node interpolations never hold a colon.
_RESOLVER_CALL = re.compile(r"\$\{\s*[A-Za-z_][\w.\-]*\s*:")
_KEY_OK = re.compile(r"^[A-Za-z_][\w\-]*$")


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


class Resolver:
    """OmegaConf view of one document, built on first use."""

    def __init__(self, root: Any) -> None:
        self._root = root
        self._config: Any = None
        self._built = False

    def _omegaconf(self) -> Any:
        if not self._built:
            self._built = True
            if isinstance(self._root, Mapping) and expanded_size(self._root) is not None:
                try:
                    self._config = OmegaConf.create(plain_tree(self._root, _without_resolvers))
                except OmegaConfBaseException:
                    self._config = None
        return self._config

    def resolve(self, path: tuple[str | int, ...]) -> Any:
        """The resolved scalar at ``path``, or UNKNOWN."""
        key = _select_key(path)
        config = self._omegaconf()
        if key is None or config is None:
            return UNKNOWN
        try:
            value = OmegaConf.select(config, key, throw_on_missing=True)
        except OmegaConfBaseException:
            return UNKNOWN
        if value is None or isinstance(value, (str, int, float, bool)):
            return value
        return UNKNOWN
