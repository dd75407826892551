"""The rule registry: every ``Rule`` subclass defined in ``rules/code`` and ``rules/config``.

Rules are found by walking those packages, so adding a rule is adding a module (named
``ddpNNN_*.py`` after its code, so one rule can be imported alone: ``rule_class``).
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache, lru_cache
from types import ModuleType

from ddplint.rule import CodeRule, ConfigRule, Rule, SuppressionRule

_PACKAGES = ("ddplint.rules.code", "ddplint.rules.config")


@lru_cache(maxsize=1)
def all_rules() -> dict[str, type[Rule]]:
    """Every rule, keyed by code, in code order. Raises if two rules share a code."""
    found: dict[str, type[Rule]] = {}
    for module_name in _rule_modules():
        for code, rule in _rules_in(importlib.import_module(module_name)).items():
            if code in found and found[code] is not rule:
                raise RuntimeError(f"rule code {code} is defined twice")
            found[code] = rule
    return dict(sorted(found.items()))


@cache
def rule_class(code: str) -> type[Rule]:
    """The rule ``code``, importing only the module named after it. Raises KeyError for
    a code no module defines."""
    prefix = code.lower() + "_"
    for module_name in _rule_modules():
        if module_name.rpartition(".")[2].startswith(prefix):
            return _rules_in(importlib.import_module(module_name))[code]
    raise KeyError(code)


@lru_cache(maxsize=1)
def _rule_modules() -> tuple[str, ...]:
    """The rule modules' full names, package by package, each in name order."""
    names: list[str] = []
    for package_name in _PACKAGES:
        package = importlib.import_module(package_name)
        infos = sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name)
        names += [f"{package_name}.{info.name}" for info in infos]
    return tuple(names)


def _rules_in(module: ModuleType) -> dict[str, type[Rule]]:
    """The rules a module defines (not those it imports), by code."""
    return {
        obj.code: obj
        for obj in vars(module).values()
        if isinstance(obj, type)
        and issubclass(obj, (CodeRule, ConfigRule, SuppressionRule))
        and obj.__module__ == module.__name__
        and hasattr(obj, "code")
    }
