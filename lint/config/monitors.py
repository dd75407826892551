"""The metrics a config's Lightning callbacks monitor: every ``ModelCheckpoint`` /
``EarlyStopping`` mapping (LightningCLI ``class_path`` + ``init_args``, Hydra
``_target_``, anywhere in the document: ``trainer.callbacks`` or a ``callbacks`` group
file) and NeMo's ``exp_manager`` callbacks (``checkpoint_callback_params`` unless
``create_checkpoint_callback: false``; ``early_stopping_callback_params`` when
``create_early_stopping_callback: true``)."""

from __future__ import annotations

from dataclasses import dataclass

from ddplint.config.document import ConfigDocument, Entry
from ddplint.config.nemo import class_name

MONITORING_CALLBACKS = frozenset({"ModelCheckpoint", "EarlyStopping"})
_NEMO_CALLBACKS = (
    ("checkpoint_callback_params", "create_checkpoint_callback", True, "ModelCheckpoint"),
    ("early_stopping_callback_params", "create_early_stopping_callback", False, "EarlyStopping"),
)


@dataclass(frozen=True)
class MonitoredMetric:
    """The ``monitor`` entry of a callback, its metric and the callback's class."""

    entry: Entry
    metric: str
    callback: str


def monitored_metrics(doc: ConfigDocument) -> list[MonitoredMetric]:
    found: list[MonitoredMetric] = []
    for path, mapping in doc.mappings():
        target_key = "class_path" if "class_path" in mapping else "_target_"
        callback = class_name(doc.value((*path, target_key)))
        if callback not in MONITORING_CALLBACKS:
            continue
        for arguments in ((*path, "init_args"), path):
            entry = doc.entry((*arguments, "monitor"))
            if entry is not None:
                found.extend(_metric(doc, entry, callback))
                break
    for params, switch, default, callback in _NEMO_CALLBACKS:
        enabled = doc.value(("exp_manager", switch))
        if enabled is not True and not (default and enabled is not False):
            continue
        entry = doc.entry(("exp_manager", params, "monitor"))
        if entry is not None:
            found.extend(_metric(doc, entry, callback))
    return found


def _metric(doc: ConfigDocument, entry: Entry, callback: str) -> list[MonitoredMetric]:
    metric = doc.value(entry.path)
    if isinstance(metric, str) and metric:
        return [MonitoredMetric(entry, metric, callback)]
    return []
