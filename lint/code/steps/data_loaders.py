"""Data loaders by resolved name, and the names they are bound to
(``loader = DataLoader(...)``)."""

from __future__ import annotations

import libcst as cst

from ddplint.analysis.api import DATA_LOADERS
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import ImportTable, dotted_name


def is_data_loader(names: ImportTable, call: cst.Call) -> bool:
    return names.qualified_name(call.func) in DATA_LOADERS


def bound_name(index: ModuleIndex, value: cst.BaseExpression) -> str | None:
    """``x`` (or ``self.x``) when ``value`` is the whole right side of ``x = value``."""
    parent = index.parent.get(value)
    if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is value:
        targets = (
            [t.target for t in parent.targets]
            if isinstance(parent, cst.Assign)
            else [parent.target]
        )
        if len(targets) == 1:
            return dotted_name(targets[0])
    return None
