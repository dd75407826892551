"""Plain Python values from ruamel's round-trip objects, bounded against alias bombs.

ruamel keeps an alias as a shared reference, so loading a "billion laughs" document is
cheap; anything that copies the tree (``OmegaConf.create``, a comparison of two trees)
would expand it. ``expanded_size`` measures that expansion without doing it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ruamel.yaml.scalarbool import ScalarBoolean


class _Marker:
    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name

    def __bool__(self) -> bool:
        return False


#: A value that exists but cannot be known statically (a resolver, a custom tag, ``???``).
UNKNOWN: Any = _Marker("UNKNOWN")
#: A key that is not there.
ABSENT: Any = _Marker("ABSENT")

#: Largest tree (nodes after alias expansion) that is ever copied.
MAX_EXPANDED_NODES = 50_000


def plain_scalar(value: Any) -> Any:
    """``None``/bool/int/float/str for a YAML scalar; UNKNOWN for anything else
    (a tagged scalar, a timestamp, binary data)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, ScalarBoolean):  # an anchored bool: an int subclass in ruamel
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    return UNKNOWN


def positive_int(value: Any) -> int | None:
    """``value`` when it is a whole number above 0 (not a bool), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def is_container(value: Any) -> bool:
    return isinstance(value, (Mapping, list))


def children(value: Any) -> list[Any]:
    if isinstance(value, Mapping):
        return list(value.values())
    if isinstance(value, list):
        return list(value)
    return []


def expanded_size(root: Any, limit: int = MAX_EXPANDED_NODES) -> int | None:
    """Nodes in ``root`` with every alias expanded, or None when above ``limit`` (or
    recursive). Each shared node is measured once."""
    sizes: dict[int, int] = {}
    in_progress: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if not is_container(node):
            continue
        if done:
            total = 1 + sum(
                sizes.get(id(child), 1) if is_container(child) else 1 for child in children(node)
            )
            in_progress.discard(key)
            if total > limit:
                return None
            sizes[key] = total
            continue
        if key in sizes:
            continue
        if key in in_progress:
            return None  # a recursive structure (``&a [*a]``) never ends
        in_progress.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in children(node) if is_container(child))
    return sizes.get(id(root), 1)


def plain_tree(root: Any, scalar: Any = plain_scalar) -> Any:
    """A deep copy in plain dicts/lists/scalars (``scalar`` converts leaves).

    Call only after ``expanded_size`` said the tree is small: the copy expands aliases.
    Keys become strings unless they are int/float/bool.
    """
    if isinstance(root, Mapping):
        return {_plain_key(k): plain_tree(v, scalar) for k, v in root.items()}
    if isinstance(root, list):
        return [plain_tree(v, scalar) for v in root]
    return scalar(root)


def _plain_key(key: Any) -> Any:
    plain = plain_scalar(key)
    if isinstance(plain, (str, int, float, bool)):
        return plain
    return str(key)
