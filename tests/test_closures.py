"""Closures of the import graph as bit sets (``ddplint.code.project.closures``): each
equals the plain walk, through cycles, and from a folder that changes some modules'
imports (taken whole only where no such module is in reach)."""

from __future__ import annotations

import random

import pytest

from ddplint.code.project.closures import Closures


def _walk(graph, start: str, folder: str) -> set[str]:
    seen, pending = {start}, [start]
    while pending:
        for module in graph(pending.pop(), folder):
            if module not in seen:
                seen.add(module)
                pending.append(module)
    return seen


def _graph(seed: int) -> tuple[dict[str, list[str]], dict[tuple[str, str], list[str]]]:
    """A random import graph with cycles, and some modules' imports from two folders."""
    rng = random.Random(seed)
    modules = [f"m{n}" for n in range(40)]
    plain = {m: rng.sample(modules, rng.randint(0, 3)) for m in modules}
    plain["m0"].append("pkg")  # a package no module holds: a leaf
    by_folder = {
        (m, folder): rng.sample(modules, rng.randint(0, 3))
        for folder in ("a", "b")
        for m in rng.sample(modules, 4)
    }
    return plain, by_folder


@pytest.mark.parametrize("seed", range(12))
def test_every_closure_equals_the_plain_walk(seed: int) -> None:
    plain, by_folder = _graph(seed)

    def imports_of(module: str, folder: str) -> list[str]:
        return by_folder.get((module, folder), plain.get(module, []))

    closures = Closures(imports_of)
    for folder in ("", "a", "b"):
        candidates = closures.bits(m for m, f in by_folder if f == folder)
        for module in plain:
            found = set(closures.names(closures.of(module, folder, candidates)))
            assert found == _walk(imports_of, module, folder), (seed, module, folder)


def test_a_cycle_shares_one_closure_and_a_candidate_out_of_reach_is_not_followed() -> None:
    graph = {"a": ["b"], "b": ["c", "a"], "c": [], "d": ["e"], "e": []}
    asked: list[tuple[str, str]] = []

    def imports_of(module: str, folder: str) -> list[str]:
        asked.append((module, folder))
        return ["e"] if (module, folder) == ("c", "f") else graph[module]

    closures = Closures(imports_of)
    assert closures.plain("a") == closures.plain("b") == closures.bits("abc")
    # from folder ``f`` only ``c`` reads its imports otherwise: ``a`` reaches it
    assert set(closures.names(closures.of("a", "f", closures.bits("c")))) == {"a", "b", "c", "e"}
    # ``d`` does not: its closure from no folder is taken whole, no import read again
    asked.clear()
    assert set(closures.names(closures.of("d", "f", closures.bits("c")))) == {"d", "e"}
    assert all(folder == "" for _, folder in asked)
