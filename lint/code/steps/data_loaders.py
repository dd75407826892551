"""Data loaders and distributed samplers by resolved name, and the names they are
bound to (``loader = DataLoader(...)``)."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from ddplint.analysis.api import DATA_LOADERS, DISTRIBUTED_SAMPLERS
from ddplint.code.syntax.module_index import ModuleIndex
from ddplint.code.syntax.names import ImportTable, dotted_name


def is_data_loader(names: ImportTable, call: cst.Call) -> bool:
    return names.qualified_name(call.func) in DATA_LOADERS


def is_distributed_sampler(names: ImportTable, call: cst.Call) -> bool:
    return names.qualified_name(call.func) in DISTRIBUTED_SAMPLERS


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


def spread_keywords(
    call: cst.Call, bound_once: Callable[[cst.Name], cst.BaseExpression | None]
) -> dict[str, cst.BaseExpression]:
    """The keyword values ``call`` receives through ``**name`` when ``name`` is bound once
    (``bound_once``) to ``dict(key=...)`` or a display with literal string keys:
    ``common = dict(num_workers=w, persistent_workers=True); DataLoader(ds, **common)``."""
    found: dict[str, cst.BaseExpression] = {}
    for arg in call.args:
        if arg.star != "**" or not isinstance(arg.value, cst.Name):
            continue
        value = bound_once(arg.value)
        if isinstance(value, cst.Call) and dotted_name(value.func) == "dict":
            found.update((a.keyword.value, a.value) for a in value.args if a.keyword is not None)
        elif isinstance(value, cst.Dict):
            for element in value.elements:
                key = element.key if isinstance(element, cst.DictElement) else None
                text = key.evaluated_value if isinstance(key, cst.SimpleString) else None
                if isinstance(text, str):
                    found[text] = element.value
    return found
