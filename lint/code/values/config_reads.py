"""Values a module reads from the config it is bound to: ``cfg.data.num_workers`` in a
``@hydra.main`` function (or on a name bound to ``OmegaConf.load``) resolved to the
YAML value and the line that sets it. Static only: the YAML is read, nothing is run.
"""

from __future__ import annotations

import ast

from ddplint.analysis.config_bindings import read_key
from ddplint.code.values.config_files import BoundFile, bound_files
from ddplint.config.config_values import BoundConfig, ConfigValue


class ConfigReads:
    """The module's config bindings, each file loaded once, when first asked."""

    def __init__(self, text: str, module_path: str, project_root: str) -> None:
        self._files = bound_files(text, module_path, project_root)
        self._loaded: dict[str, BoundConfig] = {}

    def _config(self, bound: BoundFile) -> BoundConfig:
        if bound.shown not in self._loaded:
            self._loaded[bound.shown] = BoundConfig(bound.path, bound.shown)
        return self._loaded[bound.shown]

    def value_at(self, expression: str, line: int) -> ConfigValue | None:
        """The config value the expression (its source text, as written on ``line``)
        reads; None when it reads no bound config or the config does not set the key."""
        if not self._files:
            return None
        try:
            parsed = ast.parse(expression.strip(), mode="eval").body
        except (SyntaxError, ValueError, RecursionError):
            return None
        read = read_key(parsed)
        if read is None:
            return None
        name, keys = read
        for bound in self._files:
            if bound.binding.holds(name, line):
                return self._config(bound).value(keys)
        return None
