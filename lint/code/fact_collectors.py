"""Collect the code facts config rules cross-check (see ``ddplint.code_facts``): metrics
logged with or without ``sync_dist``, and encoder / ``transcribe`` calls on rank 0 only.

Collectors read Python's own ``ast`` (a C parser, line numbers included): facts are
wanted from files that no code rule needs to parse with LibCST.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ddplint.analysis.functions import ModuleAnalysis
from ddplint.analysis.lightning_monitors import LightningMonitors
from ddplint.code.ranks.rank_guard import Parents, dotted, rank_guard
from ddplint.code.syntax.python_ast import parse_python
from ddplint.code_facts import METRIC_LOGS, RANK_ZERO_CALLS, Record

RANK_ZERO_METHODS = frozenset({"transcribe", "encoder"})
#: The keywords of ``LightningModule.log_dict``; ``log`` also takes ``name``, ``value`` and
#: ``metric_attribute``. A ``.log`` call with any other keyword is some other logger's.
_LOG_DICT_KEYWORDS = frozenset(
    {
        "dictionary",
        "prog_bar",
        "logger",
        "on_step",
        "on_epoch",
        "reduce_fx",
        "enable_graph",
        "sync_dist",
        "sync_dist_group",
        "add_dataloader_idx",
        "batch_size",
        "rank_zero_only",
    }
)
_LOG_KEYWORDS = _LOG_DICT_KEYWORDS - {"dictionary"} | {"name", "value", "metric_attribute"}


@dataclass(frozen=True)
class FactCollector:
    kind: str
    #: The file is read for this collector only if it contains one of these.
    needles: tuple[str, ...]
    collect: Callable[[ast.Module, Parents], list[Record]]


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _literal_bool(expression: ast.expr | None) -> bool | None:
    """True/False for a literal, False when absent (the default), None otherwise."""
    if expression is None:
        return False
    if isinstance(expression, ast.Constant) and isinstance(expression.value, bool):
        return expression.value
    return None


def _string(expression: ast.expr | None) -> str | None:
    if isinstance(expression, ast.Constant) and isinstance(expression.value, str):
        return expression.value
    return None


def _is_text(expression: ast.expr | None) -> bool:
    return isinstance(expression, ast.JoinedStr) or _string(expression) is not None


def _lightning_signature(call: ast.Call, method: str) -> bool:
    """Whether the call fits ``LightningModule.log(name, value, ...)`` /
    ``log_dict(dictionary, ...)``: whatever the receiver is called, a logger of another
    kind (``logging``'s and loguru's ``log(level, message)``, MLflow's
    ``log_dict(data, file)``) passes other arguments."""
    allowed = _LOG_KEYWORDS if method == "log" else _LOG_DICT_KEYWORDS
    if any(k.arg is not None and k.arg not in allowed for k in call.keywords):
        return False
    if method == "log_dict":
        return not (len(call.args) > 1 and _is_text(call.args[1]))
    value = call.args[1] if len(call.args) > 1 else _keyword(call, "value")
    unpacked = any(k.arg is None for k in call.keywords)
    return (value is not None or unpacked) and not _is_text(value)


def _logged_names(call: ast.Call, method: str) -> list[str]:
    """Literal metric names of ``self.log("name", ...)`` / ``self.log_dict({...})``."""
    if not _lightning_signature(call, method):
        return []
    first = call.args[0] if call.args else None
    if method == "log":
        name = _string(first or _keyword(call, "name"))
        return [name] if name is not None else []
    first = first or _keyword(call, "dictionary")
    if isinstance(first, ast.Dict):
        return [k for k in map(_string, first.keys) if k is not None]
    if isinstance(first, ast.Call) and isinstance(first.func, ast.Name) and first.func.id == "dict":
        return [k.arg for k in first.keywords if k.arg is not None]
    return []


def metric_logs(tree: ast.Module, parents: Parents) -> list[Record]:
    """Literal metric logs, with ``sync_dist`` and, for a LightningModule's own
    ``self.log``, why the value stays rank-local (``rank_local``, the core's answer)."""
    records: list[Record] = []
    rank_local: dict[tuple[int, str], str] | None = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        method = node.func.attr
        if method not in ("log", "log_dict"):
            continue
        receiver = dotted(node.func.value) or ""
        sync = _literal_bool(_keyword(node, "sync_dist"))
        if sync is False and any(k.arg is None for k in node.keywords):
            sync = None  # ``**kwargs`` may carry it
        for name in _logged_names(node, method):
            record: Record = {"metric": name, "sync_dist": sync, "line": node.lineno}
            if rank_local is None and receiver == "self":
                monitors = LightningMonitors(ModuleAnalysis(tree))
                rank_local = {(log.line, log.key): log.reason for log in monitors.logs}
            reason = (rank_local or {}).get((node.lineno, name))
            if reason is not None:
                record["rank_local"] = reason
            records.append(record)
    return records


def rank_zero_calls(tree: ast.Module, parents: Parents) -> list[Record]:
    records: list[Record] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        if node.func.attr in RANK_ZERO_METHODS and rank_guard(node, parents) is not None:
            records.append({"call": f"{ast.unparse(node.func)}(...)", "line": node.lineno})
    return records


COLLECTORS: dict[str, FactCollector] = {
    METRIC_LOGS: FactCollector(METRIC_LOGS, ("sync_dist", ".log(", ".log_dict("), metric_logs),
    RANK_ZERO_CALLS: FactCollector(RANK_ZERO_CALLS, (".transcribe(", ".encoder("), rank_zero_calls),
}


def collect_facts(text: str, collectors: Sequence[FactCollector]) -> dict[str, list[Record]]:
    """Every collector's records for one Python file; none when it does not parse
    (the code rules report that, when any of them looks at the file)."""
    try:
        tree = parse_python(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    parents: Parents = {
        child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)
    }
    facts = {c.kind: sorted(c.collect(tree, parents), key=lambda r: r["line"]) for c in collectors}
    return {kind: records for kind, records in facts.items() if records}
