"""The cheap text tests by which some rules narrow their words' pre-filter, kept out of
the rule modules (which import LibCST) so that the catalogue can run them: each takes
a file's bytes that already hold the rule's words and says whether to parse it."""

from __future__ import annotations

import re

_FOURTH_ARGUMENT = re.compile(rb"barrier\([^()]*,[^()]*,[^()]*,")
_SECOND_ARGUMENT = re.compile(
    rb"(?:init_process_group|new_group|new_subgroups\w*|barrier|init_distributed|"
    rb"InitProcessGroupKwargs)\([^()]*,"
)
_ENUMERATE_COUNTER = re.compile(rb"\bfor\s+[(\[]?\s*([A-Za-z_]\w*)\s*,[^\n]*?\bin\s+enumerate\(")
_COMPARED = rb"\b%s\s*(?:[-+]\s*\d+\s*)?\)?\s*[=!]=(?!\s*-?\d+\b)|[=!]=\s*\(?\s*%s\b"
_MODULO = rb"\b%s\s*(?:[-+]\s*\d+\s*)?\)?\s*%%"
_ITERABLE_CLASS = re.compile(rb"\bclass\s+\w+\s*\([^)]*(?:IterableDataset|IterDataPipe)")
_PERSISTENT_TRUE = re.compile(rb"persistent_workers[\"']?\s*[=:]\s*(?:True\b|[A-Z_][A-Z0-9_]*\b)")


def barrier_timeout_spelled(raw: bytes) -> bool:
    """DDP301: ``timeout`` spelled out, or a barrier with four positional arguments."""
    return b"timeout" in raw or _FOURTH_ARGUMENT.search(raw) is not None


def timeout_spelled(raw: bytes) -> bool:
    """DDP303: ``timeout`` spelled out or a second argument to an API that takes the
    timeout positionally (``new_group(ranks, 1800)``)."""
    return b"timeout" in raw or _SECOND_ARGUMENT.search(raw) is not None


def enumerate_counter_tested(raw: bytes) -> bool:
    """DDP401: an enumerate counter compared (``i == ...``, ``... != i``, not ``i == 0``)
    next to a ``len(``, or taken modulo next to ``backward`` and an optimizer ``step(``."""
    lengths = b"len(" in raw
    steps = b"step(" in raw and b"backward" in raw
    for counter in set(_ENUMERATE_COUNTER.findall(raw)):
        name = re.escape(counter)
        if lengths and re.search(_COMPARED % (name, name), raw):
            return True
        if steps and re.search(_MODULO % name, raw):
            return True
    return False


def iterable_dataset_class(raw: bytes) -> bool:
    """DDP403: the module defines a class on an iterable-dataset base."""
    return _ITERABLE_CLASS.search(raw) is not None


def persistent_workers_true(raw: bytes) -> bool:
    """DDP404, DDP406: ``persistent_workers=True`` or ``=`` a constant's name
    (``KEEP_WORKERS``), or ``"persistent_workers": True`` in a dict display."""
    return _PERSISTENT_TRUE.search(raw) is not None
