"""The rule registry: every ``Rule`` subclass defined in ``rules/code`` and ``rules/config``.

Rules are found by walking those packages, so adding a rule is adding a module.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from ddplint.rule import CodeRule, ConfigRule, Rule, SuppressionRule

_PACKAGES = ("ddplint.rules.code", "ddplint.rules.config")


@lru_cache(maxsize=1)
def all_rules() -> dict[str, type[Rule]]:
    """Every rule, keyed by code, in code order. Raises if two rules share a code."""
    found: dict[str, type[Rule]] = {}
    for package_name in _PACKAGES:
        package = importlib.import_module(package_name)
        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
            module = importlib.import_module(f"{package_name}.{info.name}")
            for obj in vars(module).values():
                if (
                    isinstance(obj, type)
                    and issubclass(obj, (CodeRule, ConfigRule, SuppressionRule))
                    and obj.__module__ == module.__name__
                    and hasattr(obj, "code")
                ):
                    if obj.code in found and found[obj.code] is not obj:
                        raise RuntimeError(f"rule code {obj.code} is defined twice")
                    found[obj.code] = obj
    return dict(sorted(found.items()))
