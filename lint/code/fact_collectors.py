"""Collect the code facts config rules cross-check (see ``lint.code_facts``): metrics
logged with or without ``sync_dist``, and encoder / ``transcribe`` calls on rank 0 only."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

from lint.code.context import CodeContext
from lint.code.names import dotted_name
from lint.code.rank_guard import rank_guard
from lint.code_facts import METRIC_LOGS, RANK_ZERO_CALLS, Record

RANK_ZERO_METHODS = frozenset({"transcribe", "encoder"})
#: Receivers of ``.log`` that are a LightningModule (``self``, a callback's ``pl_module``).
LOGGING_RECEIVERS = frozenset({"self", "pl_module", "module", "model", "lightning_module"})


@dataclass(frozen=True)
class FactCollector:
    kind: str
    #: The file is parsed for this collector only if it contains one of these.
    needles: tuple[str, ...]
    collect: Callable[[CodeContext], list[Record]]


def _keyword(call: cst.Call, name: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def _literal_bool(expression: cst.BaseExpression | None) -> bool | None:
    """True/False for a literal, False when absent (the default), None otherwise."""
    if expression is None:
        return False
    if isinstance(expression, cst.Name) and expression.value in ("True", "False"):
        return expression.value == "True"
    return None


def _logged_names(call: cst.Call, method: str) -> list[str]:
    """Literal metric names of ``self.log("name", ...)`` / ``self.log_dict({...})``."""
    first = call.args[0].value if call.args and call.args[0].keyword is None else None
    if method == "log":
        first = first or _keyword(call, "name")
        if isinstance(first, cst.SimpleString):
            value = first.evaluated_value
            return [value] if isinstance(value, str) else []
        return []
    first = first or _keyword(call, "dictionary")
    if isinstance(first, cst.Dict):
        return [
            e.key.evaluated_value
            for e in first.elements
            if isinstance(e, cst.DictElement)
            and isinstance(e.key, cst.SimpleString)
            and isinstance(e.key.evaluated_value, str)
        ]
    if (
        isinstance(first, cst.Call)
        and isinstance(first.func, cst.Name)
        and first.func.value == "dict"
    ):
        return [a.keyword.value for a in first.args if a.keyword is not None]
    return []


def _line(ctx: CodeContext, node: cst.CSTNode) -> int:
    return ctx.range_of(node)[0]


def metric_logs(ctx: CodeContext) -> list[Record]:
    records: list[Record] = []
    for call in ctx.index.nodes(cst.Call):
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("log", "log_dict"):
            continue
        receiver = dotted_name(func.value) or ""
        if receiver.rsplit(".", 1)[-1] not in LOGGING_RECEIVERS:
            continue
        names = _logged_names(call, func.attr.value)
        if not names:
            continue
        sync = _literal_bool(_keyword(call, "sync_dist"))
        records.extend(
            {"metric": name, "sync_dist": sync, "line": _line(ctx, call)} for name in names
        )
    return records


def rank_zero_calls(ctx: CodeContext) -> list[Record]:
    records: list[Record] = []
    for call in ctx.index.nodes(cst.Call):
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in RANK_ZERO_METHODS:
            continue
        if rank_guard(ctx.index, call) is None:
            continue
        text = " ".join(ctx.node_text(func).split())
        records.append({"call": f"{text}(...)", "line": _line(ctx, call)})
    return records


COLLECTORS: dict[str, FactCollector] = {
    METRIC_LOGS: FactCollector(METRIC_LOGS, ("sync_dist", ".log(", ".log_dict("), metric_logs),
    RANK_ZERO_CALLS: FactCollector(RANK_ZERO_CALLS, (".transcribe(", ".encoder("), rank_zero_calls),
}
