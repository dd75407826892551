"""Answers about files outside the one being linted (the configs a project ships), kept
for one run only: the engine empties the memo as each run starts, so a long-lived
process (the language server, the watcher) reads edited files again."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

_MEMO: dict[tuple[object, ...], object] = {}


def forget() -> None:
    """Start a run: every answer is found again when next asked for."""
    _MEMO.clear()


def remembered(key: tuple[object, ...], find: Callable[[], T]) -> T:
    """This run's answer under ``key``, found by ``find()`` the first time it is asked."""
    if key not in _MEMO:
        _MEMO[key] = find()
    return _MEMO[key]  # type: ignore[return-value]
